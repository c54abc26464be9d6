"""A training forward's saved activations that its backward frees together.

AOTAutograd splits a training step's joint graph into a forward graph and a
backward graph (torch/_functorch/partitioners.py,
min_cut_rematerialization_partition) before Inductor compiles either: the
forward returns the user's outputs, then the activations it saves, and the
backward takes each saved activation as a graph input of the same name,
which Inductor's backward code frees (`del`) after the last kernel that
reads it. Saved activations whose last reader in the backward's FX graph is
one node are read last by one kernel, so the backward frees them together,
with nothing allocated between their frees: one pool of the forward may
hold all of them at no cost in the backward (a pool is released with its
last buffer). The forward's request names them as one release group
(PlanMemoryRequest.release_groups), and the service may then put them in
one pool where that keeps the forward's predicted peak.

    backward FX:   ... convolution_backward(relu_3, primals_9, ...)  <- last
                   reader of relu_3 and of getitem_7: one release group

The backward's FX order is the one Inductor schedules from; Inductor may
fuse the reader with its neighbours or move kernels, but the members of
one group stay inputs of one kernel, its last reader.

install() wraps Inductor's partition (torch._inductor.compile_fx.
min_cut_rematerialization_partition, as Inductor calls it for training
graphs) so that each partition notes, on the forward graph module it
returns, the backward index of each saved activation's last reader
(saved_last_uses); the forward's planning reads it back (last_uses_of).
Nothing here imports torch at module level: the functions take graph
modules duck-typed (nodes with .op, .name, .users, .meta), so that tests
run without torch.
"""

import collections
import threading

# The key the last uses are noted under, on the forward GraphModule's meta.
META_KEY = "memplan_saved_last_uses"

# The last partition of each thread: (forward output names, last uses),
# for a forward whose GraphModule is not the one the partition returned
# (Inductor may lower a copy of it).
_last = threading.local()


def _fake_storage(node):
    """A key for the storage of node's value (its FakeTensor's, so that
    views of one tensor share it), or None."""
    value = getattr(node, "meta", {}).get("val")
    storage = getattr(value, "untyped_storage", None)
    if storage is None:
        return None
    try:
        from torch.multiprocessing.reductions import StorageWeakRef
        return StorageWeakRef(storage())
    except Exception:  # a value without a storage (a symbolic size)
        return None


def saved_last_uses(backward_module, storage_of=None):
    """Per saved activation of a backward graph module (every placeholder
    but the tangents), the index in its FX graph of the last node reading
    its storage (through views: nodes whose `storage_of` is the same key;
    None: their FakeTensors' storages), or None where the backward returns
    it (its storage outlives the graph) or never reads it. Returns
    {placeholder name: index or None}."""
    storage_of = storage_of or _fake_storage
    nodes = list(backward_module.graph.nodes)
    order = {node: i for i, node in enumerate(nodes)}
    aliases = collections.defaultdict(list)
    keys = {}
    for node in nodes:
        key = storage_of(node)
        keys[node] = key
        if key is not None:
            aliases[key].append(node)
    last_uses = {}
    for node in nodes:
        if node.op != "placeholder" or node.name.startswith("tangents"):
            continue
        key = keys[node]
        views = aliases[key] if key is not None else [node]
        last, returned = None, False
        for view in views:
            for user in view.users:
                if user.op == "output":
                    returned = True
                elif last is None or order[user] > last:
                    last = order[user]
        last_uses[node.name] = None if returned else last
    return last_uses


def forward_output_names(forward_module):
    """The names of a forward graph module's outputs, in order ("" for an
    output that is no node)."""
    output = next(node for node in forward_module.graph.nodes
                  if node.op == "output")
    args = output.args[0] if isinstance(output.args[0], (list, tuple)) \
        else (output.args[0],)
    return [getattr(arg, "name", "") or "" for arg in args]


def note_partition(forward_module, backward_module):
    """Notes saved_last_uses(backward_module) on forward_module's meta and
    as this thread's last partition. Never raises: a graph it cannot read
    is noted as having none."""
    try:
        last_uses = saved_last_uses(backward_module)
        names = forward_output_names(forward_module)
    except Exception:  # an unusual graph: no release groups for it
        last_uses, names = {}, None
    meta = getattr(forward_module, "meta", None)
    if isinstance(meta, dict):
        meta[META_KEY] = last_uses
    _last.partition = (names, last_uses)


def last_uses_of(forward_module):
    """The last uses note_partition noted for a forward graph module being
    compiled: from its meta, else from this thread's last partition where
    that partition's forward had the same output names (Inductor lowering
    a copy of it); {} where none was noted."""
    meta = getattr(forward_module, "meta", None)
    if isinstance(meta, dict) and META_KEY in meta:
        return meta[META_KEY]
    names, last_uses = getattr(_last, "partition", (None, {}))
    try:
        if names is not None and names == forward_output_names(
                forward_module):
            return last_uses
    except Exception:
        pass
    return {}


def release_groups(output_args, output_buffers, last_uses, outputs):
    """The release groups of a training forward's request.

    output_args: per FX output, (name, is a placeholder); output_buffers:
    per output in the same order, the buffer Inductor returns for it (None
    where unknown); last_uses: saved_last_uses of its backward; outputs:
    the names the request may name (its output names). A buffer's key is
    its FX outputs' last use in the backward (the latest, where several
    outputs are views of it), or none where one of them is a graph input,
    a user output (not saved), returned by the backward or never read.
    Returns the lists of buffer names of equal key, two or more each, in
    order of the key, each in order of the outputs; [] where the lengths
    differ."""
    if len(output_args) != len(output_buffers):
        return []
    key_of = {}
    for (name, placeholder), buffer in zip(output_args, output_buffers):
        if not buffer or buffer not in outputs:
            continue
        key = None if placeholder else last_uses.get(name)
        if buffer in key_of:
            previous = key_of[buffer]
            key = None if previous is None or key is None else \
                max(previous, key)
        key_of[buffer] = key
    members = collections.defaultdict(list)
    for buffer, key in key_of.items():
        if key is not None:
            members[key].append(buffer)
    return [members[key] for key in sorted(members)
            if len(members[key]) > 1]


def wrap_partition(partition):
    """`partition` (Inductor's min_cut_rematerialization_partition) noting
    each forward's saved activations' last uses (note_partition)."""
    def partition_noting_last_uses(*args, **kwargs):
        forward_module, backward_module = partition(*args, **kwargs)
        note_partition(forward_module, backward_module)
        return forward_module, backward_module
    partition_noting_last_uses.__wrapped__ = partition
    return partition_noting_last_uses
