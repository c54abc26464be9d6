"""memplan.workspaces: the scratch memory (workspace) an extern kernel
allocates inside its call, measured once at compile time.

An extern kernel of Inductor's wrapper code (torch 2.11: an
ExternKernelAlloc such as `extern_kernels.convolution`, or a FallbackKernel
such as `aten.convolution_backward` or the efficient-attention backward)
allocates its outputs and, inside the call, a workspace that it frees
before returning: cuDNN's convolution workspaces, attention's scratch
buffers. The wrapper lines do not show it, yet it counts in the graph's
peak (resnet18's inference graph: 9.2 MiB inside its first convolution on
an H200; docs/gpu.md, "Line traces"). The hook sends it as the
EXTERN_ALLOCATE event's workspace_bytes.

WorkspaceProbe runs each such kernel on zeros of its inputs' shapes,
strides and dtypes (the size hints of a dynamic graph), once to warm up
(cuDNN's heuristics, handles, lazy initialization) and once under the CUDA
caching allocator's memory history (torch.cuda.memory.
_record_memory_history): the workspace is the most bytes the call held at
once beyond what it still holds when it returns (its outputs):
transient_peak(). Only kernels that run correctly on any values and
allocate scratch memory are probed (PROBED_OPS); every other kernel, every
CPU kernel and every probe that fails (out of memory, an op whose inputs
cannot be made) counts 0 bytes, logged. Results are cached per process by
the call's signature (op, shapes, strides, dtypes, constant arguments).

From the same trace the probe also keeps the call's allocations in order
(call_allocations()): each output, found by its storage's address, and
each scratch block with the allocation it is freed before. The hook sends
them as the event's call_allocations, so that the service replays them
one by one as the caching allocator serves them (a convolution backward
may allocate a copy of its gradient before its outputs and a cuDNN
workspace after them; each block may leave a rest of a cached block the
allocator does not split off, counted as allocated) instead of one
workspace after the outputs.

While a user records the allocator's memory history, the probe does not
touch it: it counts the bytes the call allocated and freed (the
allocator's cumulative allocated_bytes.all.freed), an upper bound of the
workspace where a kernel frees several scratch buffers one after another,
and keeps no allocations.
"""

import logging
import threading

log = logging.getLogger(__name__)

# The extern kernels probed (str(op_overload)): they allocate a workspace
# inside their call and run on zeros of any shape (no indices, no data-
# dependent shapes that zeros could break).
PROBED_OPS = frozenset({
    "aten.convolution.default",
    "aten.convolution_backward.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_efficient_attention_backward.default",
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_flash_attention_backward.default",
    "aten._scaled_dot_product_cudnn_attention.default",
    "aten._scaled_dot_product_cudnn_attention_backward.default",
    "aten._efficient_attention_forward.default",
    "aten._efficient_attention_backward.default",
    "aten._flash_attention_forward.default",
    "aten._flash_attention_backward.default",
})

# Trace entries of the memory history longer than this are not kept (the
# probe's own call allocates a handful of blocks).
_HISTORY_ENTRIES = 1 << 14
# Call signatures whose workspace is known -> bytes; the most recent
# _CACHE_KEPT are kept.
_cache = {}
_cache_lock = threading.Lock()
_CACHE_KEPT = 4096


def transient_peak(trace):
    """The workspace of one call from the allocator's trace of it.

    trace: the call's entries of torch.cuda.memory._snapshot()'s
    device_traces for its device, in order: dicts with "action" ("alloc",
    "free_requested", "free_completed", "segment_alloc", ...), "addr" and
    "size" (bytes, the block's rounded size). Returns (peak, held): peak,
    the most bytes the call's allocations held at once; held, the bytes
    still held at the end (its outputs). A block counts from its alloc to
    the first of its free_requested / free_completed; frees of blocks
    allocated before the trace count nothing. The workspace is peak - held.
    """
    live, current, peak = {}, 0, 0
    for entry in trace:
        action = entry.get("action")
        if action == "alloc":
            size = int(entry.get("size", 0))
            live[entry.get("addr")] = size
            current += size
            peak = max(peak, current)
        elif action in ("free_requested", "free_completed"):
            current -= live.pop(entry.get("addr"), 0)
    return peak, current


def call_allocations(trace, output_addresses):
    """The allocations of one call, in order, from the allocator's trace
    of it (as transient_peak's).

    output_addresses: the address of each of the call's outputs (its
    storage's data_ptr; None for an output that is not a tensor), in the
    order of the event's output_bytes. Returns a tuple of
    ("output", index) and ("scratch", bytes, freed_before) entries, as
    Event.call_allocations: freed_before is the index of the first kept
    allocation after the block's free (len: at the return). An allocation
    the call still holds at its end that is no output (a kernel's own
    cache) is left out. Empty when no allocation is an output or scratch.
    """
    outputs = {a: k for k, a in enumerate(output_addresses) if a is not None}
    allocations = []  # [address, size, allocations before its free or None]
    live = {}
    for entry in trace:
        action = entry.get("action")
        if action == "alloc":
            live[entry.get("addr")] = len(allocations)
            allocations.append([entry.get("addr"), int(entry.get("size", 0)),
                                None])
        elif action in ("free_requested", "free_completed"):
            k = live.pop(entry.get("addr"), None)
            if k is not None:
                allocations[k][2] = len(allocations)
    # kept_before[k]: the kept allocations among the first k.
    result, kept_before, named = [], [0], set()
    for address, size, freed in allocations:
        output = outputs.get(address) if freed is None else None
        if freed is not None and size > 0:
            result.append(["scratch", size, freed])
        elif output is not None and output not in named:
            named.add(output)
            result.append(("output", output))
        kept_before.append(len(result))
    for entry in result:
        if entry[0] == "scratch":
            entry[2] = kept_before[entry[2]]
    if not any(entry[0] == "scratch" for entry in result):
        return ()
    return tuple(tuple(entry) for entry in result)


def multi_outputs(node, is_output):
    """The MultiOutput nodes of a multi-output kernel's IR node (those of
    its `outputs` that is_output tells), flattened in order: the order of
    the event's output_bytes. [] for any other kernel."""
    found, pending = [], [getattr(node, "outputs", None) or []]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(reversed(item))
        elif is_output(item):
            found.append(item)
    return found


def output_paths(node, is_output):
    """The paths (MultiOutput.indices) from a kernel call's result to each
    of its outputs, in the order of the event's output_bytes: [()] for a
    kernel whose result is its one output (is_output None, or no
    MultiOutput among the node's outputs)."""
    found = multi_outputs(node, is_output) if is_output else []
    if not found:
        return [()]
    return [tuple(getattr(item, "indices", ())) for item in found]


def _address(result, path):
    """The storage address of the output at `path` of a call's result
    (None: not a tensor)."""
    try:
        for _, index in path:
            result = result[index]
        return result.untyped_storage().data_ptr()
    except Exception:
        return None


class WorkspaceProbe:
    """Measures extern kernels' workspaces for one graph being compiled
    (V.graph: its sizevars give the size hints). Call it with an extern
    kernel IR node; it returns the workspace in bytes (0 when not probed);
    allocations(node) gives the call's allocations in order.

    is_output: tells a multi-output kernel's MultiOutput nodes (Inductor's
    ir.MultiOutput), to find its outputs among the call's allocations;
    None: every kernel's result is its one output.
    """

    def __init__(self, graph, is_output=None):
        self.graph = graph
        self.is_output = is_output
        self.method = None  # "history" or "freed", once a call was probed
        self.probed = 0     # calls run on the GPU for this graph

    def __call__(self, node):
        return self.measure(node)[0]

    def allocations(self, node):
        """The call's allocations in order (call_allocations()); () where
        not probed or measured without the memory history."""
        return self.measure(node)[1]

    def measure(self, node):
        """(workspace bytes, allocations) of `node`'s call, measured once
        per call signature; (0, ()) when not probed."""
        op = getattr(node, "op_overload", None)
        if op is None or str(op) not in PROBED_OPS:
            return 0, ()
        try:
            device = node.get_device()
            if device is None or device.type != "cuda":
                return 0, ()
            paths = output_paths(node, self.is_output)
            key, run = self._call_of(node, op)
            key = (key, repr(paths))
            with _cache_lock:
                if key in _cache:
                    return _cache[key]
            workspace, allocations = self._measure(run, device, paths)
        except Exception as error:  # never a reason to fail the plan
            log.info("memplan: no workspace probe for %s: %s", op, error)
            return 0, ()
        result = (int(workspace), tuple(allocations))
        with _cache_lock:
            _cache[key] = result
            while len(_cache) > _CACHE_KEPT:
                _cache.pop(next(iter(_cache)))
        return result

    # --- the call ----------------------------------------------------------

    def _hint(self, value):
        """A constant argument with its symbols replaced by size hints."""
        import sympy
        if isinstance(value, sympy.Expr):
            return int(self.graph.sizevars.size_hint(value, fallback=1))
        if isinstance(value, (list, tuple)):
            return type(value)(self._hint(v) for v in value)
        return value

    def _spec(self, node):
        """(sizes, strides, dtype, device) of a tensor input, as hints."""
        sizes = self.graph.sizevars.size_hints(node.get_size(), fallback=1)
        strides = self.graph.sizevars.size_hints(node.get_stride(),
                                                 fallback=1)
        device = node.get_device()
        return (tuple(int(s) for s in sizes), tuple(int(s) for s in strides),
                node.get_dtype(), str(device) if device is not None else "cpu")

    def _call_of(self, node, op):
        """(signature, run) for the kernel's call: run() makes zeros of the
        inputs and returns (inputs, call), call() calling the op on them
        (returning its outputs)."""
        specs = [self._spec(x) for x in node.inputs]
        constants = [self._hint(c) for c in getattr(node, "constant_args", ())]
        kwargs = {k: self._hint(v)
                  for k, v in (getattr(node, "kwargs", None) or {}).items()}
        unflatten = getattr(node, "unflatten_args", None)
        key = (str(op), tuple(specs), repr(constants),
               repr(sorted(kwargs.items())))
        return key, self._runner(op, specs, constants, kwargs, unflatten)

    @staticmethod
    def _runner(op, specs, constants, kwargs, unflatten):
        """run() for _call_of."""

        def run():
            import torch
            tensors = [torch.empty_strided(sizes, strides, dtype=dtype,
                                           device=where).zero_()
                       for sizes, strides, dtype, where in specs]
            if callable(unflatten):
                args, call_kwargs = unflatten(tensors, constants)
                call_kwargs = {**kwargs, **call_kwargs}
            else:
                args, call_kwargs = [*tensors, *constants], kwargs
            return tensors, lambda: op(*args, **call_kwargs)
        return run

    # --- the measurement ---------------------------------------------------

    def _measure(self, run, device, paths):
        """(workspace, allocations) of one call, `paths` leading from its
        result to its outputs (output_paths)."""
        import torch
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        with unset_fake_temporarily(), torch.no_grad(), \
                torch.cuda.device(device):
            inputs, call = run()
            warm = call()  # cuDNN's heuristics, handles, lazy init
            del warm
            torch.cuda.synchronize()
            self.probed += 1
            if _history_in_use():
                self.method = "freed"
                return _freed_during(call), ()
            self.method = "history"
            return _history_during(call, torch.cuda.current_device(), paths)


def _history_in_use():
    """Whether someone records the allocator's memory history now (its
    trace holds entries): the probe then leaves it alone."""
    import torch
    try:
        traces = torch.cuda.memory._snapshot().get("device_traces", [])
    except Exception:
        return True
    return any(traces)


def _record(enabled):
    import torch
    record = torch.cuda.memory._record_memory_history
    if enabled:
        kwargs = dict(context=None, stacks="python",
                      max_entries=_HISTORY_ENTRIES)
    else:
        kwargs = {}
    try:
        record("all" if enabled else None, clear_history=True, **kwargs)
    except TypeError:  # a torch without clear_history
        record("all" if enabled else None, **kwargs)


def _history_during(call, device_index, paths):
    """(workspace, allocations) of call() from the allocator's trace of it,
    `paths` leading from its result to its outputs."""
    import torch
    _record(True)
    try:
        outputs = call()
        torch.cuda.synchronize()
        traces = torch.cuda.memory._snapshot().get("device_traces", [])
    finally:
        _record(False)
    addresses = [_address(outputs, path) for path in paths]
    del outputs
    trace = traces[device_index] if device_index < len(traces) else []
    peak, held = transient_peak(trace)
    return max(0, peak - held), call_allocations(trace, addresses)


def _freed_during(call):
    """The bytes call() allocated and freed (an upper bound of its
    workspace), from the allocator's cumulative statistics."""
    import torch
    key = "allocated_bytes.all.freed"
    before = torch.cuda.memory_stats().get(key, 0)
    outputs = call()
    torch.cuda.synchronize()
    freed = torch.cuda.memory_stats().get(key, 0) - before
    del outputs
    return max(0, int(freed))
