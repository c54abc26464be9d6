"""A training forward's saved activations that its backward frees together.

AOTAutograd splits a training step's joint graph into a forward graph and a
backward graph (torch/_functorch/partitioners.py,
min_cut_rematerialization_partition) before Inductor compiles either: the
forward returns the user's outputs, then the activations it saves, and the
backward takes each saved activation as a graph input of the same name,
which Inductor's backward code frees (`del`) after the last kernel that
reads it. A pool of the forward is released with its last buffer, so
saved activations sharing one pool are held until the last of them is
freed: at no cost where the backward frees them together.

Which FX nodes become one kernel is decided only when Inductor compiles the
backward, after the forward's plan is made. Inductor fuses the pointwise
and reduction nodes between two extern kernels (convolution, matmul,
attention: each allocates its output on its own), so the saved activations
read last between two extern nodes are freed close together: a batch
norm's input, mean and rstd are read last by different FX nodes and freed
after one fused kernel. Such saved activations form one release group
(PlanMemoryRequest.release_groups) as long as holding the earlier ones to
the last one's free keeps the backward's memory, simulated in FX order
(each node's value allocated at the node and freed after its storage's
last reader, saved activations from the graph's entry), at or below its
simulated peak; a group that would raise it is split where it would
(free_points). A saved activation whose storage a kernel may take over in
place (Inductor writes a same-size output into a donated saved activation
at its last read: `buf14 = relu_119; del relu_119  # reuse`) is freed only
with its taker, and is grouped by that free (in_place_takers): a pool
holding it stays until then. The service may then put a group in one pool
where that keeps the forward's predicted peak.

    backward FX:   convolution_backward(...)          <- extern: segment 3
                   sub(conv_3, mean_3); mul(..., rstd_3); sum(...)
                   ... last readers of conv_3, mean_3, rstd_3
                   convolution_backward(...)          <- segment 4
    release group: conv_3, mean_3, rstd_3 (if the simulation allows)

install() wraps Inductor's partition (torch._inductor.compile_fx.
min_cut_rematerialization_partition, as Inductor calls it for training
graphs) so that each partition notes, on the forward graph module it
returns, each saved activation's free point (free_points); the forward's
planning reads it back (free_points_of). Nothing here imports torch at
module level: the functions take graph modules duck-typed (nodes with .op,
.name, .target, .users, .meta), so that tests run without torch.
"""

import collections
import threading
import warnings

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


# The aten ops Inductor runs as extern kernels (cuBLAS, cuDNN, attention
# libraries): each allocates its own output, so frees before and after one
# are apart; the nodes between two of them are what Inductor fuses.
EXTERN_OPS = frozenset((
    "convolution", "convolution_backward", "mm", "addmm", "bmm", "baddbmm",
    "_int_mm", "_scaled_mm",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_cudnn_attention_backward",
    "_efficient_attention_forward", "_efficient_attention_backward",
    "_flash_attention_forward", "_flash_attention_backward"))


def _fake_nbytes(node):
    """The bytes of the storage of node's value (its FakeTensor's), 0 for a
    value that is no tensor, or None where the size is symbolic."""
    value = getattr(node, "meta", {}).get("val")
    storage = getattr(value, "untyped_storage", None)
    if storage is None:
        return 0
    try:
        size = storage().nbytes()
    except Exception:  # a value without a storage
        return None
    # A SymInt (dynamic shapes) is symbolic: never int() it (a guard).
    return size if isinstance(size, int) else None


def _fake_dtype(node):
    """The dtype of node's value (its FakeTensor's), or None."""
    return getattr(getattr(node, "meta", {}).get("val"), "dtype", None)


def is_extern(node):
    """Whether an FX node is an aten op Inductor runs as an extern kernel
    (EXTERN_OPS; its target prints as aten.<op>.<overload>)."""
    if getattr(node, "op", None) != "call_function":
        return False
    parts = str(getattr(node, "target", "")).split(".")
    return len(parts) >= 2 and parts[0] == "aten" and parts[1] in EXTERN_OPS


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


def free_points(backward_module, last_uses, storage_of=None, size_of=None,
                unpooled=(), dtype_of=None):
    """Per saved activation of saved_last_uses(backward_module) (`last_uses`:
    {name: FX index or None}), the FX index at which its release group is
    freed: the latest free of its group's members. A member is freed after
    its storage's last reader, or, where a kernel may take its storage over
    in place (in_place_takers), after the last reader of what took it over.
    A group is a run of saved activations, in order of those frees, between
    the same two extern nodes (is_extern: an extern node opens a segment
    that holds it), cut before any member whose joining would raise the
    backward's simulated memory above its simulated peak. The simulation
    walks the FX order: a storage (`storage_of`'s key, views share it;
    default: FakeTensor storages) is allocated at its first node (saved
    activations and tangents at the entry) with `size_of(node)` bytes
    (default: the FakeTensor's; None means symbolic) and freed after its
    last reader (never where the graph returns it); a storage taken over in
    place allocates nothing, and frees its taker's bytes after the taker's
    last reader. A group's members are held from their own free to the
    group's, but those named in `unpooled` (saved activations the forward
    allocates outside its pools: extern_outputs), whose storage no pool
    holds. `dtype_of(node)`: the value's dtype or None (default: the
    FakeTensor's). Returns {name: free point or None}; `last_uses` itself
    (groups of one last reader only) where a size is symbolic, a saved
    activation has no storage or a node is unreadable.
    """
    storage_of = storage_of or _fake_storage
    size_of = size_of or _fake_nbytes
    dtype_of = dtype_of or _fake_dtype
    nodes = list(backward_module.graph.nodes)
    try:
        storages, key_of = _simulated_storages(nodes, storage_of, size_of)
        segment, opened = [], 0
        for node in nodes:
            opened += is_extern(node)
            segment.append(opened)
        if storages is not None:
            takers = in_place_takers(
                nodes, storages, key_of, segment, dtype_of,
                [key_of.get(name) for name, use in last_uses.items()
                 if use is not None])
            storages = _taken_over(storages, takers)
    except Exception as error:  # an unusual graph: one last reader's groups
        warnings.warn(f"memplan: release groups of one last reader only: "
                      f"the backward's FX graph could not be simulated "
                      f"({type(error).__name__}: {error})")
        storages = None
    if storages is None or any(key_of.get(name) not in storages
                               for name in last_uses):
        return dict(last_uses)
    live = _live_bytes(len(nodes), storages.values())
    peak = max(live, default=0)
    frees = {name: None if use is None else storages[key_of[name]][1]
             for name, use in last_uses.items()}
    points, group, held = {}, [], {}
    for use, name in sorted((use, name) for name, use in frees.items()
                            if use is not None):
        if group:
            last = group[-1][0]
            holding = sum(held.values())
            if segment[use] != segment[last] or any(
                    live[index] + holding > peak
                    for index in range(last + 1, use + 1)):
                points.update((member, last) for _, member in group)
                group, held = [], {}
        group.append((use, name))
        if name not in unpooled:
            held[key_of[name]] = storages[key_of[name]][2]
    if group:
        points.update((member, group[-1][0]) for _, member in group)
    points.update((name, None) for name, use in frees.items()
                  if use is None)
    return points


def in_place_takers(nodes, storages, key_of, segment, dtype_of, keys):
    """{storage key: the key of the storage that may take it over in place},
    for the storages `keys` names and, in turn, their takers': Inductor
    lets a kernel write its output into a buffer it reads for the last time
    where the two have the same bytes and dtype (a donated saved
    activation too: `buf14 = relu_119; del relu_119  # reuse`), so the
    storage lives on, as the taker, after its last reader. The taker of a
    storage is the first node, at or after its last reader and in the same
    segment (no extern node between: the nodes Inductor may fuse into the
    last reader's kernel), that the last reader reaches through its users
    and whose value is a new storage of the same bytes and dtype (an
    extern node takes over nothing). `storages`, `key_of`: as
    _simulated_storages returns them; `segment`: per FX index, the number
    of extern nodes at or before it."""
    first_of = {storage[0]: key for key, storage in storages.items()}
    order = {node: index for index, node in enumerate(nodes)}
    takers, pending, seen = {}, [key for key in keys if key is not None], set()
    while pending:
        key = pending.pop()
        if key in seen or key not in storages:
            continue
        seen.add(key)
        _, last, size = storages[key]
        if last is None or is_extern(nodes[last]):
            continue
        dtype = dtype_of(nodes[storages[key][0]])
        taker = _first_taker(nodes, order, last, segment, size, dtype,
                             storages, first_of, key_of, dtype_of)
        if taker is not None and taker != key:
            takers[key] = taker
            pending.append(taker)
    return takers


def _first_taker(nodes, order, last, segment, size, dtype, storages,
                 first_of, key_of, dtype_of):
    """The key of in_place_takers' taker of a storage of `size` bytes and
    `dtype` read last by node `last` (`order`: each node's FX index), or
    None."""
    reached, frontier, best = {last}, [nodes[last]], None
    while frontier:
        node = frontier.pop()
        index = order[node]
        key = key_of.get(node.name)
        if (node.op == "call_function" and not is_extern(node)
                and first_of.get(index) == key and key is not None
                and storages[key][2] == size
                and _same_dtype(dtype, dtype_of(node))
                and (best is None or index < best)):
            best = index
        for user in node.users:
            position = order.get(user)
            if position is None or position in reached or \
                    segment[position] != segment[last] or \
                    user.op == "output":
                continue
            reached.add(position)
            frontier.append(user)
    return None if best is None else key_of[nodes[best].name]


def _same_dtype(a, b):
    return a is None or b is None or a == b


def _taken_over(storages, takers):
    """storages with each storage taken over in place living on to its
    takers' last reader, and the takers' own allocations dropped."""
    merged = dict(storages)
    taken = set(takers.values())
    for key in takers:
        if key not in merged or key in taken:
            continue  # a chain is followed from its head only
        first, last, size = merged[key]
        taker = takers[key]
        steps = 0
        while taker is not None and steps < len(storages):
            steps += 1
            _, taker_last, _ = merged.pop(taker, (None, last, 0))
            last = None if last is None or taker_last is None else \
                max(last, taker_last)
            taker = takers.get(taker)
        merged[key] = (first, last, size)
    return merged


def _simulated_storages(nodes, storage_of, size_of):
    """({storage key: (first node index, last reader index or None where the
    graph returns it, bytes)}, {node name: storage key or None}) of
    free_points' simulation; (None, None) where a size is symbolic."""
    order = {node: index for index, node in enumerate(nodes)}
    storages, key_of = {}, {}
    for index, node in enumerate(nodes):
        key = None if node.op == "output" else storage_of(node)
        key_of[node.name] = key
        if key is None:
            continue
        if key not in storages:
            size = size_of(node)
            if size is None:
                return None, None
            storages[key] = [index, index, size]
        entry = storages[key]
        for user in node.users:
            if user.op == "output" or entry[1] is None:
                entry[1] = None
            else:
                entry[1] = max(entry[1], order[user])
    return ({key: tuple(entry) for key, entry in storages.items()},
            key_of)


def _live_bytes(count, storages):
    """Per FX index, the bytes of the simulated storages live at it: from
    their first node to their last reader, both included."""
    delta = [0] * (count + 1)
    for first, last, size in storages:
        delta[first] += size
        if last is not None:
            delta[last + 1] -= size
    live, running = [], 0
    for index in range(count):
        running += delta[index]
        live.append(running)
    return live


def extern_outputs(forward_module):
    """The names of a forward graph module's nodes whose value an extern
    kernel allocates (is_extern nodes and the getitem nodes that take their
    results apart): Inductor's code allocates them outside any pool."""
    names = set()
    for node in forward_module.graph.nodes:
        source = node
        target = getattr(node, "target", "")
        if getattr(target, "__name__", target) == "getitem" and \
                getattr(node, "args", None):
            source = node.args[0]
        if is_extern(source):
            names.add(node.name)
    return names


def forward_output_names(forward_module):
    """The names of a forward graph module's outputs, in order ("" for an
    output that is no node)."""
    output = next(node for node in forward_module.graph.nodes
                  if node.op == "output")
    args = output.args[0] if isinstance(output.args[0], (list, tuple)) \
        else (output.args[0],)
    return [getattr(arg, "name", "") or "" for arg in args]


def note_partition(forward_module, backward_module):
    """Notes the free points of backward_module's saved activations
    (free_points of saved_last_uses) on forward_module's meta and as this
    thread's last partition. Never raises: a graph it cannot read is noted
    as having none."""
    try:
        points = free_points(backward_module,
                             saved_last_uses(backward_module),
                             unpooled=extern_outputs(forward_module))
        names = forward_output_names(forward_module)
    except Exception:  # an unusual graph: no release groups for it
        points, names = {}, None
    meta = getattr(forward_module, "meta", None)
    if isinstance(meta, dict):
        meta[META_KEY] = points
    _last.partition = (names, points)


def free_points_of(forward_module):
    """The free points note_partition noted for a forward graph module
    being compiled: from its meta, else from this thread's last partition
    where that partition's forward had the same output names (Inductor
    lowering a copy of it); {} where none was noted."""
    meta = getattr(forward_module, "meta", None)
    if isinstance(meta, dict) and META_KEY in meta:
        return meta[META_KEY]
    names, points = getattr(_last, "partition", (None, {}))
    try:
        if names is not None and names == forward_output_names(
                forward_module):
            return points
    except Exception:
        pass
    return {}


def release_groups(output_args, output_buffers, points, outputs):
    """The release groups of a training forward's request.

    output_args: per FX output, (name, is a placeholder); output_buffers:
    per output in the same order, the buffer Inductor returns for it (None
    where unknown); points: free_points of its backward (or its
    saved_last_uses: groups of one last reader); outputs: the names the
    request may name (its output names). A buffer's key is its FX outputs'
    free point in the backward (the latest, where several outputs are
    views of it), or none where one of them is a graph input,
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
        key = None if placeholder else points.get(name)
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
    each forward's saved activations' free points (note_partition)."""
    def partition_noting_free_points(*args, **kwargs):
        forward_module, backward_module = partition(*args, **kwargs)
        note_partition(forward_module, backward_module)
        return forward_module, backward_module
    partition_noting_free_points.__wrapped__ = partition
    return partition_noting_free_points
