"""memplan.inductor: Inductor's memory planner, with its allocation from
memplan-server.

    import torch
    import memplan.inductor

    torch._inductor.config.memory_planning = True
    memplan.inductor.install("127.0.0.1:50051", strategy="auto")
    compiled = torch.compile(model)   # its wrapper's pools are the service's
    print(memplan.inductor.stats())

With torch._inductor.config.memory_planning on, Inductor plans the memory of
each inference graph's wrapper with torch/_inductor/codegen/memory_planning.py
(torch 2.11): MemoryPlanner.plan(lines) runs drop_removed_buffers,
convert_to_pool_lines, compute_live_ranges, allocate_groups and
mark_first_last_usage. install() replaces only the allocation step,
allocate_groups: Inductor still forms its buffer groups and live ranges, and
still writes the pool create / alloc_from_pool / free lines itself, but the
pools and offsets it writes are the service's:

  1. Each buffer group gets Inductor's own Allocation (group.make_allocation:
     size hint and symbolic size in bytes).
  2. The hook sends the wrapper's lines as `events` (ALLOCATE, FREE_IF_NOT_
     REUSED, REUSE, PLANNING_NO_OP, OTHER, ENTER_/EXIT_SUBGRAPH, and the
     memory outside the plan: EXTERN_ALLOCATE, MULTI_OUTPUT, FREE_INPUT; with
     V.graph's output names and removed buffers), so the service derives the
     groups and live ranges itself and predicts the whole graph's peak; with
     send="buffers", it sends Inductor's groups as `buffers` with their live
     ranges instead.
  3. From the response it builds Inductor's AllocationPool objects, one per
     service pool, named as the service named them (pool0, ...), sized by
     the service, each Allocation finalized at the service's offset; Inductor's
     codegen then emits exactly those pools and offsets (the hook's own
     AllocFromPoolLine / DeallocFromPoolLine codegen writes them: see "Pools
     freed where the plan frees them").
  4. With events, it checks that Inductor's mark_first_last_usage creates and
     frees each pool at the events the service named (first_allocation_event,
     last_free_event); stats() reports the outcome.
  5. Where the response names segment reservations (an inference graph's
     request asks for them: PlanOptions.reserve_segments), one allocation
     of each reservation's bytes, deleted at once, runs before any line
     that touches memory: the first line inside the graph's first device
     guard of that device, as the wrapper allocates (with_reservations).
  6. A training graph planned with install(training=True) runs in the
     hook's private pool of the caching allocator (a torch.cuda.MemPool per
     device, entered by the graph's first line and left by its last:
     with_private_pool) where install's private_pool says so ("auto", the
     default: a forward whose caller's outputs are each at most 1 MiB, and
     its backward), and a training forward's request then asks for a
     reservation of its peak there (PlanOptions.private_pool), whose size
     the forward's code reads at run time (reservation_bytes): its
     backward's plan may size it for the whole step
     (PlanMemoryResponse.forward_segment_reservations).

When the service cannot be reached, answers with an error, or gives an
answer the hook cannot use (groups that differ from Inductor's; symbolic
buffer sizes under dynamic shapes without symbolic pool sizes and offsets in
the response), the hook warns (MemplanFallbackWarning) and runs Inductor's
own allocate_groups for that graph.

The torch-free pieces (events_from_lines, buffers_from_groups,
read_placement, parse_symbolic) take Inductor's objects by duck typing, so
they can be tested without torch.
"""

import contextlib
import functools
import logging
import re
import threading
import warnings

from memplan.client import MemplanClient, pb
from memplan.client import pool_mode as pool_mode_value
from memplan.client import strategy as strategy_value
from memplan import release_groups

__all__ = [
    "install", "uninstall", "stats", "reset_stats", "MemplanFallbackWarning",
    "enter_private_pool", "release_private_pools", "with_private_pool",
    "caller_output_bytes",
    "events_from_lines", "buffers_from_groups", "read_placement",
    "parse_symbolic", "line_kind",
]

log = logging.getLogger(__name__)


class MemplanFallbackWarning(UserWarning):
    """Inductor planned a graph's memory itself: the service could not."""


class HookError(Exception):
    """The service's answer cannot be used for this graph."""


_state = None          # _Installed while install() is in effect
_records = []          # one dict per planned graph, see stats()
_records_lock = threading.Lock()


# --- Inductor's lines as events --------------------------------------------

# Wrapper line classes (torch/_inductor/codegen/wrapper.py) by name, as
# Inductor's isinstance checks see them: a subclass counts as its base.
_LINE_KINDS = (
    ("AllocateLine", pb.EVENT_KIND_ALLOCATE),
    ("FreeIfNotReusedLine", pb.EVENT_KIND_FREE_IF_NOT_REUSED),
    ("ReuseLine", pb.EVENT_KIND_REUSE),
    ("EnterSubgraphLine", pb.EVENT_KIND_ENTER_SUBGRAPH),
    ("ExitSubgraphLine", pb.EVENT_KIND_EXIT_SUBGRAPH),
    # Lines that touch memory outside the plan (none is a MemoryPlanningLine:
    # each separates timesteps, as a kernel call does).
    ("ExternKernelAllocLine", pb.EVENT_KIND_EXTERN_ALLOCATE),
    ("MultiOutputLine", pb.EVENT_KIND_MULTI_OUTPUT),
    ("FreeLine", pb.EVENT_KIND_FREE_INPUT),
)

_UNPLANNED_KINDS = (pb.EVENT_KIND_EXTERN_ALLOCATE, pb.EVENT_KIND_MULTI_OUTPUT,
                    pb.EVENT_KIND_FREE_INPUT)


def line_kind(line):
    """Returns the pb.EventKind of one wrapper line: ALLOCATE,
    FREE_IF_NOT_REUSED and REUSE for Inductor's lines of those names;
    PLANNING_NO_OP for any other MemoryPlanningLine (ReinterpretLine,
    NullLine), which plans nothing but counts in its timestep's run of
    memory-planning lines; EXTERN_ALLOCATE, MULTI_OUTPUT and FREE_INPUT for
    an extern kernel's allocation, a multi-output binding and a graph
    input's free; OTHER for any other line (a kernel call, a plain string),
    which separates runs."""
    class_names = {cls.__name__ for cls in type(line).__mro__}
    for class_name, kind in _LINE_KINDS:
        if class_name in class_names:
            return kind
    if "MemoryPlanningLine" in class_names:
        return pb.EVENT_KIND_PLANNING_NO_OP
    return pb.EVENT_KIND_OTHER


def events_from_lines(lines, allocations, removed_buffers=(), unplanned=None):
    """Returns one pb.Event per wrapper line, in order (events[i] is
    lines[i]; kinds as line_kind).

    allocations: buffer name -> Inductor Allocation of the group it allocates
    (size_hint bytes, symbolic_size, device, node.get_dtype(),
    earliest_available); an ALLOCATE line of a buffer in removed_buffers may
    be missing from it (its size is sent as 0: the service drops the line).
    unplanned: what the graph allocates and frees outside the plan, for the
    service's whole-graph peaks (an object with extern_allocation(line),
    multi_output(line) and input_free(line) returning the event's fields as
    a dict, or None for a line it cannot describe; free_description(line),
    the fields of a FREE_IF_NOT_REUSED of a buffer no ALLOCATE names, which
    Inductor's reuse pass may hand on, or None; reuse_input(line), for a
    REUSE of a graph input's storage in place, the bytes and device it
    returns once freed, or None; and scheduler_node(line)); None: those
    lines are sent as OTHER.
    """
    events = []
    for line in lines:
        kind = line_kind(line)
        if kind in _UNPLANNED_KINDS:
            events.append(_unplanned_event(kind, line, unplanned))
            continue
        event = pb.Event(kind=kind)
        if kind == pb.EVENT_KIND_ALLOCATE:
            name = line.node.get_name()
            event.name = name
            allocation = allocations.get(name)
            if allocation is None:
                if name not in removed_buffers:
                    raise HookError(f"AllocateLine of {name} has no buffer "
                                    f"group")
                event.size_bytes = 0
            else:
                _describe_allocation(event, allocation)
        elif kind == pb.EVENT_KIND_FREE_IF_NOT_REUSED:
            name = line.node.get_name()
            event.name = name
            if unplanned is not None and name not in allocations:
                description = unplanned.free_description(line)
                if description:
                    event.MergeFrom(pb.Event(**description))
        elif kind == pb.EVENT_KIND_REUSE:
            event.name = line.node.get_name()
            event.reused_as = line.reused_as.get_name()
            if unplanned is not None:
                taken = unplanned.reuse_input(line)
                if taken:
                    event.MergeFrom(pb.Event(**taken))
        if unplanned is not None and kind in (
                pb.EVENT_KIND_ALLOCATE, pb.EVENT_KIND_FREE_IF_NOT_REUSED):
            node = unplanned.scheduler_node(line)
            if node is not None:
                event.scheduler_node = node
        events.append(event)
    return events


def _unplanned_event(kind, line, unplanned):
    """The event of an extern allocation, multi-output binding or input free:
    OTHER when `unplanned` cannot describe it."""
    describe = {pb.EVENT_KIND_EXTERN_ALLOCATE: "extern_allocation",
                pb.EVENT_KIND_MULTI_OUTPUT: "multi_output",
                pb.EVENT_KIND_FREE_INPUT: "input_free"}[kind]
    fields = None if unplanned is None else getattr(unplanned, describe)(line)
    if fields is None:
        return pb.Event(kind=pb.EVENT_KIND_OTHER)
    return pb.Event(kind=kind, **fields)


def _describe_allocation(message, allocation):
    """Fills size_bytes, symbolic_size, device, dtype and
    size_is_data_dependent of a pb.Event or pb.Buffer from an Inductor
    Allocation."""
    message.size_bytes = int(allocation.size_hint)
    message.symbolic_size = str(allocation.symbolic_size)
    message.device = str(allocation.device)
    message.dtype = str(allocation.node.get_dtype())
    # Inductor sets earliest_available for sizes with unbacked symbols.
    message.size_is_data_dependent = (
        getattr(allocation, "earliest_available", None) is not None)


def buffers_from_groups(groups):
    """Returns one pb.Buffer per Inductor BufferGroup, in order: its names,
    its allocation's size and labels, its live range (Inductor's LiveRange
    numbers, read as the half-open [begin, end)) and is_output. Every group
    must have its allocation (group.make_allocation())."""
    buffers = []
    for group in groups:
        buffer = pb.Buffer(
            names=list(group.names), is_output=bool(group.is_output),
            live_range=pb.LiveRange(begin=int(group.live_range.begin),
                                    end=int(group.live_range.end)))
        _describe_allocation(buffer, group.allocation)
        buffers.append(buffer)
    return buffers


# --- Memory outside the plan (torch) ---------------------------------------

# Graph-input names of a backward graph whose storage the caller keeps:
# parameters and user inputs (primals_N) and incoming gradients (tangents_N),
# but for the primals its forward graph saved as copies (saved_input_copies).
# The other inputs are the saved activations, which AOTAutograd hands over
# (steal_args), so the graph's `del` returns their storage.
_HELD_INPUT_PREFIXES = ("primals_", "tangents_")


class ForwardOutputs:
    """What a training forward graph's code returns, as far as its backward
    graph's frees depend on it (Inductor compiles the backward later, from
    fake inputs that do not show it), by the outputs' FX names, which are
    the backward's input names:

    copies: saved_input_copies; pool_of: output name -> index of the pool
    the plan took its buffer from; pool_bytes: pool index -> (bytes, device)
    (saved_output_pools). A pool's storage returns to the allocator when
    its last view dies: at the backward's free of the last of its outputs,
    or never in the backward where an output the backward does not get
    (a user output) is one of them.

    request: the PlanMemoryRequest the forward sent (events; None where it
    sent none); plan: the service's PlanMemoryResponse to it, pools,
    assignments and segment reservations only; buffer_of: output FX name -> the buffer Inductor
    returns for it (_forward_output_buffers). Its backward's request
    carries them (ForwardGraph), so the service starts the backward's peaks
    from the allocator state the forward leaves."""

    def __init__(self, copies=()):
        self.copies = set(copies)
        self.pool_of = {}
        self.pool_bytes = {}
        self.request = None
        self.plan = None
        self.buffer_of = {}
        # Whether the forward runs in the hook's private pool (install's
        # private_pool "auto": its backward follows it).
        self.private = False
        # A private-pool forward's segment reservations read their size at
        # run time under this key (reservation_bytes; the forward's
        # graph_hash), which its backward's plan may enlarge for the step.
        self.reservation_key = None
        # Its stats() record, whose predicted peak a step reservation
        # raises.
        self.stats_record = None

    def pool_members(self, pool):
        return {name for name, index in self.pool_of.items()
                if index == pool}


# Forward graph id (GraphLowering.graph_id: AOTAutograd's id, the same for a
# forward and its backward) -> its ForwardOutputs, for its backward graph.
# The most recent _FORWARDS_KEPT forwards are kept, the requests and plans
# (ForwardGraph, up to megabytes each) of the most recent
# _FORWARD_REQUESTS_KEPT only: a backward compiles right after its forward.
_forward_outputs = {}
_forward_outputs_lock = threading.Lock()
_FORWARDS_KEPT = 4096
_FORWARD_REQUESTS_KEPT = 64


def _note_forward(key, update):
    """Applies update(ForwardOutputs) to forward graph `key`'s record."""
    with _forward_outputs_lock:
        record = _forward_outputs.pop(key, None) or ForwardOutputs()
        update(record)
        _forward_outputs[key] = record
        while len(_forward_outputs) > _FORWARDS_KEPT:
            _forward_outputs.pop(next(iter(_forward_outputs)))
        with_requests = [r for r in _forward_outputs.values()
                         if r.request is not None]
        for old in with_requests[:-_FORWARD_REQUESTS_KEPT]:
            old.request = old.plan = None


def saved_output_pools(output_args, output_buffers, group_names, offsets,
                       pools):
    """The pools a forward graph's outputs come from in a plan: with pool
    mode combined, the saved activations and the user outputs share one
    pool, so the backward's `del` of a saved activation frees nothing.

    output_args, output_buffers: as saved_input_copies'; group_names: per
    buffer group, its buffers' names; offsets, pools: the plan
    (Placement.offsets, Placement.pools). Returns (pool_of: output name ->
    pool index, pool_bytes: pool index -> (bytes, device)), both empty
    where the lengths differ."""
    if len(output_args) != len(output_buffers):
        return {}, {}
    group_of = {name: g for g, names in enumerate(group_names)
                for name in names}
    pool_of, pool_bytes = {}, {}
    for (name, _), buffer in zip(output_args, output_buffers):
        group = group_of.get(buffer)
        if not name or group is None:
            continue
        pool = offsets[group][0]
        pool_of[name] = pool
        pool_bytes[pool] = (int(pools[pool][2]), str(pools[pool][1]))
    return pool_of, pool_bytes


def saved_input_copies(output_args, output_buffers, input_names):
    """The forward graph's outputs that are graph inputs in the FX graph but
    storage of the graph's own in Inductor's code: with layout optimization
    (convolutions' weights and inputs in channels-last) Inductor copies an
    input once and returns the copy where the input is saved for backward
    (`buf15 = empty_strided_cuda((512, 512, 3, 3), (4608, 1, 1536, 512))`,
    returned for `primals_116`). The caller does not hold a copy: the
    backward graph's input of that name is the last reference, and its
    `del primals_116` returns the bytes (resnet18's backward: 53 MiB of
    such inputs; docs/gpu.md, "Line traces").

    output_args: per FX output, (name, is a placeholder); output_buffers: per
    output in the same order, the name of the buffer Inductor returns (None
    where unknown); input_names: the graph's input names. Returns the FX
    names of the copied inputs (empty where the lengths differ)."""
    if len(output_args) != len(output_buffers):
        return set()
    inputs = set(input_names)
    return {name for (name, placeholder), buffer in zip(output_args,
                                                        output_buffers)
            if placeholder and buffer is not None and buffer not in inputs}


def _forward_output_buffers(graph):
    """A graph being compiled (V.graph): its FX outputs as (name, is a
    placeholder) and, in the same order, the buffers Inductor returns for
    them (None where unknown). FX nodes are told from constants by their
    .op (no torch import: tests hand in fakes)."""
    output = next(node for node in graph.module.graph.nodes
                  if node.op == "output")
    args = output.args[0] if isinstance(output.args[0], (list, tuple)) \
        else (output.args[0],)
    output_args = [(arg.name, arg.op == "placeholder")
                   if hasattr(arg, "op") and hasattr(arg, "name")
                   else ("", False) for arg in args]

    def buffer_name(node):
        try:
            return node.get_name()
        except Exception:  # a constant, a symbolic size
            return None
    return output_args, [buffer_name(node) for node in graph.graph_outputs]


def _is_training_forward(graph):
    return getattr(graph, "graph_id", None) is not None and not getattr(
        graph, "is_backward", False) and not getattr(graph, "is_inference",
                                                     True)


def _note_forward_pools(graph, groups, placement, request, response,
                        applied=True):
    """A training forward planned by the service: notes which pool each of
    its outputs came from (saved_output_pools; none where the plan was not
    `applied`, shadow_plan's: each output is a storage of its own) and,
    where it sent events, its request, the plan (`response`) and the buffer
    each output is (ForwardOutputs), for its backward."""
    if not _is_training_forward(graph):
        return
    try:
        output_args, output_buffers = _forward_output_buffers(graph)
        pool_of, pool_bytes = saved_output_pools(
            output_args, output_buffers, [group.names for group in groups],
            placement.offsets, placement.pools) if applied else ({}, {})
    except Exception as error:  # never a reason to fail the plan
        log.warning("memplan: cannot read the forward's outputs: %s", error)
        return
    buffer_of = {}
    if len(output_args) == len(output_buffers):
        buffer_of = {name: str(buffer) for (name, _), buffer in
                     zip(output_args, output_buffers)
                     if name and buffer is not None}
    sent = request if request.events else None
    # The plan as the forward runs it: its pools, assignments and the
    # segment reservations its code makes at the entry (a private-pool
    # forward's), which decide the blocks its backward starts from.
    plan = pb.PlanMemoryResponse(
        pools=response.pools, assignments=response.assignments,
        segment_reservations=response.segment_reservations)

    def update(record):
        record.pool_of, record.pool_bytes = pool_of, pool_bytes
        record.request, record.plan = sent, plan
        record.buffer_of = buffer_of
    _note_forward(graph.graph_id, update)


def forward_graph(forward, input_names):
    """The ForwardGraph of a backward graph whose inputs are `input_names`
    (V.graph.graph_input_names) and whose forward noted `forward`
    (ForwardOutputs): its request, its plan and, per input that is one of
    its outputs, the buffer it is; None where the forward sent no events."""
    if forward is None or forward.request is None or forward.plan is None:
        return None
    outputs = set(forward.request.output_names)
    sources = [pb.InputSource(input=name,
                              forward_output=forward.buffer_of[name])
               for name in input_names
               if forward.buffer_of.get(name) in outputs]
    return pb.ForwardGraph(request=forward.request, input_sources=sources,
                           plan=forward.plan)


class GraphMemory:
    """What one graph allocates and frees outside the plan, read off
    Inductor's V.graph (torch 2.11): extern kernels' outputs (their layout's
    storage, each output of a multi-output kernel alone), multi-output
    bindings, and the graph inputs whose `del` returns storage (in a backward
    graph, the saved activations; each storage once, at the free of its last
    view). Sizes are the size hints in bytes, as Inductor's planner's.

    workspace: a callable from an extern kernel's IR node to the bytes its
    call allocates and frees inside itself (memplan.workspaces.
    WorkspaceProbe), sent as its EXTERN_ALLOCATE's workspace_bytes; where
    it also has allocations(node) giving the call's allocations in order
    (WorkspaceProbe's, from the memory history), those are sent instead,
    as call_allocations; None: none sent."""

    def __init__(self, graph, lines, scheduler_node_bytes=(), workspace=None):
        from torch._inductor import ir
        self.graph = graph
        self.ir = ir
        self.scheduler_node_bytes = list(scheduler_node_bytes)
        self.workspace = workspace
        self.unknown_storage = set()  # freed inputs without an example
        self.graph_inputs = set(getattr(graph, "graph_input_names", []))
        self.forward = self._forward()
        self.input_release = self._input_release(lines)

    def _forward(self):
        """A training forward graph: notes its saved_input_copies for its
        backward, and returns None. A backward graph: its forward's
        ForwardOutputs, where that forward was compiled in this process
        (else an empty one: every primal is taken as the caller's, every
        saved activation as a storage of its own)."""
        graph = self.graph
        if getattr(graph, "is_backward", False):
            with _forward_outputs_lock:
                return _forward_outputs.get(getattr(graph, "graph_id", None),
                                            ForwardOutputs())
        if _is_training_forward(graph):
            try:
                copies = saved_input_copies(
                    *_forward_output_buffers(graph),
                    getattr(graph, "graph_input_names", []))
            except Exception as error:  # never a reason to fail the plan
                log.warning("memplan: cannot read the forward's outputs: %s",
                            error)
                copies = set()

            def update(record):
                record.copies = copies
            _note_forward(graph.graph_id, update)
        return None

    def held(self, name):
        """Whether the caller keeps a backward input's storage."""
        return name.startswith(_HELD_INPUT_PREFIXES) and not (
            self.forward is not None and name in self.forward.copies)

    def _bytes(self, node):
        if node.get_inputs_that_alias_output():
            return 0  # a view of an input: no new storage
        return self._layout_bytes(node)

    def _outputs(self, node):
        """The tensor outputs of a multi-output kernel, flattened in order."""
        from memplan.workspaces import multi_outputs
        return multi_outputs(node, self._is_output)

    def _is_output(self, item):
        return isinstance(item, self.ir.MultiOutput)

    def extern_allocation(self, line):
        node = line.node
        fields = {"name": node.get_name(), "device": str(node.get_device()),
                  "dtype": str(node.get_dtype())
                  if not isinstance(node.layout, self.ir.MultiOutputLayout)
                  else ""}
        if isinstance(node.layout, self.ir.MultiOutputLayout):
            output_bytes = [self._bytes(o) for o in self._outputs(node)]
            fields.update(output_bytes=output_bytes,
                          size_bytes=sum(output_bytes))
        else:
            fields["size_bytes"] = self._bytes(node)
        workspace = self.workspace(node) if self.workspace else 0
        allocations = getattr(self.workspace, "allocations", None)
        calls = allocations(node) if allocations else ()
        if calls:
            fields["call_allocations"] = [
                pb.CallAllocation(output_index=c[1]) if c[0] == "output"
                else pb.CallAllocation(scratch_bytes=c[1],
                                       freed_before=c[2])
                for c in calls]
        elif workspace > 0:
            fields["workspace_bytes"] = int(workspace)
        return fields

    def multi_output(self, line):
        parent = self.graph.get_buffer(line.arg_name)
        if parent is None or not isinstance(
                getattr(parent, "layout", None), self.ir.MultiOutputLayout):
            return None
        names = [o.get_name() for o in self._outputs(parent)]
        if line.result_name not in names:
            return None
        return {"name": line.arg_name, "reused_as": line.result_name,
                "output_index": names.index(line.result_name)}

    def reuse_input(self, line):
        """A graph input whose storage a buffer takes over in place
        (`buf16 = relu_15; del relu_15  # reuse`): the bytes its free will
        return, as input_free's."""
        name = line.node.get_name()
        if name not in self.graph_inputs:
            return None
        return self.input_free(line)

    def input_free(self, line):
        name = line.node.get_name()
        device = str(line.node.get_device() or "")
        if self.held(name):
            return {"name": name, "size_bytes": 0, "device": device}
        if name in self.unknown_storage:
            # No example input to tell its storage: its layout's bytes.
            return {"name": name, "size_bytes": self._layout_bytes(line.node),
                    "device": device}
        released, device_of_storage = self.input_release.get(name, (0, ""))
        return {"name": name, "size_bytes": released,
                "device": device_of_storage or device}

    def _layout_bytes(self, node):
        from torch._inductor.utils import get_dtype_size
        storage = self.graph.get_allocation_storage_size(node)
        hint = self.graph.sizevars.size_hint(storage, fallback=0)
        return int(hint) * get_dtype_size(node.get_dtype())

    def free_description(self, line):
        """A FREE of an extern output that Inductor's reuse pass may hand on
        (not a multi-output kernel's result, not a view): its allocation."""
        from torch._inductor.utils import get_dtype_size, sympy_str
        node = line.node
        if isinstance(getattr(node, "layout", None), self.ir.MultiOutputLayout):
            return None
        if node.get_inputs_that_alias_output():
            return None
        sizes = self.graph.sizevars
        storage = self.graph.get_allocation_storage_size(node)
        item = get_dtype_size(node.get_dtype())
        return {"size_bytes": int(sizes.size_hint(storage, fallback=0)) * item,
                "symbolic_size": sympy_str(sizes.simplify(storage * item)),
                "device": str(node.get_device()),
                "dtype": str(node.get_dtype())}

    def scheduler_node(self, line):
        if not self.scheduler_node_bytes:
            return None
        return getattr(line, "scheduler_node_index", None)

    def _input_release(self, lines):
        """input name -> (bytes its free returns, device): in a backward
        graph, each saved activation's storage at the free of its last view
        (views of one storage found through the example inputs' storages,
        or of one pool of the forward's plan: ForwardOutputs); nothing
        elsewhere, where the caller keeps every input."""
        graph = self.graph
        if not getattr(graph, "is_backward", False):
            return {}
        # Where each input is let go: its FreeLine, or the ReuseLine of a
        # buffer that takes its storage over in place.
        inputs = set(getattr(graph, "graph_input_names", []))
        freed = [line.node.get_name() for line in lines
                 if hasattr(line, "node") and (
                     line_kind(line) == pb.EVENT_KIND_FREE_INPUT or (
                         line_kind(line) == pb.EVENT_KIND_REUSE
                         and line.node.get_name() in inputs))]
        names = list(getattr(graph, "graph_input_names", []))
        examples = list(getattr(graph, "example_inputs", None) or [])
        storage_of = {}  # input name -> (storage key, bytes, device)
        forward = self.forward
        for name in names:
            if name in forward.pool_of:
                pool = forward.pool_of[name]
                storage_of[name] = (("pool", pool), *forward.pool_bytes[pool])
        for name, example in zip(names, examples):
            if name in storage_of:
                continue
            try:
                storage = example.untyped_storage()
                storage_of[name] = (storage._cdata, int(storage.nbytes()),
                                    str(example.device))
            except Exception:  # a symbolic size, an opaque object
                continue
        last_free = {}  # storage key -> the last freed view's name
        views = {}
        for name in names:
            if name in storage_of:
                views.setdefault(storage_of[name][0], []).append(name)
        for name in freed:
            if name in storage_of:
                last_free[storage_of[name][0]] = name
            elif not self.held(name):
                self.unknown_storage.add(name)
        release = {}
        for key, members in views.items():
            held = any(self.held(n) or n not in freed for n in members)
            if isinstance(key, tuple):  # a pool: its other outputs hold it
                held = held or bool(forward.pool_members(key[1]) -
                                    set(members))
            if held:
                continue
            name = last_free[key]
            _, nbytes, device = storage_of[name]
            release[name] = (nbytes, device)
        return release


# --- The service's answer ---------------------------------------------------

class Placement:
    """The service's plan for one graph, checked against Inductor's groups.

    pools: per response pool, (name, device, size_bytes, symbolic_size or "").
    offsets: per buffer group, in Inductor's order, (pool index, offset in
      bytes, symbolic_offset or "").
    """

    def __init__(self, pools, offsets):
        self.pools = pools
        self.offsets = offsets


def read_placement(response, group_names, group_devices, allocate_lines=None):
    """Returns the Placement of `response` for Inductor's groups.

    group_names: per group, its names (the allocating one first);
    group_devices: per group, str(device). allocate_lines: with a request of
    events, the index of each group's ALLOCATE line (= event); the response's
    Assignment.allocation_event must match it, which proves the service
    formed Inductor's groups in Inductor's order.
    Raises HookError when the response does not fit the groups.
    """
    if len(response.assignments) != len(group_names):
        raise HookError(f"the service returned {len(response.assignments)} "
                        f"assignments for {len(group_names)} buffer groups")
    pool_index = {pool.name: i for i, pool in enumerate(response.pools)}
    pools = [(pool.name, pool.device, pool.size_bytes,
              getattr(pool, "symbolic_size", "")) for pool in response.pools]
    offsets = []
    for i, assignment in enumerate(response.assignments):
        name = group_names[i][0]
        if allocate_lines is not None:
            event = (assignment.allocation_event
                     if assignment.HasField("allocation_event") else None)
            if event != allocate_lines[i]:
                raise HookError(
                    f"the service's group {i} is allocated at event {event}, "
                    f"Inductor's ({name}) at line {allocate_lines[i]}")
        if assignment.pool not in pool_index:
            raise HookError(f"{name}: unknown pool {assignment.pool!r}")
        index = pool_index[assignment.pool]
        if pools[index][1] != group_devices[i]:
            raise HookError(f"{name} on {group_devices[i]} assigned to "
                            f"{assignment.pool} on {pools[index][1]}")
        offsets.append((index, assignment.offset,
                        getattr(assignment, "symbolic_offset", "")))
    return Placement(pools, offsets)


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(//|[-+*/(),]))")

# Functions that may appear in a symbolic size or offset, as Inductor and
# sympy print them.
SYMBOLIC_FUNCTIONS = ("Max", "Min", "FloorDiv", "CeilDiv", "ModularIndexing",
                      "Mod", "PythonMod", "ceiling", "floor", "align")


def symbolic_tokens(text, symbols):
    """Checks that `text` is an arithmetic expression over integers, the
    names in `symbols` and SYMBOLIC_FUNCTIONS, and returns the names it uses.
    Raises HookError naming the first character or name that is not allowed
    (the text is evaluated by sympy, so nothing else may reach it)."""
    names = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise HookError(f"symbolic expression {text!r}: unexpected "
                            f"character at position {position}")
        name = match.group(2)
        if name is not None:
            if name not in symbols and name not in SYMBOLIC_FUNCTIONS:
                raise HookError(f"symbolic expression {text!r}: unknown name "
                                f"{name!r}")
            names.append(name)
        position = match.end()
    if not text:
        raise HookError("empty symbolic expression")
    return names


def parse_symbolic(text, symbols, functions):
    """Returns the sympy expression of `text` (a symbolic size or offset from
    the service), with Inductor's own symbol objects (`symbols`: name ->
    sympy.Symbol) and functions (`functions`: name -> sympy function).
    Raises HookError for a text symbolic_tokens refuses."""
    symbolic_tokens(text, symbols)
    import sympy
    return sympy.sympify(text, locals={**functions, **symbols})


def _sympy_functions():
    """Inductor's sympy functions by their printed names."""
    import sympy
    from torch.utils._sympy import functions as torch_functions
    from torch._inductor import utils as inductor_utils
    table = {"ceiling": sympy.ceiling, "floor": sympy.floor, "Mod": sympy.Mod,
             "align": inductor_utils.align}
    for name in SYMBOLIC_FUNCTIONS:
        if name not in table and hasattr(torch_functions, name):
            table[name] = getattr(torch_functions, name)
    return table


# --- Inductor's pool objects -----------------------------------------------

class PoolRoot:
    """The root of one pool the service planned, in place of Inductor's
    TemporalSplit tree: what AllocationPool reads of its root (live ranges
    for mark_first_last_usage, the size for codegen_create, finalize to set
    each Allocation's pool and offset)."""

    def __init__(self, size_hint, symbolic_size, make_live_ranges):
        self.size_hint = size_hint          # bytes
        self.symbolic_size = symbolic_size  # sympy expression of the bytes
        self._make_live_ranges = make_live_ranges  # Inductor's LiveRanges
        self.placed = []  # (Allocation, offset expression in bytes)
        # codegen_create looks here for one buffer as large as the whole pool
        # to type the pool's tensor after it; none here, so every pool is
        # created as size bytes of uint8.
        self.allocations = []

    def place(self, allocation, offset):
        self.placed.append((allocation, offset))

    def get_live_ranges(self):
        return self._make_live_ranges([a.live_range for a, _ in self.placed])

    def get_size_hint(self):
        return self.size_hint

    def get_symbolic_size(self):
        return self.symbolic_size

    def finalize(self, pool, offset):
        for allocation, placed_offset in self.placed:
            allocation.finalize(pool, offset + placed_offset)
        return self

    def is_empty(self):
        return not self.placed

    def allocate(self, block, is_last):
        return False  # the service's pools take no more buffers


# --- The hook ----------------------------------------------------------------

class _Installed:
    def __init__(self, mp, client, owns_client, strategy, pool_mode, send,
                 training, entry_cache, alignment=0, probe_workspaces=False,
                 pool_gradients=False, shadow=False, reserve_segments=False,
                 private_pool=False, group_saved_activations=False):
        self.mp = mp
        self.client = client
        self.owns_client = owns_client  # closed by uninstall()
        self.strategy = strategy
        self.pool_mode = pool_mode
        self.send = send
        self.training = training
        self.entry_cache = entry_cache
        self.alignment = alignment  # PlanOptions.alignment: 0 is 64
        self.probe_workspaces = probe_workspaces
        # PlanOptions.outputs_released_together for backward graphs.
        self.pool_gradients = pool_gradients
        # PlanMemoryRequest.release_groups for training forward graphs: the
        # saved activations their backward frees together (release_groups).
        self.group_saved_activations = group_saved_activations
        # PlanOptions.reserve_segments for inference graphs, whose
        # segment_reservations the generated code then runs at the entry.
        self.reserve_segments = reserve_segments
        # PlanOptions.private_pool for training graphs, whose code then runs
        # in the hook's private pools (with_private_pool); a training
        # forward's request then asks for reservations too where
        # reserve_segments is on.
        self.private_pool = private_pool
        # install(shadow=True): every graph's request sent and its answer
        # recorded, no graph's code changed (_install_shadow).
        self.shadow = shadow
        planner = mp.MemoryPlanner
        self.original_plan = planner.plan
        self.original_allocate_groups = planner.allocate_groups
        base = getattr(mp, "AllocationTreeNode", object)
        self.root_class = type("MemplanPoolRoot", (PoolRoot, base), {})
        self.restore = []  # (object, attribute, value) to put back


def _patch(state, owner, attribute, value):
    """Sets owner.attribute = value until uninstall()."""
    state.restore.append((owner, attribute, getattr(owner, attribute)))
    setattr(owner, attribute, value)


# --- Pools freed where the plan frees them ----------------------------------
#
# torch 2.11's AllocFromPoolLine takes every buffer from its pool with
# alloc_from_pool (a view of the pool's one storage) and DeallocFromPoolLine
# writes nothing but, at the pool's last use, one `del pool, buf...` of
# every name taken from it; a pool holding an output is never deleted. A
# view keeps the whole storage alive, so the storage returns to the caching
# allocator only once the pool's name and every view are gone. The hook's
# codegen makes the generated code free what the plan frees:
#   - each AllocFromPoolLine writes its own view of the pool, or takes
#     over the name of a dead buffer of the pool that has the same view
#     (not Inductor's `bufM = bufN  # alloc` alias of a live name, which a
#     `del bufN` would break), and the pool's last one is followed by `del
#     pool`, the pool's typed views and the dead views kept (no later line
#     takes from them);
#   - each DeallocFromPoolLine deletes its buffer group's names, at the
#     group's last use, but for views kept while the pool takes more
#     buffers (freeing them then would free nothing: the pool's name holds
#     the storage); the pool's storage returns at the last of them
#     (Pool.last_free_event), or never for a pool holding an output.
# And it writes them cheaply (_own_allocation, _create_pool, _pool_view,
# _spare_views): a pool holding one buffer is that buffer's own
# empty_strided (as default torch.compile allocates it); a pool is created
# in the dtype most of its buffers have, and its buffers of one dtype are
# reinterpret_tensor views of the pool (or of one view of it in their
# dtype), not a dispatcher call each; a buffer whose view a dead buffer of
# the same pool already has takes that buffer's name over, as default's
# reuse pass renames a freed buffer.

def _mark_last_allocations(mp, lines):
    """Marks the last AllocFromPoolLine of each pool in planned `lines`."""
    seen = set()
    for line in reversed(lines):
        if isinstance(line, mp.AllocFromPoolLine):
            pool = line.group.allocation.pool
            if id(pool) not in seen:
                seen.add(id(pool))
                line.memplan_last_allocation = True


def _deleted(pool):
    """The names of `pool`'s buffers (and the pool's) already deleted."""
    return pool.__dict__.setdefault("memplan_deleted", set())


def _alloc_from_pool_codegen(line, code):
    allocation = line.group.allocation
    pool = allocation.pool
    pool.names_to_del.extend(line.group.names)
    own = _own_allocation(line.wrapper, pool, allocation, line.node.get_name())
    if own is not None:
        code.writeline(own)
        _deleted(pool).add(pool.name)  # never made: nothing to delete
        return
    if line.is_first_pool_usage:
        _create_pool(line.wrapper, pool, code)
    expression = _pool_view(line.wrapper, allocation, code)
    name = line.node.get_name()
    spare = _spare_views(pool).get(expression)
    if spare:
        old = spare.pop()
        code.writeline(f"{name} = {old}; del {old}  # reuse")
        _deleted(pool).add(old)
    else:
        code.writeline(f"{line.wrapper.declare}{name} = "
                       f"{expression}{line.wrapper.ending}")
    if expression.startswith("reinterpret_tensor("):
        _views(pool)[name] = expression
    if getattr(line, "memplan_last_allocation", False):
        spares = [n for names in _spare_views(pool).values() for n in names]
        names = list(dict.fromkeys(
            [pool.name, *_typed_bases(pool).values(), *spares]))
        code.writeline("del " + ", ".join(names))
        _deleted(pool).update(names)
        _spare_views(pool).clear()


def _create_pool(wrapper, pool, code):
    """Writes `pool`'s creation: as Inductor's codegen_create (size bytes
    of uint8), but for a pool the service planned with a static size, typed
    as the dtype most of its buffers have (`pool0 = empty_strided_cuda(
    (bytes / itemsize, ), (1, ), torch.float32)`: the same block from the
    caching allocator), so that those buffers are reinterpret_tensor views
    of the pool itself (_pool_view), without a typed view of it first."""
    counts = _dtype_counts(pool)
    make = getattr(wrapper, "make_allocation", None)
    if counts and make is not None and getattr(
            pool.root.get_symbolic_size(), "is_Integer", False):
        dtype = max(counts, key=counts.get)  # the first of the most
        itemsize = getattr(dtype, "itemsize", None)
        size = int(pool.root.get_size_hint())
        view, _ = _written(wrapper.codegen_alloc_from_pool(
            pool.name, 0, dtype, (0,), (1,)))
        if itemsize and size % itemsize == 0 and view.startswith(
                "alloc_from_pool("):  # Python's pool views (_pool_view)
            text = make(pool.name, pool.device, dtype, (size // itemsize,),
                        (1,))
            if text.startswith(f"{pool.name} = empty_strided"):
                code.writeline(text)
                _typed_bases(pool)[dtype] = pool.name
                pool.__dict__["memplan_static_bytes"] = size
                return
    pool.codegen_create(wrapper, code)


def _views(pool):
    """name -> the reinterpret_tensor expression `pool`'s buffer of that
    name was written as."""
    return pool.__dict__.setdefault("memplan_views", {})


def _spare_views(pool):
    """expression -> names of `pool`'s dead buffers written as that view,
    kept (not deleted) while the pool takes more buffers: a later buffer of
    the same view takes the name over (`buf8 = buf5; del buf5  # reuse`,
    as Inductor's pools alias an identical alloc_from_pool and its reuse
    pass renames a freed buffer) instead of making the view again. Freeing
    a view frees no memory while the pool's own name holds its storage;
    those left are deleted with the pool's name after its last
    allocation."""
    return pool.__dict__.setdefault("memplan_spare_views", {})


def _offset_alignment():
    """Bytes every pool offset is a multiple of, whoever planned the graph:
    Inductor's ALIGN_BYTES (64) where it falls back, the hook's alignment
    (0: 64) where the service did."""
    alignment = _state.alignment if _state is not None else 0
    return min(64, alignment or 64)


def _typed_bases(pool):
    """dtype -> the name of `pool`'s view in that dtype (see _pool_view)."""
    return pool.__dict__.setdefault("memplan_typed_bases", {})


def _dtype_counts(pool):
    """dtype -> how many of the service's buffers `pool` holds in it (none
    for a pool Inductor planned), counted once per pool."""
    counts = pool.__dict__.get("memplan_dtype_counts")
    if counts is None:
        counts = {}
        for allocation, _ in getattr(pool.root, "placed", None) or ():
            dtype = allocation.node.get_dtype()
            counts[dtype] = counts.get(dtype, 0) + 1
        pool.__dict__["memplan_dtype_counts"] = counts
    return counts


def _written(result):
    """A wrapper codegen's (expression, setup lines), from either form
    Inductor's codegen_alloc_from_pool returns (a string, or both)."""
    return (result, []) if isinstance(result, str) else result


def _is_zero(expression):
    return getattr(expression, "is_Integer", isinstance(expression, int)) \
        and int(expression) == 0


def _own_allocation(wrapper, pool, allocation, name):
    """The line that allocates `allocation`'s buffer by itself
    (`buf3 = empty_strided_cuda(size, stride, dtype)`, as default
    torch.compile does) where the service's pool holds nothing else: the
    buffer alone, at offset 0, in a block the caching allocator rounds
    (to 512 bytes) to the pool's own size, so that the GPU sees the same
    allocation without the pool's creation and view (two calls, one of
    them alloc_from_pool's dispatcher). None where the pool is needed:
    other buffers, a symbolic size, a pool Inductor planned (fallback),
    or a wrapper that does not allocate as Python's does."""
    placed = getattr(pool.root, "placed", None)
    make = getattr(wrapper, "make_allocation", None)
    if placed is None or make is None or len(placed) != 1 \
            or placed[0][0] is not allocation \
            or not _is_zero(allocation.offset) \
            or not getattr(pool.root.get_symbolic_size(), "is_Integer",
                           False):
        return None
    rounded = [-(-int(size) // _BLOCK_ROUNDING) for size in (
        allocation.size_hint, pool.root.get_size_hint())]
    if rounded[0] != rounded[1]:
        return None
    node = allocation.node
    text = make(name, pool.device, node.get_dtype(), tuple(node.get_size()),
                tuple(node.get_stride()))
    return text if text.startswith(f"{name} = empty_strided") else None


# The CUDA caching allocator rounds every block up to a multiple of this
# many bytes (c10/cuda/CUDACachingAllocator.cpp, kMinBlockSize).
_BLOCK_ROUNDING = 512


def _pool_view(wrapper, allocation, code):
    """The expression of `allocation`'s buffer, a view of its pool; writes
    to `code` what it needs first. torch 2.11 writes `alloc_from_pool(pool,
    offset_bytes, dtype, size, stride)` for each buffer, a dispatcher call
    (torch.ops.inductor._alloc_from_pool) that costs microseconds of CPU a
    buffer from Python: launch-bound steps measured up to 1.2x slower than
    default torch.compile's (docs/gpu.md, "Step time"). Here each buffer
    is `reinterpret_tensor(BASE, size, stride, offset_elements)`
    (torch._C._dynamo.guards._reinterpret_tensor, Inductor's own view of a
    buffer: the same storage, dtype, offset, size and stride as
    alloc_from_pool's, without the dispatcher), BASE the pool itself in
    the dtype _create_pool gave it, else one view of the pool per dtype
    (`pool1_int64 = pool1.view(torch.int64)`, _recast, or where that
    cannot be written `pool1_int64 = alloc_from_pool(pool1, 0,
    torch.int64, (0, ), (1, ))`; deleted with the pool), or, for the
    pool's only buffer of its dtype, `pool1.view(torch.int64)` inline.
    alloc_from_pool as Inductor writes it where no such view can be
    written: a pool Inductor planned (fallback), a wrapper whose pool views
    are not Python alloc_from_pool calls (cpp_wrapper), an offset that is
    not a whole number of elements, or the only buffer of its dtype in a
    pool _recast cannot view."""
    pool = allocation.pool
    node = allocation.node
    dtype = node.get_dtype()
    itemsize = getattr(dtype, "itemsize", None)
    offset = allocation.offset
    elements = None
    if itemsize and getattr(offset, "is_Integer", isinstance(offset, int)):
        if int(offset) % itemsize == 0:
            elements = int(offset) // itemsize
    elif itemsize and _offset_alignment() % itemsize == 0:
        from torch.utils._sympy.functions import FloorDiv
        elements = FloorDiv(offset, itemsize)  # exact: see above
    bases = _typed_bases(pool)
    recast = _recast(pool, dtype)
    base = bases.get(dtype)
    if elements is not None and base is None:
        if _dtype_counts(pool).get(dtype, 0) < 2:
            # One buffer of its dtype: a view of the pool in it, inline, or
            # (none to write) alloc_from_pool itself.
            base = recast
        else:
            view, setup = recast, []
            if view is None:
                view, setup = _written(wrapper.codegen_alloc_from_pool(
                    pool.name, 0, dtype, (0,), (1,)))
            if view.startswith(("alloc_from_pool(", f"{pool.name}.view(")):
                name = f"{pool.name}_{str(dtype).rsplit('.', 1)[-1]}"
                code.writelines(setup)
                code.writeline(f"{wrapper.declare}{name} = {view}"
                               f"{wrapper.ending}")
                base = bases[dtype] = name
    if elements is None or base is None:
        expression, setup = _written(
            allocation.codegen_alloc_from_pool(wrapper))
        code.writelines(setup)
        return expression
    return (f"reinterpret_tensor({base}, "
            f"{wrapper.codegen_python_shape_tuple(tuple(node.get_size()))}, "
            f"{wrapper.codegen_python_shape_tuple(tuple(node.get_stride()))}"
            f", {wrapper.codegen_sizevar(elements)})")


def _recast(pool, dtype):
    """`pool.view(dtype)`: the pool's whole storage as `dtype` elements
    (Tensor.view(dtype), one C++ method call: the same storage, offset 0),
    where _create_pool wrote the pool typed with a static size that is a
    whole number of them; None otherwise (a pool Inductor created, of
    symbolic size, or whose bytes `dtype` does not divide), where the view
    is alloc_from_pool's (torch.ops.inductor._alloc_from_pool, a
    dispatcher call from Python: 3.1 us a call on the suite's H200 machine
    against 1.6 for this view and its reinterpret_tensor, docs/gpu.md).
    memplan_static_bytes is set only where _create_pool typed the pool."""
    size = pool.__dict__.get("memplan_static_bytes")
    itemsize = getattr(dtype, "itemsize", None)
    if size is None or not itemsize or size % itemsize:
        return None
    return f"{pool.name}.view({dtype})"


def _dealloc_from_pool_codegen(line, code):
    pool = line.group.allocation.pool
    deleted = _deleted(pool)
    candidates = pool.names_to_del if line.is_last_pool_usage else (
        line.group.names)
    names = []
    for name in candidates:
        if name in pool.names_to_del and name not in deleted \
                and name not in names:
            names.append(name)
    if pool.name not in deleted:
        # The pool takes more buffers: keep the views for them to take over
        # (_spare_views); freeing them now would free nothing.
        views, spare = _views(pool), _spare_views(pool)
        for name in names:
            if name in views:
                spare.setdefault(views[name], []).append(name)
        names = [name for name in names if name not in views]
    if names:
        code.writeline("del " + ", ".join(names))
        deleted.update(names)


def _install_codegen(state):
    mp = state.mp
    if not hasattr(mp, "AllocFromPoolLine"):
        return  # a stand-in module without codegen (tests)
    _patch(state, mp.AllocFromPoolLine, "codegen", _alloc_from_pool_codegen)
    _patch(state, mp.DeallocFromPoolLine, "codegen",
           _dealloc_from_pool_codegen)


# --- Training graphs ----------------------------------------------------------

def _install_training(state):
    """Has torch 2.11's PythonWrapperCodegen.run_wrapper_ir_passes run the
    memory planner (MemoryPlanner, hence the service) for training graphs
    too, where it runs only for inference graphs; graphs with subgraph
    lines or communication buffers (which the planner does not handle) keep
    Inductor's reuse pass."""
    from torch._inductor.codegen import wrapper as W
    original = W.PythonWrapperCodegen.run_wrapper_ir_passes
    config = state.mp.config

    def run_wrapper_ir_passes(self, is_inference):
        if (not is_inference and config.memory_planning
                and not _has_unplannable_lines(self.lines, W)):
            self.memory_plan()
            return
        original(self, is_inference)

    _patch(state, W.PythonWrapperCodegen, "run_wrapper_ir_passes",
           run_wrapper_ir_passes)
    if state.private_pool:
        # A backward compiled right after its forward, before the forward
        # first runs: its plan sizes the forward's reservation for the step
        # (reservation_bytes) from the first call on.
        try:
            from torch._functorch import config as functorch_config
        except ImportError:
            return
        if hasattr(functorch_config, "force_non_lazy_backward_lowering"):
            _patch(state, functorch_config,
                   "force_non_lazy_backward_lowering", True)
        _install_autotune_outside_pool(state)


def _install_release_groups(state):
    """With group_saved_activations: has each partition of a training
    step's joint graph note its saved activations' last uses in the
    backward (memplan.release_groups), wrapping the partition as Inductor's
    compile_fx calls it (torch._inductor.compile_fx.
    min_cut_rematerialization_partition; a custom_partitioner_fn of the
    caller's is left alone, and its forwards go without release groups)."""
    if not state.group_saved_activations:
        return
    try:
        from torch._inductor import compile_fx
    except ImportError:
        return
    original = getattr(compile_fx, "min_cut_rematerialization_partition",
                       None)
    if original is None:
        return
    _patch(state, compile_fx, "min_cut_rematerialization_partition",
           release_groups.wrap_partition(original))


def _saved_release_groups(graph, request):
    """The release groups of a training forward graph being compiled
    (V.graph), as pb.ReleaseGroup messages naming outputs of `request`
    (memplan.release_groups.release_groups); none where its partition
    noted nothing, or on any error (a warning: the plan is then made as
    without them)."""
    try:
        points = release_groups.free_points_of(graph.module)
        if not points:
            return []
        if request.events:
            outputs = set(request.output_names)
        else:
            outputs = {name for buffer in request.buffers
                       if buffer.is_output for name in buffer.names}
        output_args, output_buffers = _forward_output_buffers(graph)
        return [pb.ReleaseGroup(outputs=names)
                for names in release_groups.release_groups(
                    output_args, output_buffers, points, outputs)]
    except Exception as error:  # never a reason to fail the graph
        log.warning("memplan: cannot read the forward's saved activations: "
                    "%s", error)
        return []


def _install_autotune_outside_pool(state):
    """Has Inductor's runtime autotuning (CachingAutotuner.
    benchmark_all_configs: a Triton kernel with several configs timed at its
    first launch, inside the graph's call) allocate from the default pool
    while a private-pool route is open on its thread. Its L2-flushing buffer
    (the GPU's L2 size: 50 MiB on an H100) and its copies of the kernel's
    mutated arguments would otherwise take segments of the private pool
    in the first step, which empty_cache() never returns while the pool
    lives (docs/gpu.md "Autotuning outside the private pool")."""
    try:
        from torch._inductor.runtime import triton_heuristics
    except ImportError:
        return
    autotuner = getattr(triton_heuristics, "CachingAutotuner", None)
    original = getattr(autotuner, "benchmark_all_configs", None)
    if original is None:
        return
    _patch(state, autotuner, "benchmark_all_configs",
           _outside_private_pool(original))


def _outside_private_pool(function):
    """`function` with the calling thread's open private-pool route (if
    any) suspended while it runs (_PoolRoute.suspended)."""
    @functools.wraps(function)
    def outside(*args, **kwargs):
        route = getattr(_open_route, "route", None)
        if route is None:
            return function(*args, **kwargs)
        with route.suspended():
            return function(*args, **kwargs)
    return outside


# --- Shadow: every graph predicted, none planned ------------------------------

def _has_unplannable_lines(lines, W):
    """Lines the memory planner does not handle (subgraphs, communication
    buffers): such a graph keeps Inductor's reuse pass."""
    return any(isinstance(line, (W.EnterSubgraphLine, W.ExitSubgraphLine))
               or (isinstance(line, W.AllocateLine)
                   and getattr(line, "comm_buffer", False))
               for line in lines)


def _install_shadow(state):
    """install(shadow=True): torch 2.11's PythonWrapperCodegen.
    run_wrapper_ir_passes first sends the graph's request (shadow_plan, on
    a copy of its lines), then runs as it would without the hook."""
    from torch._inductor.codegen import wrapper as W
    original = W.PythonWrapperCodegen.run_wrapper_ir_passes

    def run_wrapper_ir_passes(self, is_inference):
        if not _has_unplannable_lines(self.lines, W):
            shadow_plan(state, self.lines,
                        lambda: state.mp.MemoryPlanner(self))
        original(self, is_inference)

    _patch(state, W.PythonWrapperCodegen, "run_wrapper_ir_passes",
           run_wrapper_ir_passes)


def shadow_plan(state, lines, make_planner):
    """Sends the request install() would send for the graph of the wrapper
    `lines` (before any memory pass: AllocateLine, FreeIfNotReusedLine,
    ReuseLine, ...) and records the service's answer (stats(), "shadow":
    True), changing nothing Inductor then plans or writes: the planner
    (make_planner(): a fresh MemoryPlanner of the wrapper) forms its buffer
    groups and live ranges on a copy of the list, the one attribute that
    pass sets on the shared line objects (ReuseLine.delete_old) is put
    back, and no pool is built. Any failure is logged and recorded as a
    graph Inductor planned (source "inductor")."""
    mp = state.mp
    reuse = [(line, line.delete_old) for line in lines
             if hasattr(line, "delete_old")]
    planner = make_planner()
    try:
        planner._memplan_lines = [*lines]  # the events: lines as they are
        copy = [*lines]
        planner.drop_removed_buffers(copy)
        planner.convert_to_pool_lines(copy)
        planner.compute_live_ranges(copy)
        if not planner.buffer_groups:
            return
        record = _allocate_from_service(state, planner, apply=False)
        record["shadow"] = True
        _record(record)
    except Exception as error:  # a prediction, never a reason to fail
        reason = f"{type(error).__name__}: {error}"
        log.warning("memplan: shadow: %s", reason)
        _record({"source": "inductor", "reason": reason, "shadow": True,
                 "phase": _graph_phase(mp),
                 "graph_id": getattr(mp.V.graph, "graph_id", None),
                 "buffer_groups": len(planner.buffer_groups or [])})
    finally:
        for line, delete_old in reuse:
            line.delete_old = delete_old


# --- Compiled-graph caches -------------------------------------------------

def _install_cache_key(state):
    """Makes Inductor's FX graph cache (and AOTAutograd's, which keys on it)
    tell graphs compiled with the hook from others: a post-grad custom pass
    that changes no graph but whose uuid names the hook's settings. Without
    it, a graph cached without the hook (or with other settings) would load
    without planning."""
    from torch._inductor import config
    try:
        from torch._inductor.custom_graph_pass import CustomGraphPass
    except ImportError:
        return
    previous = config.post_grad_custom_post_pass
    settings = f"memplan:{state.strategy}:{state.pool_mode}:{state.send}:" \
               f"{state.training}:{state.entry_cache}:{state.alignment}:" \
               f"{state.probe_workspaces}:{state.pool_gradients}:" \
               f"{state.shadow}:{state.reserve_segments}:" \
               f"{state.private_pool}:{state.group_saved_activations}:" \
               f"{_CODEGEN_VERSION}"

    class MemplanCacheKey(CustomGraphPass):
        def __call__(self, graph):
            if previous is not None:
                previous(graph)

        def uuid(self):
            inner = previous.uuid() if previous is not None else None
            return (settings, inner)

    _patch(state, config, "post_grad_custom_post_pass", MemplanCacheKey())


# Bumped when the code the hook makes Inductor write changes, or the
# requests it sends do (so that Inductor's compiled-graph cache does not
# serve a plan made from what an earlier hook sent). 5: a training
# backward's frees of its forward's copies and pools (ForwardOutputs); 6:
# extern kernels' workspaces (Event.workspace_bytes); 7: a training
# backward's request carries its forward's (ForwardGraph); 8: a training
# backward's gradients may share pools (outputs_released_together); 9:
# extern kernels' allocations one by one (Event.call_allocations); 10: a
# training forward's request carries the cached blocks too; 11: an
# inference graph's segment reservations (PlanOptions.reserve_segments);
# 12: reservations as the wrapper allocates inside the device guard, and
# pool views of a second dtype by Tensor.view(dtype) (with_reservations,
# _recast); 13: training graphs in the hook's private pool, a training
# forward's reservation there (PlanOptions.private_pool, with_private_pool);
# 14: private_pool "auto" by default (forwards whose caller's outputs are
# small, and their backward graphs: _runs_in_private_pool), and a
# backward's ForwardGraph.plan carries the forward's segment reservations;
# 15: a private-pool forward's reservation sized at run time, from its
# backward's plan (reservation_bytes), and backward graphs compiled right
# after their forward; 16: a training forward's request names the saved
# activations its backward frees together (PlanMemoryRequest.release_groups);
# 17: release groups of saved activations read last between the same two
# extern nodes of the backward, cut where holding them would raise its
# simulated peak (release_groups.free_points); 18: a saved activation a
# kernel may take over in place is freed with its taker in that grouping
# (release_groups.in_place_takers).
_CODEGEN_VERSION = 18


def private_pool_value(private_pool):
    """install()'s private_pool checked: True, False or "auto". Raises
    ValueError for anything else."""
    if private_pool is True or private_pool is False or \
            private_pool == "auto":
        return private_pool
    raise ValueError("private_pool must be True, False or 'auto', not "
                     f"{private_pool!r}")


def install(target="127.0.0.1:50051", *, strategy="auto", pool_mode=None,
            timeout=10.0, retries=2, backoff=0.05, send="events",
            client=None, training=False, entry_cache=True, alignment=0,
            probe_workspaces=True, pool_gradients=True, shadow=False,
            reserve_segments=True, private_pool="auto",
            group_saved_activations=False):
    """Makes Inductor's MemoryPlanner take its pools and offsets from the
    memplan-server at `target` (see the module's doc), until uninstall().

    strategy: "auto", "inductor", "best_fit", "optimal" (the service's).
    pool_mode: "none", "intermediates", "outputs" or "combined"; None: read
      torch._inductor.config.memory_pool at each graph. When given, Inductor's
      own planner uses it too when it falls back.
    timeout: seconds one graph's plan may take, retries included; retries,
      backoff: as MemplanClient's (UNAVAILABLE only).
    send: "events" (Inductor's wrapper lines) or "buffers" (its groups with
      live ranges).
    client: a MemplanClient to use instead of one made from target (the
      caller closes it; uninstall() closes only one install made).
    training: also plan training graphs (forward and backward), which
      torch 2.11 gives only its reuse pass (PythonWrapperCodegen.
      run_wrapper_ir_passes); off by default (docs/gpu.md, "Training graphs").
    entry_cache: send, with each inference graph and training forward
      graph, the caching allocator's free blocks that torch.cuda.
      empty_cache() cannot release (those of segments that hold a live
      tensor, such as the input batch's) at compile time, so that the
      service's reserved bytes, its whole-graph peaks and its choice of
      pools (strategy "auto") count on them (cached_blocks(); docs/gpu.md,
      "Peak reserved" and "Run E"). A backward graph goes without: its
      request carries its forward's, and the service models the step's
      start from it (the previous step's gradients freed into the cache,
      which no compile-time snapshot shows). False: plans that depend on
      the graph alone (the service's plan cache then serves every process
      compiling the graph).
    alignment: bytes every offset in a pool is a multiple of (the
      service's PlanOptions.alignment: a power of two up to 2^30); 0: the
      service's default, 64 (Inductor's ALIGN_BYTES). The caching
      allocator aligns every block to 512 bytes.
    probe_workspaces: with send="events", run each cuDNN convolution and
      attention extern kernel of a CUDA graph once at compile time on zeros
      of its inputs' shapes, to measure the workspace its call allocates
      and frees (memplan.workspaces), and send it (Event.workspace_bytes)
      so that the whole-graph peaks count it; costs one call of each
      distinct kernel signature, and its inputs' memory, at compile time.
      False: no kernel runs at compile time; the peaks miss workspaces.
    pool_gradients: with training, send each backward graph's request with
      PlanOptions.outputs_released_together, so that strategy "auto" (its
      partition) may put several gradients in one pool where that keeps
      the backward's predicted peak: autograd takes every gradient as the
      backward returns, into .grad, and zero_grad() releases them
      together, so one allocation serves several of them. On by default:
      on the suite's 12 training models (docs/gpu.md, "Run A") a step's
      allocator calls are 0.68x default's against 0.90x with a pool per
      gradient, at the same peak allocated (12 of 12 within +0.5% of
      default's, as without). A pool's memory returns only when all its
      gradients are released, so turn it off where gradients are released
      one by one (a gradient hook that drops some, or a .grad whose layout
      differs from its parameter's, which autograd copies).
    group_saved_activations: with training, send each training forward
      graph's request with PlanMemoryRequest.release_groups: the saved
      activations its backward frees together (those whose last reader in
      the backward's FX graph, which AOTAutograd partitions before the
      forward compiles, is one node: memplan.release_groups), so that
      strategy "auto" (its partition) may put each group in one pool where
      that keeps the forward's predicted peak. The backward frees a group
      after one kernel, with nothing allocated between its frees, so
      sharing costs nothing there; the forward allocates the pool at its
      first member. Off by default until a GPU run measures it (docs/gpu.md,
      "Saved activations sharing pools": offline, on the H100 capture, the
      CNN forwards' pools fall by 24 to 43% at the same predicted peaks).
      Inductor's partition is wrapped to read the backward
      (torch._inductor.compile_fx.min_cut_rematerialization_partition); a
      caller's own config.custom_partitioner_fn is left alone, and its
      forwards go without.
    shadow: plan nothing, predict everything: every graph (inference and
      training, whether or not torch._inductor.config.memory_planning is
      on) is sent to the service as it would be with these settings, and
      the answer recorded in stats() (with "shadow": True: its
      predicted_peak_bytes, and its baseline_peak_bytes, the peak the graph
      Inductor then compiles reaches as default torch.compile runs it), but
      Inductor plans the graph's memory itself (its reuse pass, or its own
      pools where memory planning is on) and its code is what it would be
      without the hook (_install_shadow). For what memplan would save
      before turning it on, and for comparing the service's baseline with
      default torch.compile's measured peak on the very graph it runs
      (tests/gpu/suite.py's default configuration). The settings above
      shape the requests; training is implied.
    reserve_segments: send each inference graph's request with
      PlanOptions.reserve_segments, and have the graph's code run the
      segment reservations the service names (each a torch.empty of that
      many bytes, freed at once, as the graph starts), so that the caching
      allocator takes one segment the graph's pools split where pools of
      growing sizes would each take their own (docs/gpu.md, "Segment
      reservations"). On by default: it never raises the predicted peak,
      costs one allocation per device and call, and the service names one
      only where its allocator model reserves less with it. Training
      graphs never get one (a training step starts from the previous
      step's cached segments, which an optimizer's state splits: measured,
      a reservation at the step's start then takes a second segment, up
      to +53% reserved with Adam or SGD with momentum, docs/gpu.md "Runs
      U6, W5, V12, P5, P6, R1 and R2") unless they run in a private pool
      (below).
    private_pool: with training, which training graphs the service plans
      run in a private pool of the caching allocator, one torch.cuda.
      MemPool per device that the hook holds and only those graphs
      allocate from (the graph's first line enters it on the calling
      thread, its last line leaves it: with_private_pool), their requests
      sent with PlanOptions.private_pool: with reserve_segments, a training
      forward then reserves its predicted peak there (one segment its
      pools, extern outputs and saved activations split, which the
      backward reuses and the next step's forward finds free again), and
      a forward's request carries no cached blocks of the default pool
      (entry_cache). An optimizer's state, allocated between steps, comes
      from the default pool and splits nothing. But what the step
      allocates outside the compiled graphs (a loss on the logits, its
      backward) cannot use the private pool's free segments, and a large
      output the caller holds into the next step (the logits) splits the
      reservation, so that the next forward's takes a second segment
      (measured on an H100, docs/gpu.md "Runs R3, T1, U7, W6 and V13 to
      V15": CNN training rows 0.88x to 0.98x default torch.compile's peak
      reserved, transformer rows with 62.5 MiB logits up to 1.89x).
      "auto" (the default): a forward runs there where every output its
      caller receives is at most 1 MiB (caller_output_bytes; the caching
      allocator serves those, and the work on them, from its small pool,
      never from the reservation's segment: an image classifier's logits,
      a loss computed in the graph), and its backward where its forward
      does. True: every training graph. False: none (training graphs
      allocate from the default pool, and get no reservation). Never for
      graphs compiled for CUDA graphs (mode="reduce-overhead"), whose
      memory is the cudagraph trees' pool, nor under install(shadow=True).
      The pools outlive uninstall() (the compiled graphs still run in
      them); torch.cuda.empty_cache() does not return a live pool's free
      segments: release_private_pools() drops the hook's pools (new ones
      are made at the next graph call), after which empty_cache() returns
      their segments once their tensors are freed. A forward's
      reservation takes the size its backward's plan names for the step
      (forward_segment_reservations); so that the first step reserves
      it, install(training=True) with a private pool sets AOTAutograd's
      force_non_lazy_backward_lowering while installed: each backward
      compiles right after its forward, before the forward first runs
      (compile errors of a backward then show at the first forward call);
      and Inductor's first-launch autotuning (CachingAutotuner.
      benchmark_all_configs, inside a graph's call) allocates from the
      default pool, so that its buffers take no segment of the private
      pool (_install_autotune_outside_pool).
    While installed, pooled buffers are freed at their last use and each
    pool once its last buffer is (see "Pools freed where the plan frees
    them"), and Inductor's compiled-graph cache keys name the hook's
    settings.
    Raises ValueError for an unknown strategy, pool mode, send or
    private_pool, or an alignment that is not 0 or a power of two up to
    2^30; ImportError without torch. Memory planning itself stays off unless
    torch._inductor.config.memory_planning is True.
    """
    strategy_value(strategy)
    pool_mode_value(pool_mode)
    private_pool_value(private_pool)
    if send not in ("events", "buffers"):
        raise ValueError(f"send must be 'events' or 'buffers', not {send!r}")
    if not isinstance(alignment, int) or alignment < 0 or \
            alignment > 1 << 30 or alignment & (alignment - 1):
        raise ValueError("alignment must be 0 or a power of two up to 2^30, "
                         f"not {alignment!r}")
    from torch._inductor.codegen import memory_planning as mp
    owns_client = client is None
    if owns_client:
        client = MemplanClient(target, timeout=timeout, retries=retries,
                               backoff=backoff)
    state = _install_on(mp, client, strategy, pool_mode, send, owns_client,
                        training, bool(entry_cache), alignment,
                        bool(probe_workspaces), bool(pool_gradients),
                        bool(shadow), bool(reserve_segments),
                        private_pool_value(private_pool),
                        bool(group_saved_activations))
    if shadow:
        _install_shadow(state)
        _install_release_groups(state)
        _install_cache_key(state)  # a cached graph would go unseen
        return
    _install_codegen(state)
    if training:
        _install_training(state)
        _install_release_groups(state)
    _install_cache_key(state)


def _install_on(mp, client, strategy, pool_mode, send, owns_client=False,
                training=False, entry_cache=True, alignment=0,
                probe_workspaces=False, pool_gradients=True, shadow=False,
                reserve_segments=False, private_pool=False,
                group_saved_activations=False):
    """install() on the memory_planning module `mp` (tests hand in a fake):
    the planner's plan and allocate_groups (with shadow, neither: see
    shadow_plan); returns the state."""
    global _state
    if _state is not None:
        uninstall()
    state = _Installed(mp, client, owns_client, strategy, pool_mode, send,
                       training or shadow, entry_cache, alignment,
                       probe_workspaces, pool_gradients, shadow,
                       reserve_segments, private_pool,
                       group_saved_activations)
    if shadow:
        _state = state
        return state

    def plan(planner, lines):
        planner._memplan_lines = [*lines]
        planner._memplan_record = None
        planned = state.original_plan(planner, lines)
        if hasattr(mp, "AllocFromPoolLine"):
            _mark_last_allocations(mp, planned)
        record = planner._memplan_record
        if record is not None and record["input"] == "events":
            try:
                agrees = _usage_agrees(planned, record["response"])
            except Exception as error:  # a check, never a reason to fail
                log.warning("memplan: cannot compare pool usage: %s", error)
                agrees = False
            record["usage_agrees"] = agrees
            if agrees is False:
                log.warning("memplan: Inductor creates or frees a pool at "
                            "other lines than the service's "
                            "first_allocation_event/last_free_event")
        if record is not None:
            step_key = None
            if record["request"].options.private_pool and \
                    record["phase"] == "forward":
                step_key = record["graph_hash"]
            planned = with_reservations(planned, record["response"],
                                        getattr(planner, "wrapper", None),
                                        step_key)
            if record["request"].options.private_pool:
                planned = with_private_pool(planned, record["response"])
        return planned

    def allocate_groups(planner):
        _allocate_groups(state, planner)

    mp.MemoryPlanner.plan = plan
    mp.MemoryPlanner.allocate_groups = allocate_groups
    _state = state
    return state


def uninstall():
    """Gives Inductor its own MemoryPlanner back. Does nothing when the hook
    is not installed."""
    global _state
    if _state is None:
        return
    _state.mp.MemoryPlanner.plan = _state.original_plan
    _state.mp.MemoryPlanner.allocate_groups = _state.original_allocate_groups
    for owner, attribute, value in reversed(_state.restore):
        setattr(owner, attribute, value)
    if _state.owns_client:
        _state.client.close()
    _state = None


def stats():
    """Returns what the hook did since install or reset_stats():
    {"service_plans": graphs whose pools came from the service,
     "fallbacks": graphs Inductor planned itself,
     "graphs": per graph, in order, a dict with "source" ("service" or
       "inductor"), "buffer_groups", "pools" ([(name, device, bytes)]),
       "total_pool_bytes"; for the service also "graph_hash", "input"
       ("events"/"buffers"), "phase" ("inference", "forward" or
       "backward"), "planner", "lower_bound_bytes", "peak_bytes",
       "predicted_peak_bytes", "baseline_peak_bytes" (the whole graph's,
       bytes above its entry, with the plan and without pools),
       "predicted_reserved_bytes", "baseline_reserved_bytes" (the caching
       allocator's segments the service's model predicts, from the
       "cached_blocks" sent: their count and "cached_block_bytes"),
       "predicted_allocations", "baseline_allocations" (its allocator
       calls, with the plan and without pools), "workspace_probe"
       ({"method": "history", "freed" or None, "probed": kernel calls
       run, "events": EXTERN_ALLOCATE events sent with a workspace,
       "bytes": their sum}), "cache",
       "step_reservations" (a private-pool backward: [(device, bytes)],
       the reservations its plan sizes for its forward's step,
       PlanMemoryResponse.forward_segment_reservations; the forward's
       record gets the same, its "predicted_peak_bytes" raised to at least
       them, its plan's own kept as "planned_predicted_peak_bytes"),
       "usage_agrees" (events: Inductor's pool create/free lines are
       at the service's events), "request", "buffers_request" (the same
       graph as buffers, from Inductor's groups) and "response"; for a
       fallback "reason"; with install(shadow=True), "shadow": True (the
       service's plan recorded, not applied)}."""
    with _records_lock:
        graphs = [dict(record) for record in _records]
    return {
        "service_plans": sum(r["source"] == "service" for r in graphs),
        "fallbacks": sum(r["source"] == "inductor" for r in graphs),
        "graphs": graphs,
    }


def reset_stats():
    """Forgets the graphs stats() reports."""
    with _records_lock:
        _records.clear()


def _record(record):
    with _records_lock:
        _records.append(record)


def _allocate_groups(state, planner):
    """MemoryPlanner.allocate_groups, from the service; Inductor's own when
    the service cannot plan the graph."""
    if not planner.buffer_groups:
        state.original_allocate_groups(planner)
        return
    try:
        record = _allocate_from_service(state, planner)
    except Exception as error:  # any failure: Inductor plans, with a warning
        reason = f"{type(error).__name__}: {error}"
        _discard_allocation(state, planner)
        warnings.warn(f"memplan: {reason}; Inductor plans this graph's memory "
                      f"itself", MemplanFallbackWarning, stacklevel=3)
        _run_inductor_planner(state, planner)
        _record({"source": "inductor", "reason": reason,
                 "phase": _graph_phase(state.mp),
                 "graph_id": getattr(state.mp.V.graph, "graph_id", None),
                 "buffer_groups": len(planner.buffer_groups),
                 **_pool_summary(planner)})
        return
    planner._memplan_record = record
    _record(record)


def _run_inductor_planner(state, planner):
    if state.pool_mode is None or not hasattr(state.mp.config, "patch"):
        state.original_allocate_groups(planner)
        return
    with state.mp.config.patch(memory_pool=state.pool_mode):
        state.original_allocate_groups(planner)


def _discard_allocation(state, planner):
    """Undoes a partial _allocate_from_service, so Inductor can allocate."""
    for group in planner.buffer_groups:
        group.allocation = None
    planner.pools = state.mp.AllocationPools()


def _pool_summary(planner):
    pools = [(pool.name, str(pool.device), int(pool.root.get_size_hint()))
             for pools in planner.pools.device_to_pools.values()
             for pool in pools]
    return {"pools": pools, "total_pool_bytes": sum(p[2] for p in pools)}


def _allocate_from_service(state, planner, apply=True):
    """The service's plan of the planner's groups, built into its pools
    (apply=False: only checked against the groups, for shadow_plan);
    returns the graph's stats() record. Raises on any answer the hook
    cannot use."""
    mp = state.mp
    groups = planner.buffer_groups
    for group in groups:
        group.make_allocation()
    allocations = [group.allocation for group in groups]
    pool_mode = state.pool_mode or mp.config.memory_pool
    options = pb.PlanOptions(strategy=strategy_value(state.strategy),
                             pool_mode=pool_mode_value(pool_mode),
                             alignment=state.alignment)
    phase = _graph_phase(mp)
    if state.pool_gradients and phase == "backward":
        options.outputs_released_together = True
    private = apply and _runs_in_private_pool(state, mp, phase)
    if private:
        options.private_pool = True
    if state.reserve_segments and (phase == "inference" or (
            private and phase == "forward")):
        options.reserve_segments = True
    buffers_request = pb.PlanMemoryRequest(
        buffers=buffers_from_groups(groups), options=options)

    request, allocate_lines, memory = buffers_request, None, None
    lines = getattr(planner, "_memplan_lines", None)
    if state.send == "events" and lines is not None:
        memory = _graph_memory(state, lines)
        request, allocate_lines = _events_request(mp, lines, groups, options,
                                                  memory)
    if state.entry_cache and phase == "inference" or (
            state.entry_cache and phase == "forward" and not private):
        request.cached_blocks.extend(_entry_cache(
            {str(allocation.device) for allocation in allocations}))
    if state.group_saved_activations and phase == "forward":
        request.release_groups.extend(_saved_release_groups(mp.V.graph,
                                                            request))
    if request.events and memory is not None:
        forward = forward_graph(memory.forward, getattr(
            mp.V.graph, "graph_input_names", []))
        if forward is not None:
            request.forward.CopyFrom(forward)
    response = state.client.plan(request)

    placement = read_placement(
        response, [group.names for group in groups],
        [str(allocation.device) for allocation in allocations],
        allocate_lines if request is not buffers_request else None)
    if apply:
        sizes, offsets = _expressions(placement, allocations)
        _build_pools(state, planner, placement, allocations, sizes, offsets)
    _note_forward_pools(mp.V.graph, groups, placement, request, response,
                        applied=apply)
    result = {
        "source": "service",
        "input": "buffers" if request is buffers_request else "events",
        "graph_hash": response.graph_hash,
        "buffer_groups": len(groups),
        "pools": [(name, device, size)
                  for name, device, size, _ in placement.pools],
        "total_pool_bytes": response.stats.total_pool_bytes,
        "lower_bound_bytes": response.stats.lower_bound_bytes,
        "peak_bytes": response.stats.peak_bytes,
        "predicted_peak_bytes": response.stats.predicted_peak_bytes,
        "baseline_peak_bytes": response.stats.baseline_peak_bytes,
        "predicted_reserved_bytes": response.stats.predicted_reserved_bytes,
        "baseline_reserved_bytes": response.stats.baseline_reserved_bytes,
        "cached_blocks": len(request.cached_blocks),
        "cached_block_bytes": sum(b.size_bytes for b in request.cached_blocks),
        "predicted_allocations": response.stats.predicted_allocations,
        "segment_reservations": [
            (r.device, r.size_bytes) for r in response.segment_reservations],
        "baseline_allocations": response.stats.baseline_allocations,
        "workspace_probe": _probe_summary(memory, request),
        "phase": _graph_phase(mp),
        "graph_id": getattr(mp.V.graph, "graph_id", None),
        "planner": response.stats.planner,
        "cache": pb.CacheStatus.Name(response.cache),
        "strategy": state.strategy, "pool_mode": pool_mode,
        "usage_agrees": None,
        "request": request, "buffers_request": buffers_request,
        "response": response,
    }
    if phase == "forward" and getattr(mp.V.graph, "graph_id", None) \
            is not None:
        def update(record):
            record.private = private
            if private and response.segment_reservations:
                record.reservation_key = response.graph_hash
                record.stats_record = result
        _note_forward(mp.V.graph.graph_id, update)
    if phase == "backward" and private:
        with _forward_outputs_lock:
            forward = _forward_outputs.get(
                getattr(mp.V.graph, "graph_id", None))
        result["step_reservations"] = _apply_step_reservations(
            forward, response)
    return result


def _probe_summary(memory, request):
    """The workspace probe of one graph: how it measured ("history",
    "freed", or None: nothing probed), the calls it ran, and the
    EXTERN_ALLOCATE events with a workspace and their bytes."""
    probe = getattr(memory, "workspace", None)
    sized = [e.workspace_bytes for e in request.events
             if e.kind == pb.EVENT_KIND_EXTERN_ALLOCATE and e.workspace_bytes]
    return {"method": getattr(probe, "method", None),
            "probed": getattr(probe, "probed", 0),
            "events": len(sized), "bytes": int(sum(sized))}


def cached_blocks(segments, devices):
    """CachedBlocks for `devices` ({"cuda:0", ...}) from `segments`
    (torch.cuda.memory_snapshot()): the free ("inactive") blocks of the
    segments that hold a block in use, which torch.cuda.empty_cache()
    cannot release, in the snapshot's order. Free segments are left out:
    empty_cache() may release them before the graph runs."""
    blocks = []
    for segment in segments:
        device = f"cuda:{segment.get('device', 0)}"
        if device not in devices:
            continue
        states = [block.get("state", "") for block in segment["blocks"]]
        if not any(state.startswith("active") for state in states):
            continue
        small = segment.get("segment_type") == "small"
        for block in segment["blocks"]:
            if block.get("state") == "inactive" and block["size"] > 0:
                blocks.append(pb.CachedBlock(device=device,
                                             size_bytes=int(block["size"]),
                                             small_pool=small))
    return blocks


def _entry_cache(devices):
    """cached_blocks() of the CUDA caching allocator now (the graph's
    compile time); [] without CUDA devices or where the snapshot cannot be
    read (logged)."""
    if not any(device.startswith("cuda") for device in devices):
        return []
    try:
        import torch
    except ImportError:  # Inductor's stand-ins in tests
        return []
    try:
        return cached_blocks(torch.cuda.memory_snapshot(), devices)
    except Exception as error:  # never a reason to fail the plan
        log.warning("memplan: cannot read the caching allocator's blocks: "
                    "%s", error)
        return []


def _graph_memory(state, lines):
    """GraphMemory of the graph being planned, with Inductor's per-node
    memory estimate and, with install(probe_workspaces=True), its extern
    kernels' workspaces; None where Inductor's objects are not there
    (tests' stand-ins) or cannot be read (logged)."""
    mp = state.mp
    if not hasattr(mp, "AllocFromPoolLine"):
        return None
    try:
        probe = None
        if state.probe_workspaces:
            from memplan.workspaces import WorkspaceProbe
            from torch._inductor import ir
            probe = WorkspaceProbe(
                mp.V.graph, lambda item: isinstance(item, ir.MultiOutput))
        return GraphMemory(mp.V.graph, lines, _scheduler_node_bytes(), probe)
    except Exception as error:  # never a reason to fail the plan
        log.warning("memplan: cannot describe the memory outside the plan: "
                    "%s", error)
        return None


def _scheduler_node_bytes():
    """Inductor's estimate of the bytes in use at each scheduler node, as
    its reuse pass's EfficientPeakEstimate computes it (torch 2.11:
    memory.estimate_peak_memory's second result); [] when not available.
    The service's baseline then takes Inductor's own reuse decisions."""
    from torch._inductor import memory
    from torch._inductor.codegen import wrapper as W
    if not hasattr(W, "EfficientPeakEstimate"):
        return []
    estimate = memory.estimate_peak_memory
    results = []

    def recording(*args, **kwargs):
        results.append(estimate(*args, **kwargs))
        return results[-1]

    memory.estimate_peak_memory = recording
    try:
        W.EfficientPeakEstimate()
    finally:
        memory.estimate_peak_memory = estimate
    if not results:
        return []
    return [int(b) for b in results[-1][1]]


def _graph_phase(mp):
    """The phase of the graph being compiled: "inference", "forward" or
    "backward"."""
    graph = mp.V.graph
    phase = getattr(graph, "get_training_phase", None)
    if callable(phase):
        try:
            return str(phase())
        except Exception:
            pass
    if getattr(graph, "is_backward", False):
        return "backward"
    return "inference" if getattr(graph, "is_inference", True) else "forward"


def _cudagraphs(mp):
    """Whether the graph being compiled is to run under CUDA graphs
    (torch.compile(mode="reduce-overhead"): Inductor's config.triton.
    cudagraphs, patched in for the compile). Inductor's cudagraph trees
    then allocate the graph's memory from a pool of their own and check
    that its outputs live there, so the hook's private pool must not take
    them (measured on an H100: "These storage data ptrs are not allocated
    in pool ..." when it did)."""
    triton = getattr(getattr(mp, "config", None), "triton", None)
    return bool(getattr(triton, "cudagraphs", False))


# The caching allocator's small-allocation limit (kSmallSize in torch 2.11's
# CUDACachingAllocator.cpp): a request of at most 1 MiB comes from the small
# pool's 2 MiB segments, never from a large segment (a reservation's).
_SMALL_ALLOCATION_BYTES = 1 << 20


def caller_output_bytes(graph):
    """The graph being compiled (V.graph), a training forward: the bytes
    (storage size hints) of each output its caller receives, in order:
    AOTAutograd's user-visible outputs (the FX output node's meta
    "user_visible_output_idxs", which torch 2.11's fw_compiler_base sets;
    the activations saved for the backward are the other outputs). None
    where the graph does not say which they are or a size is unknown."""
    output = next(node for node in graph.module.graph.nodes
                  if node.op == "output")
    indices = output.meta.get("user_visible_output_idxs")
    if indices is None:
        return None
    args = output.args[0] if isinstance(output.args[0], (list, tuple)) \
        else (output.args[0],)
    sizes = []
    for index in indices:
        if not 0 <= index < len(args):
            return None
        value = getattr(args[index], "meta", {}).get("val")
        if value is None or not hasattr(value, "untyped_storage"):
            return None
        nbytes = value.untyped_storage().nbytes()
        if not isinstance(nbytes, int):  # a symbolic size: its hint
            nbytes = graph.sizevars.size_hint(nbytes.node.expr)
        sizes.append(int(nbytes))
    return sizes


def _runs_in_private_pool(state, mp, phase):
    """Whether the training graph being compiled, planned by the service and
    run with the plan, runs in the hook's private pool (install's
    private_pool): never an inference graph or one compiled for CUDA graphs
    (_cudagraphs); with True every other; with "auto" a forward whose
    caller's outputs are each at most _SMALL_ALLOCATION_BYTES
    (caller_output_bytes: the loss computed inside the graph, an image
    classifier's logits), and a backward whose forward runs there
    (ForwardOutputs.private, noted once the forward's plan is built)."""
    if not state.private_pool or phase not in ("forward", "backward") or \
            _cudagraphs(mp):
        return False
    if state.private_pool != "auto":
        return True
    graph = mp.V.graph
    graph_id = getattr(graph, "graph_id", None)
    if phase == "backward":
        with _forward_outputs_lock:
            record = _forward_outputs.get(graph_id)
        return bool(record is not None and record.private)
    try:
        sizes = caller_output_bytes(graph)
    except Exception as error:  # never a reason to fail the plan
        log.warning("memplan: cannot read the forward's outputs: %s", error)
        sizes = None
    return sizes is not None and all(
        size <= _SMALL_ALLOCATION_BYTES for size in sizes)


def _events_request(mp, lines, groups, options, memory=None):
    """The graph as events, and each group's ALLOCATE line. `memory`: the
    GraphMemory that describes the lines outside the plan, or None."""
    removed = set(mp.V.graph.removed_buffers)
    allocations = {group.names[0]: group.allocation for group in groups}
    events = events_from_lines(lines, allocations, removed, memory)
    line_of = {event.name: i for i, event in enumerate(events)
               if event.kind == pb.EVENT_KIND_ALLOCATE}
    named = {event.name for event in events if event.name}
    request = pb.PlanMemoryRequest(
        events=events, options=options,
        output_names=[str(name) for name in mp.V.graph.get_output_names()],
        removed_buffers=sorted(named & {str(name) for name in removed}))
    planning = [event for event in events if event.kind in (
        pb.EVENT_KIND_ALLOCATE, pb.EVENT_KIND_FREE_IF_NOT_REUSED)]
    if memory is not None and memory.scheduler_node_bytes and all(
            event.HasField("scheduler_node") for event in planning):
        request.scheduler_node_bytes.extend(memory.scheduler_node_bytes)
    else:
        for event in planning:
            event.ClearField("scheduler_node")
    return request, [line_of[group.names[0]] for group in groups]


def _expressions(placement, allocations):
    """Sympy expressions of the pools' sizes and the groups' offsets: the
    integers, or, when a buffer's size is symbolic (dynamic shapes), the
    service's symbolic_size / symbolic_offset (HookError without them)."""
    import sympy
    symbols = {}
    for allocation in allocations:
        for symbol in getattr(allocation.symbolic_size, "free_symbols", ()):
            symbols[str(symbol)] = symbol
    if not symbols:
        return ([sympy.Integer(size) for _, _, size, _ in placement.pools],
                [sympy.Integer(offset) for _, offset, _ in placement.offsets])
    texts = [text for *_, text in placement.pools]
    texts += [text for *_, text in placement.offsets]
    if not all(texts):
        raise HookError("buffer sizes are symbolic (dynamic shapes) and the "
                        "service returned no symbolic pool sizes and offsets")
    functions = _sympy_functions()
    sizes = [parse_symbolic(text, symbols, functions)
             for *_, text in placement.pools]
    offsets = [parse_symbolic(text, symbols, functions)
               for *_, text in placement.offsets]
    return sizes, offsets


def _build_pools(state, planner, placement, allocations, sizes, offsets):
    """Inductor's AllocationPools holding the service's pools."""
    mp = state.mp
    roots = [state.root_class(size_bytes, sizes[i], mp.LiveRanges)
             for i, (_, _, size_bytes, _) in enumerate(placement.pools)]
    devices = [None] * len(roots)
    for allocation, (index, _, _), offset in zip(allocations,
                                                  placement.offsets, offsets):
        roots[index].place(allocation, offset)
        devices[index] = allocation.device
        allocation.mark_allocated()
    pools = planner.pools
    for (name, _, _, _), root, device in zip(placement.pools, roots, devices):
        if device is None:
            raise HookError(f"the service's {name} holds no buffer")
        pool = mp.AllocationPool(device=device, root=root, can_expand=False)
        pools.device_to_pools.setdefault(device, []).append(pool)
        pool.finalize(name)


def _reservation_size(reservation, step_key):
    """The size expression of one reservation's allocation: its size_bytes,
    or with `step_key` (a private-pool forward's), the size read at run time
    (reservation_bytes), which its backward's plan may enlarge."""
    size = int(reservation.size_bytes)
    if step_key is None:
        return str(size), ""
    key = f"{step_key}@{reservation.device}"
    return (f"memplan_reservation_bytes({key!r}, {size})",
            "from memplan.inductor import reservation_bytes as "
            "memplan_reservation_bytes; ")


def reservation_lines(response, step_key=None):
    """The wrapper lines that run `response`'s segment reservations, to go
    before the graph's first line: per reservation, a tensor of its
    size_bytes (with `step_key`, a private-pool forward's: the size
    reservation_bytes gives at run time) on its device, deleted at once
    (the caching allocator keeps its segment cached for the graph's pools
    to split). torch.empty's argument parsing costs about 30 us a call from
    Python (cProfile, run L1 in docs/gpu.md): with_reservations writes them
    as the wrapper allocates where it can."""
    lines = []
    for i, reservation in enumerate(response.segment_reservations):
        name = f"memplan_segment{i}"
        size, imports = _reservation_size(reservation, step_key)
        lines.append(f"{imports}{name} = torch.empty(({size},), "
                     f"dtype=torch.uint8, device={reservation.device!r}); "
                     f"del {name}")
    return lines


def with_reservations(lines, response, wrapper, step_key=None):
    """A graph's planned wrapper `lines` with `response`'s segment
    reservations run before any line that touches memory (every line
    line_kind finds other than OTHER: an allocation, a pool's view, an
    extern kernel's output, an input's free). A reservation on a CUDA
    device is written as `wrapper` allocates (make_allocation:
    `memplan_segment0 = empty_strided_cuda((BYTES, ), (1, ),
    torch.uint8); del memplan_segment0`, Inductor's fast path on the
    current device) as the first line inside the graph's first device
    guard of its device (EnterDeviceContextManagerLine, `with
    torch.cuda._DeviceGuard(0):`), where no line before that guard touches
    memory; any other reservation (no such guard, a wrapper that allocates
    otherwise, as cpp_wrapper) as reservation_lines writes it, before the
    first line. With `step_key` (a training forward in the hook's private
    pool: its graph_hash), each size is read at run time
    (reservation_bytes: the size its backward's plan names for the step,
    PlanMemoryResponse.forward_segment_reservations). Returns a new
    list."""
    first = reservation_lines(response, step_key)
    if not first:
        return list(lines)
    guards = {}  # device index -> position of its first device guard
    for i, line in enumerate(lines):
        names = {cls.__name__ for cls in type(line).__mro__}
        if "EnterDeviceContextManagerLine" in names:
            guards.setdefault(getattr(line, "device_idx", None), i)
        elif line_kind(line) != pb.EVENT_KIND_OTHER:
            break  # memory touched: later guards come too late
    inside = {}  # position of a guard -> lines to write after it
    kept = []
    for i, reservation in enumerate(response.segment_reservations):
        text = _wrapper_reservation(wrapper, f"memplan_segment{i}",
                                    reservation, guards, step_key)
        if text is None:
            kept.append(first[i])
        else:
            inside.setdefault(guards[text[0]], []).append(text[1])
    result = kept
    for i, line in enumerate(lines):
        result.append(line)
        result.extend(inside.get(i, ()))
    return result


def _wrapper_reservation(wrapper, name, reservation, guards, step_key=None):
    """(device index, line) of one reservation written as `wrapper`
    allocates, inside the device guard `guards` has for its device (with
    `step_key`, the size read at run time: _reservation_size); None where
    it cannot be (with_reservations)."""
    make = getattr(wrapper, "make_allocation", None)
    kind, _, index = reservation.device.partition(":")
    if make is None or kind != "cuda" or not index.isdigit() \
            or int(index) not in guards:
        return None
    try:
        import torch
        text = make(name, torch.device(reservation.device), torch.uint8,
                    (int(reservation.size_bytes),), (1,))
    except Exception as error:  # written as before, never a failure
        log.warning("memplan: writes a reservation with torch.empty: %s",
                    error)
        return None
    if not isinstance(text, str) or not text.startswith(
            f"{name} = empty_strided_cuda("):
        return None
    if step_key is not None:
        literal = f"({int(reservation.size_bytes)}, )"
        if text.count(literal) != 1:
            return None
        size, imports = _reservation_size(reservation, step_key)
        text = imports + text.replace(literal, f"({size}, )")
    return int(index), f"{text}; del {name}"


# --- A private-pool forward's reservation sized for its step ----------------
#
# A training forward in the hook's private pool reserves its own predicted
# peak (rounded down) at its entry; its backward's requests beyond what the
# forward's frees leave in that segment take segments of their own in the
# pool. The backward's plan names the reservation sized for the whole step
# (PlanMemoryResponse.forward_segment_reservations, core/entry_state.h
# StepReservation), and the forward's code reads its size at run time.
# install(training=True) has AOTAutograd compile a backward right after its
# forward (torch._functorch.config.force_non_lazy_backward_lowering), so
# the size is known before the forward first runs: a pool never caches the
# smaller one first.

_step_reservations = {}  # "graph_hash@device" -> bytes its backward named
_made_reservations = {}  # "graph_hash@device" -> bytes reserved in the pool
_STEP_RESERVATIONS_KEPT = 4096


def reservation_bytes(key, planned):
    """The bytes a private-pool forward's segment reservation `key`
    ("graph_hash@device") allocates at its entry: `planned` (its plan's
    reservation), or the step's (its backward's plan), once, then the same
    bytes at every call while the hook's pools live: a pool that cached
    one size never takes a second segment for another
    (release_private_pools() forgets them). Called by the generated
    code."""
    made = _made_reservations.get(key)
    if made is None:
        made = max(int(planned), _step_reservations.get(key, 0))
        _made_reservations[key] = made
    return made


def _apply_step_reservations(forward, response):
    """A private-pool backward's plan: the step reservations it names for
    its forward (`forward`: its ForwardOutputs), noted for reservation_bytes
    under the forward's key, and the forward's stats() record's predicted
    peak raised to at least them (the reservation is allocated and freed
    at the forward's entry, before anything else). Returns [(device,
    bytes)]."""
    named = [(r.device, int(r.size_bytes))
             for r in response.forward_segment_reservations]
    key = getattr(forward, "reservation_key", None)
    if not named or key is None:
        return []
    for device, size in named:
        _step_reservations[f"{key}@{device}"] = size
    while len(_step_reservations) > _STEP_RESERVATIONS_KEPT:
        _step_reservations.pop(next(iter(_step_reservations)))
    record = forward.stats_record
    if record is not None and len({device for device, _ in named}) == 1 and \
            len({r.device for r in record["response"].pools}) <= 1:
        record["planned_predicted_peak_bytes"] = record["predicted_peak_bytes"]
        record["predicted_peak_bytes"] = max(record["predicted_peak_bytes"],
                                             named[0][1])
        record["step_reservations"] = named
    return named


# --- Training graphs in a private pool ---------------------------------------

_private_pools = {}  # CUDA device index -> the hook's torch.cuda.MemPool
_open_route = threading.local()  # .route: the calling thread's open _PoolRoute


class _PoolRoute:
    """The calling thread's allocations on CUDA devices `devices` (indices)
    routed to the hook's private pools (torch.cuda.use_mem_pool, entered)
    until close()."""

    def __init__(self, torch, devices):
        self._torch = torch
        self._devices = tuple(devices)
        self._contexts = []
        self._closed = False
        self._enter()

    def _enter(self):
        for index in self._devices:
            pool = _private_pools.get(index)
            if pool is None:
                pool = _private_pools.setdefault(index,
                                                 self._torch.cuda.MemPool())
            context = self._torch.cuda.use_mem_pool(pool, index)
            context.__enter__()
            self._contexts.append(context)

    def _leave(self):
        while self._contexts:
            self._contexts.pop().__exit__(None, None, None)

    def close(self):
        """Leaves the pools (idempotent)."""
        self._closed = True
        self._leave()
        if getattr(_open_route, "route", None) is self:
            _open_route.route = None

    @contextlib.contextmanager
    def suspended(self):
        """Leaves the pools for the body (its allocations from the default
        pool), then enters them again unless the route was closed."""
        self._leave()
        try:
            yield
        finally:
            if not self._closed:
                self._enter()


def enter_private_pool(devices):
    """Routes the calling thread's allocations on the CUDA devices
    `devices` (a sequence of device indices) to the hook's private pool of
    each (a torch.cuda.MemPool made at the first call and held by the hook
    until release_private_pools()), until the returned route's close().
    The generated code of a training graph planned with install(training=
    True, private_pool=True) calls it as its first line and closes the
    route as its last (with_private_pool): a graph's call runs on one
    thread (a backward's on autograd's), so only the graph's own
    allocations enter the pool. A route that a graph left open (it raised
    before its last line) is closed first. While the current stream
    captures a CUDA graph (torch.cuda.graph), the route enters nothing:
    the capture's own pool holds the graph's memory."""
    import torch
    stale = getattr(_open_route, "route", None)
    if stale is not None:
        stale.close()
    capturing = torch.cuda.is_current_stream_capturing()
    route = _PoolRoute(torch, () if capturing else devices)
    _open_route.route = route
    return route


def release_private_pools():
    """Drops the hook's private pools: once the tensors allocated from them
    are freed (a training step's outputs and gradients), torch.cuda.
    empty_cache() returns their segments to the device, which it does not
    while a pool lives. The next call of a graph that runs in a private pool
    makes a new one; a private-pool forward's next reservation takes the
    size its step names (reservation_bytes)."""
    _private_pools.clear()
    _made_reservations.clear()


def with_private_pool(lines, response):
    """A training graph's planned wrapper `lines` run in the hook's private
    pools (PlanOptions.private_pool): a first line that enters the pool of
    every CUDA device of `response`'s pools and segment reservations
    (enter_private_pool), before any line that touches memory and before
    the reservations, and a last line that leaves them, after the graph's
    last allocation and free (the wrapper's return allocates nothing).
    Lines unchanged where the response names no CUDA device. Returns a new
    list."""
    devices = set()
    for item in [*response.pools, *response.segment_reservations]:
        kind, _, index = item.device.partition(":")
        if kind == "cuda":
            # "cuda" alone: the current device (use_mem_pool's None)
            devices.add(int(index) if index.isdigit() else None)
    if not devices:
        return list(lines)
    order = tuple(sorted(devices, key=lambda d: -1 if d is None else d))
    enter = ("from memplan.inductor import enter_private_pool as "
             "memplan_enter_private_pool; memplan_pool_route = "
             f"memplan_enter_private_pool({order!r})")
    leave = "memplan_pool_route.close(); del memplan_pool_route"
    return [enter, *lines, leave]


def _usage_agrees(lines, response):
    """Whether Inductor's mark_first_last_usage created and freed each pool
    at the events the service named (lines and events correspond 1:1); None
    when the lines hold no pool lines to check."""
    first, last = {}, {}
    pool_lines = 0
    for i, line in enumerate(lines):
        class_names = {cls.__name__ for cls in type(line).__mro__}
        if "AllocFromPoolLine" in class_names:
            pool_lines += 1
            if line.is_first_pool_usage:
                first[line.group.allocation.pool.name] = i
        if "DeallocFromPoolLine" in class_names and line.is_last_pool_usage:
            last[line.group.allocation.pool.name] = i
    if not pool_lines:
        return None
    for pool in response.pools:
        expected_first = (pool.first_allocation_event
                          if pool.HasField("first_allocation_event") else None)
        expected_last = (pool.last_free_event
                         if pool.HasField("last_free_event") else None)
        if (first.get(pool.name) != expected_first
                or last.get(pool.name) != expected_last):
            return False
    return True
