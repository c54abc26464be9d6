"""memplan.inductor against a real memplan-server process.

Without torch, Inductor's objects are stood in for by small fakes that carry
the class and attribute names torch 2.11's memory_planning.py and wrapper.py
use (AllocateLine, BufferGroup.names/.live_range/.is_output, Allocation.
size_hint/.finalize, AllocationPool.finalize, ...): they test the hook's own
logic (lines to events, the service's answer to pools and offsets, the
fallback), not Inductor. The test that needs torch is skipped without it;
the real compile runs in client/python/examples/compile_with_memplan.py.
"""

import contextlib
import inspect
import types
import unittest
from unittest import mock
import warnings

import grpc
import sympy

import memplan.inductor as hook
import memplan.release_groups as release_groups
import memplan.workspaces as workspaces
from memplan import MemplanClient, pb
from memplan.client import strategy
from server_process import ServerProcess, closed_target

try:
    import torch
except ImportError:
    torch = None


# --- Fakes named as Inductor's classes (torch/_inductor/codegen/wrapper.py) --

class WrapperLine:
    pass


class MemoryPlanningLine(WrapperLine):
    pass


class AllocateLine(MemoryPlanningLine):
    def __init__(self, node):
        self.node = node


class FreeIfNotReusedLine(MemoryPlanningLine):
    def __init__(self, node):
        self.node = node


class ReuseLine(MemoryPlanningLine):
    def __init__(self, node, reused_as):
        self.node = node
        self.reused_as = reused_as


class NullLine(MemoryPlanningLine):
    pass


class EnterSubgraphLine(WrapperLine):
    pass


class ExitSubgraphLine(WrapperLine):
    pass


class KernelCallLine(WrapperLine):
    pass


class ExternKernelAllocLine(WrapperLine):
    def __init__(self, node):
        self.node = node


class MultiOutputLine(WrapperLine):
    def __init__(self, result_name, arg_name):
        self.result_name = result_name
        self.arg_name = arg_name


class FreeLine(WrapperLine):
    def __init__(self, node):
        self.node = node


class EnterDeviceContextManagerLine(WrapperLine):
    def __init__(self, device_idx):
        self.device_idx = device_idx


class Node:
    def __init__(self, name, dtype="torch.float32"):
        self.name = name
        self.dtype = dtype

    def get_name(self):
        return self.name

    def get_dtype(self):
        return self.dtype


class LiveRange:
    def __init__(self, begin, end):
        self.begin = begin
        self.end = end


class Allocation:
    def __init__(self, node, live_range, size_hint, symbolic_size, device):
        self.node = node
        self.live_range = live_range
        self.size_hint = size_hint
        self.symbolic_size = symbolic_size
        self.device = device
        self.allocated = False
        self.pool = None
        self.offset = None

    def mark_allocated(self):
        assert not self.allocated
        self.allocated = True

    def finalize(self, pool, offset):
        assert self.pool is None and self.offset is None
        self.pool = pool
        self.offset = offset
        return self


class BufferGroup:
    def __init__(self, node, size, live_range, is_output=False,
                 device="cuda:0", symbolic_size=None):
        self.node = node
        self.names = [node.get_name()]
        self.size = size
        self.symbolic_size = (sympy.Integer(size) if symbolic_size is None
                              else symbolic_size)
        self.live_range = live_range
        self.is_output = is_output
        self.device = device
        self.allocation = None

    def make_allocation(self):
        assert not self.allocation, "multiple allocations"
        self.allocation = Allocation(self.node, self.live_range, self.size,
                                     self.symbolic_size, self.device)


# --- One graph as Inductor's wrapper would have it ---------------------------

def example_graph():
    """Wrapper lines with in-place reuse, a removed buffer, a subgraph, an
    output and a free of a buffer no group holds; and Inductor's groups with
    the live ranges its compute_live_ranges gives them:

      line  0 ALLOCATE buf0 (256)   t1   group buf0+buf2: [1, 3]
      line  1 ALLOCATE buf1 (128)   t1   group buf1 (output): [1, 7]
      line  2 ALLOCATE buf9         t1   removed: dropped
      line  3 kernel
      line  4 REUSE buf0 -> buf2    t2
      line  5 kernel
      line  6 FREE buf2             t3
      line  7 ALLOCATE buf3 (256)   t3   group buf3: [3, 6]
      line  8 kernel
      line  9 EnterSubgraph
      line 10 ALLOCATE buf4 (512)   t4   group buf4: [4, 5]
      line 11 kernel
      line 12 FREE buf4             t5
      line 13 ExitSubgraph
      line 14 FREE buf3             t6
      line 15 FREE buf5             t6   (allocated by an extern kernel)
      line 16 "return"                   6 timesteps: outputs end at 7
    """
    node = {name: Node(name) for name in
            ("buf0", "buf1", "buf2", "buf3", "buf4", "buf5", "buf9")}
    lines = [
        AllocateLine(node["buf0"]), AllocateLine(node["buf1"]),
        AllocateLine(node["buf9"]), KernelCallLine(),
        ReuseLine(node["buf0"], node["buf2"]), KernelCallLine(),
        FreeIfNotReusedLine(node["buf2"]), AllocateLine(node["buf3"]),
        KernelCallLine(), EnterSubgraphLine(), AllocateLine(node["buf4"]),
        KernelCallLine(), FreeIfNotReusedLine(node["buf4"]),
        ExitSubgraphLine(), FreeIfNotReusedLine(node["buf3"]),
        FreeIfNotReusedLine(node["buf5"]), "return (buf1, )",
    ]
    group0 = BufferGroup(node["buf0"], 256, LiveRange(1, 3))
    group0.names.append("buf2")
    groups = [
        group0,
        BufferGroup(node["buf1"], 128, LiveRange(1, 7), is_output=True),
        BufferGroup(node["buf3"], 256, LiveRange(3, 6)),
        BufferGroup(node["buf4"], 512, LiveRange(4, 5)),
    ]
    return lines, groups


# --- A fake memory_planning module --------------------------------------------

class LiveRanges:
    def __init__(self, ranges):
        self.ranges = sorted(ranges, key=lambda r: r.begin)

    @property
    def end(self):
        return max(r.end for r in self.ranges)


class AllocationPool:
    def __init__(self, device, root, can_expand=True):
        self.device = device
        self.root = root
        self.can_expand = can_expand
        self.name = None
        self.names_to_del = []

    def finalize(self, name):
        assert not self.name
        self.name = name
        self.names_to_del.append(name)
        self.root.finalize(self, 0)


class AllocationPools:
    def __init__(self):
        self.device_to_pools = {}


class InductorsOwnRoot:
    def __init__(self, size):
        self.size = size

    def get_size_hint(self):
        return self.size


def fake_memory_planning(groups, removed=("buf9",), outputs=("buf1",)):
    """A module with what memplan.inductor reads of torch 2.11's
    memory_planning: MemoryPlanner (whose plan() calls allocate_groups, and
    whose own allocate_groups puts every group in one pool "inductor0"),
    AllocationPool(s), LiveRanges, config.memory_pool and V.graph."""

    class MemoryPlanner:
        own_plans = 0

        def __init__(self):
            self.buffer_groups = groups
            self.pools = AllocationPools()

        def plan(self, lines):
            self.allocate_groups()
            return lines

        def allocate_groups(self):
            type(self).own_plans += 1
            for group in self.buffer_groups:
                group.make_allocation()
            root = InductorsOwnRoot(sum(g.size for g in self.buffer_groups))
            pool = AllocationPool("cuda:0", root)
            pool.name = "inductor0"
            self.pools.device_to_pools["cuda:0"] = [pool]

    graph = types.SimpleNamespace(removed_buffers=set(removed),
                                  get_output_names=lambda: list(outputs))
    return types.SimpleNamespace(
        MemoryPlanner=MemoryPlanner, AllocationPool=AllocationPool,
        AllocationPools=AllocationPools, LiveRanges=LiveRanges,
        config=types.SimpleNamespace(memory_pool="intermediates"),
        V=types.SimpleNamespace(graph=graph))


# --- Tests ---------------------------------------------------------------

class FakeValue:
    """An FX node's meta "val" (a FakeTensor) as caller_output_bytes reads
    it: its storage's bytes, an int or a symbolic size (.node.expr)."""

    def __init__(self, nbytes):
        self.nbytes = nbytes

    def untyped_storage(self):
        return types.SimpleNamespace(nbytes=lambda: self.nbytes)


def graph_of_phase(phase):
    """example_graph()'s lines and a fake memory_planning module whose
    graph is of `phase` ("inference", "forward" or "backward")."""
    lines, groups = example_graph()
    mp = fake_memory_planning(groups)
    mp.V.graph.is_backward = phase == "backward"
    mp.V.graph.is_inference = phase == "inference"
    return lines, mp


class LineKindTest(unittest.TestCase):

    def test_kinds_follow_inductors_classes(self):
        class AllocateLineSubclass(AllocateLine):
            pass
        kinds = [hook.line_kind(line) for line in (
            AllocateLine(None), AllocateLineSubclass(None),
            FreeIfNotReusedLine(None), ReuseLine(None, None),
            EnterSubgraphLine(), ExitSubgraphLine(), KernelCallLine(),
            "buf1 = empty_strided_cuda(...)")]
        self.assertEqual(kinds, [
            pb.EVENT_KIND_ALLOCATE, pb.EVENT_KIND_ALLOCATE,
            pb.EVENT_KIND_FREE_IF_NOT_REUSED, pb.EVENT_KIND_REUSE,
            pb.EVENT_KIND_ENTER_SUBGRAPH, pb.EVENT_KIND_EXIT_SUBGRAPH,
            pb.EVENT_KIND_OTHER, pb.EVENT_KIND_OTHER])

    def test_memory_outside_the_plan_has_kinds_of_its_own(self):
        kinds = [hook.line_kind(line) for line in (
            ExternKernelAllocLine(Node("buf3")),
            MultiOutputLine("buf4", "buf3"), FreeLine(Node("arg0_1")))]
        self.assertEqual(kinds, [pb.EVENT_KIND_EXTERN_ALLOCATE,
                                 pb.EVENT_KIND_MULTI_OUTPUT,
                                 pb.EVENT_KIND_FREE_INPUT])

    def test_memory_outside_the_plan_is_described_when_it_can_be(self):
        class Unplanned:
            def extern_allocation(self, line):
                return {"name": line.node.get_name(), "size_bytes": 3000,
                        "device": "cuda:0", "output_bytes": [1000, 2000]}

            def multi_output(self, line):
                if line.arg_name != "buf3":
                    return None
                return {"name": "buf3", "reused_as": line.result_name,
                        "output_index": 1}

            def input_free(self, line):
                return {"name": line.node.get_name(), "size_bytes": 512,
                        "device": "cuda:0"}

            def free_description(self, line):
                return {"size_bytes": 2000, "device": "cuda:0",
                        "dtype": "torch.float16"}

            def scheduler_node(self, line):
                return 7

        lines = [ExternKernelAllocLine(Node("buf3")),
                 MultiOutputLine("buf4", "buf3"),
                 MultiOutputLine("buf6", "buf5"), FreeLine(Node("arg0_1")),
                 FreeIfNotReusedLine(Node("buf4"))]
        events = hook.events_from_lines(lines, {}, (), Unplanned())
        self.assertEqual(events, [
            pb.Event(kind=pb.EVENT_KIND_EXTERN_ALLOCATE, name="buf3",
                     size_bytes=3000, device="cuda:0",
                     output_bytes=[1000, 2000]),
            pb.Event(kind=pb.EVENT_KIND_MULTI_OUTPUT, name="buf3",
                     reused_as="buf4", output_index=1),
            pb.Event(kind=pb.EVENT_KIND_OTHER),  # not an extern's output
            pb.Event(kind=pb.EVENT_KIND_FREE_INPUT, name="arg0_1",
                     size_bytes=512, device="cuda:0"),
            pb.Event(kind=pb.EVENT_KIND_FREE_IF_NOT_REUSED, name="buf4",
                     size_bytes=2000, device="cuda:0", dtype="torch.float16",
                     scheduler_node=7)])
        # Without a description, they are kernel calls as before.
        self.assertEqual(
            hook.events_from_lines(lines[:4], {}, ()),
            [pb.Event(kind=pb.EVENT_KIND_OTHER)] * 4)

    def test_other_memory_planning_lines_plan_nothing(self):
        # ReinterpretLine, NullLine: no buffer of their own, but they count
        # in their run of memory-planning lines (unlike a kernel call).
        self.assertEqual(hook.line_kind(NullLine()),
                         pb.EVENT_KIND_PLANNING_NO_OP)
        lines, groups = example_graph()
        events = hook.events_from_lines(lines[:3] + [NullLine()],
                                        allocations_of(groups), {"buf9"})
        self.assertEqual(events[3], pb.Event(kind=pb.EVENT_KIND_PLANNING_NO_OP))


def allocations_of(groups):
    for group in groups:
        if group.allocation is None:
            group.make_allocation()
    return {group.names[0]: group.allocation for group in groups}


class Code:
    """What a wrapper's IndentedBuffer takes: lines written in order."""

    def __init__(self):
        self.lines = []

    def writeline(self, line):
        self.lines.append(line)

    def writelines(self, lines):
        self.lines.extend(lines)


class Root:
    """The hook's PoolRoot as its codegen reads it: what the pool holds and
    its size in bytes."""

    def __init__(self, size, static=True):
        self.placed = []
        self.size = size
        self.static = static

    def get_size_hint(self):
        return self.size

    def get_symbolic_size(self):
        return types.SimpleNamespace(is_Integer=self.static)


class Pool:
    def __init__(self, name, size=4096, static=True):
        self.name = name
        self.names_to_del = [name]
        self.device = types.SimpleNamespace(type="cuda")
        self.root = Root(size, static)

    def codegen_create(self, wrapper, code):
        code.writeline(f"{self.name} = empty_strided_cuda(...)")


class DType:
    """A torch.dtype as the hook's codegen reads it: str() and itemsize."""

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __str__(self):
        return f"torch.{self.name}"


FLOAT32, INT64, UINT8 = DType("float32", 4), DType("int64", 8), \
    DType("uint8", 1)


class PoolNode(Node):
    def __init__(self, name, dtype, size, stride):
        super().__init__(name, dtype)
        self.size = size
        self.stride = stride

    def get_size(self):
        return self.size

    def get_stride(self):
        return self.stride


class Wrapper:
    """PythonWrapperCodegen's pool codegen, as torch 2.11 writes it."""
    declare = ""
    ending = ""

    def codegen_python_shape_tuple(self, shape):
        parts = [str(x) for x in shape]
        return f"({parts[0]}, )" if len(parts) == 1 else \
            f"({', '.join(parts)})"

    def codegen_sizevar(self, x):
        return str(x)

    def make_allocation(self, name, device, dtype, shape, stride):
        return (f"{name} = empty_strided_{device.type}("
                f"{self.codegen_python_shape_tuple(shape)}, "
                f"{self.codegen_python_shape_tuple(stride)}, {dtype})")

    def codegen_alloc_from_pool(self, name, offset, dtype, shape, stride):
        return (f"alloc_from_pool({name}, {offset}, {dtype}, "
                f"{self.codegen_python_shape_tuple(shape)}, "
                f"{self.codegen_python_shape_tuple(stride)})", [])


class PoolAllocation:
    """Inductor's Allocation: without a wrapper that writes pools (the
    first tests' stand-in), its codegen_alloc_from_pool is short."""

    def __init__(self, pool, offset, node, size_hint):
        self.pool = pool
        self.offset = offset
        self.node = node
        self.size_hint = size_hint
        pool.root.placed.append((self, offset))

    def codegen_alloc_from_pool(self, wrapper):
        if not hasattr(wrapper, "codegen_alloc_from_pool"):
            return f"alloc_from_pool({self.pool.name}, {self.offset})", []
        return wrapper.codegen_alloc_from_pool(
            self.pool.name, self.offset, self.node.get_dtype(),
            self.node.get_size(), self.node.get_stride())


class PoolGroup:
    def __init__(self, names, pool, offset, dtype="torch.float32",
                 size=(4,), stride=(1,), size_hint=16):
        self.names = names
        self.node = PoolNode(names[0], dtype, size, stride)
        self.allocation = PoolAllocation(pool, offset, self.node, size_hint)


class AllocFromPoolLine:
    def __init__(self, group, first=False, wrapper=None):
        self.wrapper = wrapper or types.SimpleNamespace(declare="",
                                                        ending="")
        self.group = group
        self.node = group.node
        self.is_first_pool_usage = first


class DeallocFromPoolLine:
    def __init__(self, group, last=False):
        self.wrapper = types.SimpleNamespace(declare="", ending="")
        self.group = group
        self.is_last_pool_usage = last


class SavedInputCopiesTest(unittest.TestCase):

    def test_an_input_returned_as_a_buffer_of_its_own_is_a_copy(self):
        # resnet18's forward with layout optimization: the weight saved for
        # backward is returned as buf15, its channels-last copy; the other
        # saved input and the activation are returned as they are.
        copies = hook.saved_input_copies(
            [("relu", False), ("primals_116", True), ("primals_2", True),
             ("convolution_19", False)],
            ["buf40", "buf15", "primals_2", "buf19"],
            ["primals_1", "primals_2", "primals_116"])
        self.assertEqual(copies, {"primals_116"})

    def test_outputs_in_one_pool_are_one_storage_for_the_backward(self):
        # Pool mode combined: the saved activation relu and the user output
        # addmm share pool 0 (buf3 and buf9 in one group with buf1); the
        # copy primals_116 has pool 1 to itself; convolution_19 is an extern
        # kernel's output, in no pool.
        pool_of, pool_bytes = hook.saved_output_pools(
            [("relu", False), ("addmm", False), ("primals_116", True),
             ("convolution_19", False)],
            ["buf3", "buf9", "buf15", "buf19"],
            [["buf1", "buf3"], ["buf9"], ["buf15"]],
            [(0, 0, ""), (0, 4096, ""), (1, 0, "")],
            [("pool0", "cuda:0", 8192, ""), ("pool1", "cuda:0", 9437184,
                                             "")])
        self.assertEqual(pool_of, {"relu": 0, "addmm": 0, "primals_116": 1})
        self.assertEqual(pool_bytes, {0: (8192, "cuda:0"),
                                      1: (9437184, "cuda:0")})
        record = hook.ForwardOutputs()
        record.pool_of = pool_of
        self.assertEqual(record.pool_members(0), {"relu", "addmm"})
        self.assertEqual(hook.saved_output_pools(
            [("relu", False)], [], [["buf3"]], [(0, 0, "")],
            [("pool0", "cuda:0", 64, "")]), ({}, {}))

    def test_nothing_where_outputs_and_buffers_do_not_line_up(self):
        self.assertEqual(hook.saved_input_copies(
            [("primals_1", True)], ["buf0", "buf1"], ["primals_1"]), set())
        self.assertEqual(hook.saved_input_copies(
            [("primals_1", True)], [None], ["primals_1"]), set())


class FxNode:
    """torch.fx.Node's name and op."""

    def __init__(self, name, op):
        self.name = name
        self.op = op


class Storage:
    def __init__(self, key, nbytes):
        self._cdata = key
        self._nbytes = nbytes

    def nbytes(self):
        return self._nbytes


class ExampleInput:
    """A backward graph's example input: its storage and device."""

    def __init__(self, key, nbytes):
        self.storage = Storage(key, nbytes)
        self.device = "cuda:0"

    def untyped_storage(self):
        return self.storage


def inductor_modules():
    """sys.modules entries that let GraphMemory import torch._inductor.ir
    and torch.fx without torch (the fakes' FxNode as fx.Node)."""
    fake_torch = types.ModuleType("torch")
    fake_inductor = types.ModuleType("torch._inductor")
    fake_ir = types.ModuleType("torch._inductor.ir")
    fake_fx = types.ModuleType("torch.fx")
    fake_fx.Node = FxNode
    fake_torch.fx, fake_torch._inductor = fake_fx, fake_inductor
    fake_inductor.ir = fake_ir
    return {"torch": fake_torch, "torch._inductor": fake_inductor,
            "torch._inductor.ir": fake_ir, "torch.fx": fake_fx}


class InputNode(Node):
    def get_device(self):
        return "cuda:0"


class ForwardToBackwardTest(unittest.TestCase):
    """A training forward's record reaches its backward's input frees."""

    def test_the_backward_frees_copies_and_pools_as_the_forward_made_them(
            self):
        # The forward returns relu and addmm (a user output) from pool 0,
        # mul from pool 1, its copy of primals_2 (buf15) and primals_1 as
        # it is.
        names = ["relu", "addmm", "mul", "primals_2", "primals_1"]
        output = FxNode("output", "output")
        output.args = ([FxNode(n, "placeholder" if n.startswith("primals")
                               else "call_function") for n in names],)
        forward = types.SimpleNamespace(
            graph_id=41, is_backward=False, is_inference=False,
            graph_input_names=["primals_1", "primals_2"],
            module=types.SimpleNamespace(graph=types.SimpleNamespace(
                nodes=[FxNode("primals_1", "placeholder"), output])),
            graph_outputs=[Node(b) for b in
                           ("buf3", "buf9", "buf11", "buf15", "primals_1")])
        groups = [types.SimpleNamespace(names=n) for n in
                  (["buf1", "buf3"], ["buf9"], ["buf11"], ["buf15"])]
        placement = hook.Placement(
            [("pool0", "cuda:0", 8192, ""), ("pool1", "cuda:0", 4096, ""),
             ("pool2", "cuda:0", 9437184, "")],
            [(0, 0, ""), (0, 4096, ""), (1, 0, ""), (2, 0, "")])
        # The backward gets every saved output but the user output addmm,
        # and a tangent; it frees them all.
        inputs = ["relu", "mul", "primals_2", "primals_1", "tangents_1"]
        backward = types.SimpleNamespace(
            graph_id=41, is_backward=True, is_inference=False,
            graph_input_names=inputs,
            example_inputs=[ExampleInput(k, 1000 * (k + 1))
                            for k in range(len(inputs))])
        lines = [FreeLine(InputNode(n)) for n in inputs]
        sent = pb.PlanMemoryRequest(
            events=[pb.Event(kind=pb.EVENT_KIND_ALLOCATE, name="buf1")],
            output_names=["buf3", "buf9", "buf11", "buf15", "primals_1"])
        answer = pb.PlanMemoryResponse(
            pools=[pb.Pool(name="pool0", device="cuda:0", size_bytes=8192)],
            assignments=[pb.Assignment(pool="pool0", offset=0)],
            segment_reservations=[pb.SegmentReservation(
                device="cuda:0", size_bytes=16 << 20)],
            stats=pb.PlanStats(planner="partition"))
        with mock.patch.dict("sys.modules", inductor_modules()):
            self.assertIsNone(hook.GraphMemory(forward, []).forward)
            hook._note_forward_pools(forward, groups, placement, sent, answer)
            memory = hook.GraphMemory(backward, lines)
        # The backward's request carries the forward's and, per input that
        # is a forward output, the buffer it is (primals_2: the copy buf15;
        # primals_1: returned as it is, the forward's own input).
        graph = hook.forward_graph(memory.forward, inputs)
        self.assertEqual(graph.request, sent)
        # The plan: pools, assignments and the segment reservations the
        # forward's code makes (what the service reads).
        self.assertEqual(graph.plan, pb.PlanMemoryResponse(
            pools=answer.pools, assignments=answer.assignments,
            segment_reservations=answer.segment_reservations))
        self.assertEqual([(s.input, s.forward_output)
                          for s in graph.input_sources],
                         [("relu", "buf3"), ("mul", "buf11"),
                          ("primals_2", "buf15"), ("primals_1", "primals_1")])
        # A forward that sent buffers, not events: nothing to replay.
        self.assertIsNone(hook.forward_graph(hook.ForwardOutputs(), inputs))
        self.assertEqual([memory.input_free(line)["size_bytes"]
                          for line in lines],
                         # relu: pool 0 is held by addmm; mul: pool 1;
                         # primals_2: the copy's pool; primals_1, tangents_1:
                         # the caller's.
                         [0, 4096, 9437184, 0, 0])
        # A backward whose forward this process did not plan: its own
        # storages, every primal the caller's.
        backward.graph_id = 42
        with mock.patch.dict("sys.modules", inductor_modules()):
            memory = hook.GraphMemory(backward, lines)
        self.assertEqual([memory.input_free(line)["size_bytes"]
                          for line in lines], [1000, 2000, 0, 0, 0])

    def test_only_the_latest_forwards_keep_their_requests(self):
        kept = hook._FORWARD_REQUESTS_KEPT

        def noting(k):
            def update(record):
                record.request = pb.PlanMemoryRequest(output_names=[str(k)])
                record.plan = pb.PlanMemoryResponse()
            return update
        keys = [("requests kept", k) for k in range(kept + 3)]
        with hook._forward_outputs_lock:  # other tests' records aside
            others = dict(hook._forward_outputs)
            hook._forward_outputs.clear()
        try:
            for key in keys:
                hook._note_forward(key, noting(key[1]))
            with hook._forward_outputs_lock:
                records = [hook._forward_outputs[key] for key in keys]
            self.assertEqual([r.request is None for r in records],
                             [True] * 3 + [False] * kept)
            self.assertIsNone(records[0].plan)
            # The other fields stay (a backward's frees need them).
            self.assertEqual(records[0].copies, set())
        finally:
            with hook._forward_outputs_lock:
                hook._forward_outputs.clear()
                hook._forward_outputs.update(others)


class OpOverload:
    """torch._ops.OpOverload's str()."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


class SizeVars:
    """V.graph.sizevars: hints of sympy expressions (x = 7)."""

    def size_hint(self, expr, fallback=None):
        return int(sympy.sympify(expr).subs(sympy.Symbol("x"), 7))

    def size_hints(self, exprs, fallback=None):
        return tuple(self.size_hint(e) for e in exprs)


class TensorNode(Node):
    """An extern kernel's input: a buffer's layout."""

    def __init__(self, name, size, stride, device="cuda:0"):
        super().__init__(name)
        self.size, self.stride, self.device = size, stride, device

    def get_size(self):
        return self.size

    def get_stride(self):
        return self.stride

    def get_device(self):
        return Device(self.device)


class Device:
    """torch.device's type and str()."""

    def __init__(self, name):
        self.name = name
        self.type = name.split(":")[0]

    def __str__(self):
        return self.name


class ExternNode(Node):
    """An extern kernel (ExternKernelAlloc / FallbackKernel)."""

    def __init__(self, name, op, inputs, device="cuda", nbytes=4096,
                 **constants):
        super().__init__(name)
        self.op_overload = OpOverload(op)
        self.inputs = inputs
        self.constant_args = ()
        self.kwargs = constants
        self.device = device
        self.layout = object()
        self.nbytes = nbytes

    def get_device(self):
        return types.SimpleNamespace(type=self.device)

    def get_inputs_that_alias_output(self):
        return []


class WorkspacesTest(unittest.TestCase):
    """memplan.workspaces without a GPU: the trace arithmetic, which
    kernels are probed and how often, and the event that carries it."""

    def setUp(self):
        workspaces._cache.clear()

    def test_the_workspace_is_the_peak_beyond_what_the_call_returns(self):
        trace = [
            {"action": "free_requested", "addr": 1, "size": 512},  # earlier
            {"action": "segment_alloc", "addr": 9, "size": 2 << 20},
            {"action": "alloc", "addr": 2, "size": 4096},   # the output
            {"action": "alloc", "addr": 3, "size": 8192},   # workspace 1
            {"action": "free_requested", "addr": 3, "size": 8192},
            {"action": "free_completed", "addr": 3, "size": 8192},
            {"action": "alloc", "addr": 4, "size": 2048},   # workspace 2
            {"action": "free_completed", "addr": 4, "size": 2048},
        ]
        self.assertEqual(workspaces.transient_peak(trace), (12288, 4096))
        self.assertEqual(workspaces.transient_peak([]), (0, 0))

    def test_the_calls_allocations_in_order(self):
        # A convolution backward as an H200 runs it: a copy of the
        # gradient, the two outputs, a cuDNN workspace; both scratch
        # blocks freed at the return. A block held that is no output (a
        # kernel's cache) is left out; frees of earlier blocks count
        # nothing.
        trace = [
            {"action": "free_completed", "addr": 90, "size": 512},
            {"action": "alloc", "addr": 1, "size": 1605632},   # copy
            {"action": "alloc", "addr": 2, "size": 1605632},   # output 0
            {"action": "alloc", "addr": 7, "size": 512},       # a cache
            {"action": "alloc", "addr": 3, "size": 9437184},   # output 1
            {"action": "alloc", "addr": 4, "size": 1573071},   # workspace
            {"action": "free_requested", "addr": 4, "size": 1573071},
            {"action": "free_completed", "addr": 4, "size": 1573071},
            {"action": "free_completed", "addr": 1, "size": 1605632},
        ]
        self.assertEqual(
            workspaces.call_allocations(trace, [2, 3, None]),
            (("scratch", 1605632, 4), ("output", 0), ("output", 1),
             ("scratch", 1573071, 4)))
        # A block freed between allocations: freed before the next one.
        trace = [
            {"action": "alloc", "addr": 1, "size": 4096},     # output 0
            {"action": "alloc", "addr": 2, "size": 8192},     # scratch
            {"action": "free_completed", "addr": 2, "size": 8192},
            {"action": "alloc", "addr": 3, "size": 2048},     # output 1
        ]
        self.assertEqual(workspaces.call_allocations(trace, [1, 3]),
                         (("output", 0), ("scratch", 8192, 2), ("output", 1)))
        # No scratch: nothing to send (the outputs alone say no more than
        # the event).
        self.assertEqual(workspaces.call_allocations(trace[:1], [1]), ())
        self.assertEqual(workspaces.call_allocations([], [None]), ())

    def test_output_paths_follow_the_multi_outputs(self):
        class MultiOutput:
            def __init__(self, indices):
                self.indices = indices
        first, second = MultiOutput([(tuple, 0)]), MultiOutput([(tuple, 1)])
        node = types.SimpleNamespace(outputs=[first, [second]])

        def is_output(item):
            return isinstance(item, MultiOutput)
        self.assertEqual(workspaces.output_paths(node, is_output),
                         [((tuple, 0),), ((tuple, 1),)])
        self.assertEqual(workspaces.multi_outputs(node, is_output),
                         [first, second])
        # One output: the result itself.
        self.assertEqual(workspaces.output_paths(Node("buf1"), is_output),
                         [()])
        self.assertEqual(workspaces.output_paths(node, None), [()])

    def test_probed_kernels_run_once_per_signature(self):
        graph = types.SimpleNamespace(sizevars=SizeVars())
        probe = workspaces.WorkspaceProbe(graph)
        measured = []

        def measure(run, device, paths):
            measured.append(run)
            return 5120, ()
        probe._measure = measure
        x = sympy.Symbol("x")

        def conv(name, batch, device="cuda"):
            return ExternNode(
                name, "aten.convolution.default",
                [TensorNode("a", [batch, 3, 8, 8], [192, 64, 8, 1]),
                 TensorNode("w", [4, 3, 3, 3], [27, 9, 3, 1])],
                device=device, stride=[1, 1], padding=[x - 6, 1],
                bias=None)
        self.assertEqual(probe(conv("buf1", 2 * x)), 5120)
        # The same call (2x = 14 as a hint) again, from another graph
        # too: measured once.
        self.assertEqual(probe(conv("buf2", 14)), 5120)
        self.assertEqual(workspaces.WorkspaceProbe(graph)(conv("buf3", 14)),
                         5120)
        self.assertEqual(len(measured), 1)
        # Another shape: measured again.
        self.assertEqual(probe(conv("buf4", 16)), 5120)
        self.assertEqual(len(measured), 2)
        # Not probed: a CPU kernel, a kernel not in PROBED_OPS, a node
        # without an op.
        self.assertEqual(probe(conv("buf5", 3, device="cpu")), 0)
        self.assertEqual(probe(ExternNode(
            "buf6", "aten.mm.default", [TensorNode("a", [4, 4], [4, 1])])),
            0)
        self.assertEqual(probe(Node("buf7")), 0)
        self.assertEqual(len(measured), 2)

        # A probe that fails counts 0 and is not cached.
        def fail(run, device, paths):
            raise RuntimeError("CUDA out of memory")
        probe._measure = fail
        self.assertEqual(probe(conv("buf8", 32)), 0)
        probe._measure = measure
        self.assertEqual(probe(conv("buf8", 32)), 5120)

    def test_the_extern_event_carries_the_workspace(self):
        modules = inductor_modules()
        modules["torch._inductor.ir"].MultiOutputLayout = type(
            "MultiOutputLayout", (), {})
        utils = types.ModuleType("torch._inductor.utils")
        utils.get_dtype_size = lambda dtype: 4
        modules["torch._inductor.utils"] = utils
        modules["torch._inductor"].utils = utils
        graph = types.SimpleNamespace(
            graph_input_names=[], sizevars=SizeVars(),
            get_allocation_storage_size=lambda node: node.nbytes // 4)
        conv = ExternNode("buf1", "aten.convolution.default", [])
        mm = ExternNode("buf2", "aten.mm.default", [])
        lines = [ExternKernelAllocLine(conv), ExternKernelAllocLine(mm)]
        with mock.patch.dict("sys.modules", modules):
            memory = hook.GraphMemory(
                graph, lines, workspace=lambda node: 9 << 20
                if node is conv else 0)
            events = hook.events_from_lines(lines, {}, unplanned=memory)
        self.assertEqual(
            [(e.kind, e.name, e.size_bytes, e.workspace_bytes)
             for e in events],
            [(pb.EVENT_KIND_EXTERN_ALLOCATE, "buf1", 4096, 9 << 20),
             (pb.EVENT_KIND_EXTERN_ALLOCATE, "buf2", 4096, 0)])
        self.assertFalse(events[1].HasField("workspace_bytes"))

        # A probe that also gives the call's allocations: sent instead.
        class Probe:
            def __call__(self, node):
                return 9 << 20 if node is conv else 0

            def allocations(self, node):
                return ((("scratch", 1024, 2), ("output", 0))
                        if node is conv else ())
        with mock.patch.dict("sys.modules", modules):
            memory = hook.GraphMemory(graph, lines, workspace=Probe())
            events = hook.events_from_lines(lines, {}, unplanned=memory)
        self.assertFalse(events[0].HasField("workspace_bytes"))
        self.assertEqual(
            [(a.WhichOneof("allocation"), a.scratch_bytes, a.output_index,
              a.freed_before) for a in events[0].call_allocations],
            [("scratch_bytes", 1024, 0, 2), ("output_index", 0, 0, 0)])
        self.assertEqual(len(events[1].call_allocations), 0)


class CachedBlocksTest(unittest.TestCase):

    def test_free_blocks_of_segments_in_use_on_the_graphs_devices(self):
        segments = [
            {"device": 0, "segment_type": "large", "blocks": [
                {"size": 4 << 20, "state": "active_allocated"},
                {"size": 16 << 20, "state": "inactive"}]},
            {"device": 0, "segment_type": "small", "blocks": [
                {"size": 512, "state": "inactive"},
                {"size": 1024, "state": "active_allocated"},
                {"size": (2 << 20) - 1536, "state": "inactive"}]},
            # A free segment: empty_cache() may release it.
            {"device": 0, "segment_type": "large", "blocks": [
                {"size": 20 << 20, "state": "inactive"}]},
            # Another device's.
            {"device": 1, "segment_type": "large", "blocks": [
                {"size": 4 << 20, "state": "active_allocated"},
                {"size": 16 << 20, "state": "inactive"}]}]
        self.assertEqual(
            [(b.device, b.size_bytes, b.small_pool)
             for b in hook.cached_blocks(segments, {"cuda:0"})],
            [("cuda:0", 16 << 20, False), ("cuda:0", 512, True),
             ("cuda:0", (2 << 20) - 1536, True)])


def generate_pool_code(lines):
    """The code the hook's pool codegen writes for AllocFromPoolLines and
    DeallocFromPoolLines, in order."""
    mp = types.SimpleNamespace(AllocFromPoolLine=AllocFromPoolLine)
    hook._mark_last_allocations(mp, lines)
    code = Code()
    for line in lines:
        if isinstance(line, AllocFromPoolLine):
            hook._alloc_from_pool_codegen(line, code)
        else:
            hook._dealloc_from_pool_codegen(line, code)
    return code.lines


class PoolCodegenTest(unittest.TestCase):
    """The generated code frees each pooled buffer at its last use and each
    pool after its last allocation, so its storage returns at its last
    buffer's free."""

    def generate(self, lines):
        return generate_pool_code(lines)

    def test_buffers_and_pools_are_freed_at_their_last_use(self):
        pool0, pool1 = Pool("pool0"), Pool("pool1")
        a = PoolGroup(["buf0", "buf2"], pool0, 0)
        b = PoolGroup(["buf1"], pool0, 256)
        c = PoolGroup(["buf3"], pool0, 0)
        out = PoolGroup(["buf4"], pool1, 0)  # an output: no dealloc line
        self.assertEqual(self.generate([
            AllocFromPoolLine(a, first=True), AllocFromPoolLine(b),
            AllocFromPoolLine(out, first=True), DeallocFromPoolLine(a),
            AllocFromPoolLine(c), DeallocFromPoolLine(b),
            DeallocFromPoolLine(c, last=True)]), [
            "pool0 = empty_strided_cuda(...)",
            "buf0 = alloc_from_pool(pool0, 0)",
            "buf1 = alloc_from_pool(pool0, 256)",
            "pool1 = empty_strided_cuda(...)",
            "buf4 = alloc_from_pool(pool1, 0)",
            "del pool1",
            "del buf0, buf2",
            "buf3 = alloc_from_pool(pool0, 0)",
            "del pool0",
            "del buf1",
            "del buf3"])

    def test_the_same_pool_and_offset_twice_is_two_allocations(self):
        # Inductor would write `buf1 = buf0  # alloc`, which breaks once
        # buf0 is deleted.
        pool = Pool("pool0")
        first, second = PoolGroup(["buf0"], pool, 0), PoolGroup(["buf1"],
                                                                 pool, 0)
        self.assertEqual(self.generate([
            AllocFromPoolLine(first, first=True), DeallocFromPoolLine(first),
            AllocFromPoolLine(second), DeallocFromPoolLine(second, last=True)]),
            ["pool0 = empty_strided_cuda(...)",
             "buf0 = alloc_from_pool(pool0, 0)", "del buf0",
             "buf1 = alloc_from_pool(pool0, 0)", "del pool0", "del buf1"])


class PoolViewTest(unittest.TestCase):
    """Each pooled buffer is a reinterpret_tensor of its pool's view in its
    dtype (one alloc_from_pool per pool and dtype), not a dispatcher call
    of its own."""

    def generate(self, lines):
        return generate_pool_code(lines)

    def generate_two(self, a, b):
        """The code of a then b allocated from their pool (a first), then
        both freed (b last)."""
        wrapper = Wrapper()
        return self.generate([
            AllocFromPoolLine(a, first=True, wrapper=wrapper),
            AllocFromPoolLine(b, wrapper=wrapper),
            DeallocFromPoolLine(a), DeallocFromPoolLine(b, last=True)])

    def test_one_typed_view_per_pool_and_dtype(self):
        wrapper, pool = Wrapper(), Pool("pool0")
        a = PoolGroup(["buf0"], pool, 0, FLOAT32, (16, 8), (8, 1))
        b = PoolGroup(["buf1"], pool, 512, INT64, (4, ), (1, ))
        c = PoolGroup(["buf2"], pool, 1024, FLOAT32, (2, 3), (1, 2))
        self.assertEqual(self.generate([
            AllocFromPoolLine(a, first=True, wrapper=wrapper),
            AllocFromPoolLine(b, wrapper=wrapper),
            DeallocFromPoolLine(a), AllocFromPoolLine(c, wrapper=wrapper),
            DeallocFromPoolLine(b), DeallocFromPoolLine(c, last=True)]), [
            # Typed as most of its buffers: 4096 bytes of float32.
            "pool0 = empty_strided_cuda((1024, ), (1, ), torch.float32)",
            "buf0 = reinterpret_tensor(pool0, (16, 8), (8, 1), 0)",
            # The pool's only int64 buffer: a view of the pool as int64,
            # inline (two C++ calls, not alloc_from_pool's dispatcher).
            "buf1 = reinterpret_tensor(pool0.view(torch.int64), (4, ), (1, ),"
            " 64)",
            # buf0's view is kept while the pool takes more (see below).
            # The offset in elements: 1024 bytes of float32.
            "buf2 = reinterpret_tensor(pool0, (2, 3), (1, 2), 256)",
            "del pool0, buf0",
            "del buf1",
            "del buf2"])

    def test_a_pool_of_symbolic_size_is_bytes_with_a_typed_view(self):
        # Its size in elements is not written: Inductor's creation (uint8),
        # then one view in the buffers' dtype.
        pool = Pool("pool0", static=False)
        a = PoolGroup(["buf0"], pool, 0, FLOAT32)
        b = PoolGroup(["buf1"], pool, 64, FLOAT32)
        self.assertEqual(self.generate_two(a, b), [
            "pool0 = empty_strided_cuda(...)",
            "pool0_float32 = alloc_from_pool(pool0, 0, torch.float32, "
            "(0, ), (1, ))",
            "buf0 = reinterpret_tensor(pool0_float32, (4, ), (1, ), 0)",
            "buf1 = reinterpret_tensor(pool0_float32, (4, ), (1, ), 16)",
            "del pool0, pool0_float32",
            "del buf0",
            "del buf1"])

    def test_a_view_of_a_second_dtype_once_the_pool_is_typed(self):
        wrapper, pool = Wrapper(), Pool("pool0")
        a = PoolGroup(["buf0"], pool, 0, FLOAT32)
        b = PoolGroup(["buf1"], pool, 64, INT64)
        c = PoolGroup(["buf2"], pool, 128, INT64)
        d = PoolGroup(["buf3"], pool, 192, FLOAT32)
        e = PoolGroup(["buf4"], pool, 256, FLOAT32)
        self.assertEqual(self.generate([
            AllocFromPoolLine(g, first=g is a, wrapper=wrapper)
            for g in (a, b, c, d, e)] + [
            DeallocFromPoolLine(g, last=g is e) for g in (a, b, c, d, e)]), [
            "pool0 = empty_strided_cuda((1024, ), (1, ), torch.float32)",
            "buf0 = reinterpret_tensor(pool0, (4, ), (1, ), 0)",
            "pool0_int64 = pool0.view(torch.int64)",
            "buf1 = reinterpret_tensor(pool0_int64, (4, ), (1, ), 8)",
            "buf2 = reinterpret_tensor(pool0_int64, (4, ), (1, ), 16)",
            "buf3 = reinterpret_tensor(pool0, (4, ), (1, ), 48)",
            "buf4 = reinterpret_tensor(pool0, (4, ), (1, ), 64)",
            "del pool0, pool0_int64",
            "del buf0", "del buf1", "del buf2", "del buf3", "del buf4"])

    def test_alloc_from_pool_where_the_pools_bytes_are_not_whole_elements(
            self):
        # 4092 bytes of float32 are not a whole number of int64s:
        # Tensor.view(torch.int64) would refuse them, so the int64 buffers
        # are views of alloc_from_pool's typed view, or alloc_from_pool's
        # own where the pool holds one.
        wrapper = Wrapper()
        for count, expected in ((1, [
                "buf1 = alloc_from_pool(pool0, 64, torch.int64, (4, ), "
                "(1, ))"]), (2, [
                "pool0_int64 = alloc_from_pool(pool0, 0, torch.int64, (0, ), "
                "(1, ))",
                "buf1 = reinterpret_tensor(pool0_int64, (4, ), (1, ), 8)",
                "buf2 = reinterpret_tensor(pool0_int64, (4, ), (1, ), 16)"])):
            pool = Pool("pool0", 4092)
            groups = [PoolGroup(["buf0"], pool, 0, FLOAT32),
                      PoolGroup(["buf3"], pool, 256, FLOAT32)] + [
                PoolGroup([f"buf{i + 1}"], pool, 64 * (i + 1), INT64)
                for i in range(count)]
            code = self.generate([
                AllocFromPoolLine(g, first=g is groups[0], wrapper=wrapper)
                for g in groups])
            self.assertEqual(code[0], "pool0 = empty_strided_cuda((1023, ), "
                             "(1, ), torch.float32)")
            self.assertEqual(code[3:3 + len(expected)], expected)

    def test_a_dead_buffers_view_is_taken_over_not_made_again(self):
        # buf0 and buf2 are the same view of pool0: buf2 takes buf0's name
        # over, as default's reuse pass renames a freed buffer; a view
        # freed while the pool takes more buffers is kept for them, and
        # deleted with the pool after its last allocation (freeing it
        # earlier would free nothing: pool0's name holds the storage).
        wrapper, pool = Wrapper(), Pool("pool0")
        a = PoolGroup(["buf0", "buf5"], pool, 0, FLOAT32, (16, 8), (8, 1))
        b = PoolGroup(["buf1"], pool, 512, FLOAT32)
        c = PoolGroup(["buf2"], pool, 0, FLOAT32, (16, 8), (8, 1))
        d = PoolGroup(["buf3"], pool, 512, FLOAT32, (2, 2), (2, 1))
        e = PoolGroup(["buf4"], pool, 1024, FLOAT32)
        self.assertEqual(self.generate([
            AllocFromPoolLine(a, first=True, wrapper=wrapper),
            AllocFromPoolLine(b, wrapper=wrapper), DeallocFromPoolLine(a),
            AllocFromPoolLine(c, wrapper=wrapper), DeallocFromPoolLine(b),
            AllocFromPoolLine(d, wrapper=wrapper), DeallocFromPoolLine(c),
            AllocFromPoolLine(e, wrapper=wrapper), DeallocFromPoolLine(d),
            DeallocFromPoolLine(e, last=True)]), [
            "pool0 = empty_strided_cuda((1024, ), (1, ), torch.float32)",
            "buf0 = reinterpret_tensor(pool0, (16, 8), (8, 1), 0)",
            "buf1 = reinterpret_tensor(pool0, (4, ), (1, ), 128)",
            "del buf5",  # buf0 is kept
            "buf2 = buf0; del buf0  # reuse",
            # buf1's view differs from buf3's (shape): a view of its own.
            "buf3 = reinterpret_tensor(pool0, (2, 2), (2, 1), 128)",
            "buf4 = reinterpret_tensor(pool0, (4, ), (1, ), 256)",
            "del pool0, buf2, buf1",
            "del buf3",
            "del buf4"])

    def test_alloc_from_pool_where_the_offset_is_not_whole_elements(self):
        pool = Pool("pool0")
        a = PoolGroup(["buf0"], pool, 2, FLOAT32)
        b = PoolGroup(["buf1"], pool, 64, FLOAT32)
        self.assertEqual(self.generate_two(a, b), [
            "pool0 = empty_strided_cuda((1024, ), (1, ), torch.float32)",
            "buf0 = alloc_from_pool(pool0, 2, torch.float32, (4, ), (1, ))",
            "buf1 = reinterpret_tensor(pool0, (4, ), (1, ), 16)",
            "del pool0",
            "del buf0",
            "del buf1"])

    def test_a_pool_of_one_buffer_is_that_buffer(self):
        # The caching allocator rounds 4000 and 4096 bytes alike (4096):
        # buf0 is allocated itself and pool0 never made. buf1's pool is
        # a block larger than buf1 would get.
        wrapper = Wrapper()
        pool0, pool1 = Pool("pool0", 4096), Pool("pool1", 8192)
        a = PoolGroup(["buf0", "buf2"], pool0, 0, FLOAT32, (1000, ), (1, ),
                      size_hint=4000)
        b = PoolGroup(["buf1"], pool1, 0, FLOAT32, (1000, ), (1, ),
                      size_hint=4000)
        self.assertEqual(self.generate([
            AllocFromPoolLine(a, first=True, wrapper=wrapper),
            AllocFromPoolLine(b, first=True, wrapper=wrapper),
            DeallocFromPoolLine(a, last=True),
            DeallocFromPoolLine(b, last=True)]), [
            "buf0 = empty_strided_cuda((1000, ), (1, ), torch.float32)",
            "pool1 = empty_strided_cuda((2048, ), (1, ), torch.float32)",
            "buf1 = reinterpret_tensor(pool1, (1000, ), (1, ), 0)",
            "del pool1",
            "del buf0, buf2",
            "del buf1"])

    def test_a_wrapper_that_writes_no_python_pool_views_keeps_its_own(self):
        class CppWrapper(Wrapper):
            def codegen_alloc_from_pool(self, name, offset, dtype, shape,
                                        stride):
                return f"cpp_alloc({name}, {offset})", ["// setup"]

        pool = Pool("pool0")
        a = PoolGroup(["buf0"], pool, 0, FLOAT32)
        self.assertEqual(self.generate([
            AllocFromPoolLine(a, first=True, wrapper=CppWrapper()),
            DeallocFromPoolLine(a, last=True)]), [
            "pool0 = empty_strided_cuda(...)",
            "// setup",
            "buf0 = cpp_alloc(pool0, 0)",
            "del pool0",
            "del buf0"])


class UsedNode:
    """An FX node as memplan.release_groups reads it: op, name, target,
    users, and meta["val"] (here only its storage: `storage`, shared by
    views, of `size` bytes, and its `dtype`)."""

    def __init__(self, op, name, inputs=(), storage=None, target="",
                 size=1, dtype="float32"):
        self.op, self.name, self.users = op, name, {}
        self.args = (tuple(inputs),) if op == "output" else tuple(inputs)
        self.storage, self.target, self.size = storage, target, size
        self.dtype = dtype
        self.meta = {}
        for node in inputs:
            node.users[self] = None


def fx_module(nodes):
    return types.SimpleNamespace(graph=types.SimpleNamespace(nodes=nodes),
                                 meta={})


def backward_module():
    """A backward graph: relu and mean read last by one node (node 6),
    conv read last through a view of it (node 7), kept returned, unused
    never read, tangents_1 not saved. relu and mean are bfloat16, the
    values float32: no kernel takes them over in place."""
    relu = UsedNode("placeholder", "relu", storage="relu", dtype="bfloat16")
    mean = UsedNode("placeholder", "mean", storage="mean", dtype="bfloat16")
    conv = UsedNode("placeholder", "conv", storage="conv")
    kept = UsedNode("placeholder", "kept", storage="kept")
    unused = UsedNode("placeholder", "unused", storage="unused")
    tangents = UsedNode("placeholder", "tangents_1", storage="t")
    first = UsedNode("call_function", "mul", [relu, tangents], storage="m")
    view = UsedNode("call_function", "view", [conv], storage="conv")
    last = UsedNode("call_function", "bn_backward", [first, relu, mean],
                  storage="g")
    through_view = UsedNode("call_function", "conv_backward", [last, view],
                          storage="h",
                          target="aten.convolution_backward.default")
    output = UsedNode("output", "output", [through_view, kept])
    return fx_module([relu, mean, conv, kept, unused, tangents, first, view,
                      last, through_view, output])


class ReleaseGroupsTest(unittest.TestCase):
    """memplan.release_groups: the saved activations a backward frees
    together, read from its FX graph."""

    def test_last_uses_through_views_none_where_kept_or_unread(self):
        self.assertEqual(
            release_groups.saved_last_uses(
                backward_module(), storage_of=lambda node: node.storage),
            {"relu": 8, "mean": 8, "conv": 9, "kept": None, "unused": None})

    def test_buffers_of_one_last_use_make_a_group(self):
        last_uses = {"relu": 8, "mean": 8, "getitem": 8, "conv": 9,
                     "conv_view": 9, "alone": 5, "kept": None}
        output_args = [("loss", False), ("relu", False), ("mean", False),
                       ("getitem", False), ("conv", False),
                       ("conv_view", False), ("alone", False),
                       ("kept", False), ("primals_1", True)]
        # getitem is a view of buf3 (conv's), whose key is then conv's 9;
        # conv_view is a second output of buf5.
        buffers = ["buf0", "buf1", "buf2", "buf3", "buf4", "buf5", "buf6",
                   "buf7", "primals_1"]
        outputs = set(buffers) - {"buf5"}  # buf5: not an output name
        self.assertEqual(
            release_groups.release_groups(output_args, buffers, last_uses,
                                          outputs),
            [["buf1", "buf2", "buf3"]])
        buffers[3] = "buf4"  # getitem a view of conv's buffer: 9
        self.assertEqual(
            release_groups.release_groups(output_args, buffers, last_uses,
                                          outputs),
            [["buf1", "buf2"]])
        buffers[8] = "buf1"  # an input aliasing a saved buffer: apart
        self.assertEqual(
            release_groups.release_groups(output_args, buffers, last_uses,
                                          outputs), [])
        self.assertEqual(release_groups.release_groups(
            output_args[:-1], buffers, last_uses, outputs), [])

    def test_a_partition_notes_its_forward_for_the_forwards_compile(self):
        relu = UsedNode("call_function", "relu")
        forward = fx_module([relu, UsedNode("output", "output", [relu])])
        backward = backward_module()

        def partition(*args, **kwargs):
            return forward, backward
        with mock.patch.object(release_groups, "_fake_storage",
                               lambda node: getattr(node, "storage", None)), \
                mock.patch.object(release_groups, "_fake_nbytes",
                                  lambda node: node.size), \
                mock.patch.object(release_groups, "_fake_dtype",
                                  lambda node: node.dtype):
            wrapped = release_groups.wrap_partition(partition)
            self.assertEqual(wrapped("joint", [1]), (forward, backward))
        self.assertEqual(wrapped.__wrapped__, partition)
        # conv is read last by the extern conv_backward: a segment of its
        # own, apart from relu and mean.
        expected = {"relu": 8, "mean": 8, "conv": 9, "kept": None,
                    "unused": None}
        self.assertEqual(release_groups.free_points_of(forward), expected)
        # A copy of the forward (no meta of its own) with the same output
        # names: this thread's last partition; other names: none.
        copy = fx_module(forward.graph.nodes)
        del copy.meta
        self.assertEqual(release_groups.free_points_of(copy), expected)
        other = UsedNode("call_function", "other")
        self.assertEqual(release_groups.free_points_of(
            fx_module([other, UsedNode("output", "output", [other])])), {})

    @staticmethod
    def batch_norm_backward(tangent_bytes, mul_target=""):
        """A backward graph: an extern node (5), then a batch norm's
        backward reading x and mean last at 6, rstd at 7 and big at 8, then
        an extern node (9). Bytes: x 100, mean and rstd 4, big 1000,
        tangents `tangent_bytes`, every value 100 but the extern outputs'
        10. Simulated live bytes (tangents of 10): 1128, 1218 (the peak),
        1214, 1210, 120 at nodes 5 to 9. x is bfloat16, the values float32:
        no kernel takes x over in place."""
        x = UsedNode("placeholder", "x", storage="x", size=100,
                     dtype="bfloat16")
        mean = UsedNode("placeholder", "mean", storage="mean", size=4)
        rstd = UsedNode("placeholder", "rstd", storage="rstd", size=4)
        big = UsedNode("placeholder", "big", storage="big", size=1000)
        tangents = UsedNode("placeholder", "tangents_1", storage="t",
                            size=tangent_bytes)
        extern = "aten.convolution_backward.default"
        grad_1 = UsedNode("call_function", "grad_1", [tangents],
                          storage="g1", target=extern, size=10)
        sub = UsedNode("call_function", "sub", [x, mean], storage="sub",
                       size=100)
        mul = UsedNode("call_function", "mul", [sub, rstd], storage="mul",
                       target=mul_target, size=100)
        add = UsedNode("call_function", "add", [mul, big], storage="add",
                       size=100)
        grad_2 = UsedNode("call_function", "grad_2", [add], storage="g2",
                          target=extern, size=10)
        output = UsedNode("output", "output", [grad_2, grad_1])
        return fx_module([x, mean, rstd, big, tangents, grad_1, sub, mul,
                          add, grad_2, output])

    def free_points(self, module, size_of=lambda node: node.size,
                    unpooled=()):
        storage_of = lambda node: node.storage  # noqa: E731
        last_uses = release_groups.saved_last_uses(module, storage_of)
        self.assertEqual(last_uses, {"x": 6, "mean": 6, "rstd": 7, "big": 8})
        return release_groups.free_points(module, last_uses, storage_of,
                                          size_of, unpooled,
                                          lambda node: node.dtype)

    @staticmethod
    def relu_backward(where_dtype="float32"):
        """A backward graph: an extern node (3), relu read last by le (4),
        whose where (5) has relu's bytes and dtype and so may take relu
        over in place, and mul (6) where's in turn; stat read last by mul;
        then an extern node (7) reading mul. Bytes: relu, where and mul
        100, stat 4, tangents 500, le 25, the extern outputs 10; the peak,
        614, at node 3."""
        relu = UsedNode("placeholder", "relu", storage="relu", size=100)
        stat = UsedNode("placeholder", "stat", storage="stat", size=4)
        tangents = UsedNode("placeholder", "tangents_1", storage="t",
                            size=500)
        extern = "aten.convolution_backward.default"
        grad_1 = UsedNode("call_function", "grad_1", [tangents],
                          storage="g1", target=extern, size=10)
        le = UsedNode("call_function", "le", [relu], storage="le", size=25,
                      dtype="bool")
        where = UsedNode("call_function", "where", [le, grad_1],
                         storage="where", size=100, dtype=where_dtype)
        mul = UsedNode("call_function", "mul", [where, stat], storage="mul",
                       size=100, dtype=where_dtype)
        grad_2 = UsedNode("call_function", "grad_2", [mul], storage="g2",
                          target=extern, size=10)
        output = UsedNode("output", "output", [grad_2, grad_1])
        return fx_module([relu, stat, tangents, grad_1, le, where, mul,
                          grad_2, output])

    def test_a_storage_taken_over_in_place_is_freed_with_its_taker(self):
        storage_of = lambda node: node.storage  # noqa: E731
        size_of = lambda node: node.size  # noqa: E731
        dtype_of = lambda node: node.dtype  # noqa: E731
        module = self.relu_backward()
        last_uses = release_groups.saved_last_uses(module, storage_of)
        self.assertEqual(last_uses, {"relu": 4, "stat": 6})
        # where takes relu over, mul where: relu's storage lives until the
        # extern node 7 reads mul, past the segment stat is freed in.
        self.assertEqual(
            release_groups.free_points(module, last_uses, storage_of,
                                       size_of, (), dtype_of),
            {"relu": 7, "stat": 6})
        # where of another dtype takes nothing over: relu, freed at 4, is
        # held to stat's free at 6 within the peak: one group.
        module = self.relu_backward(where_dtype="float16")
        self.assertEqual(
            release_groups.free_points(module, last_uses, storage_of,
                                       size_of, (), dtype_of),
            {"relu": 6, "stat": 6})

    def test_free_points_group_a_segment_unless_it_raises_the_peak(self):
        # Holding x and mean (104 bytes) to rstd's free would raise node
        # 7's 1214 bytes past the peak of 1218: cut there; rstd held to
        # big's free adds 4 bytes to node 8's 1210: one group.
        self.assertEqual(self.free_points(self.batch_norm_backward(10)),
                         {"x": 6, "mean": 6, "rstd": 8, "big": 8})
        # With a peak of 1618 at node 5, the whole segment is one group.
        self.assertEqual(self.free_points(self.batch_norm_backward(500)),
                         {"x": 8, "mean": 8, "rstd": 8, "big": 8})
        # x an extern kernel's output (in no pool of the forward): held by
        # no pool, so mean and rstd alone are held (4 and 8 bytes, to 1218
        # at nodes 7 and 8): one group at the peak of 1218 too.
        self.assertEqual(self.free_points(self.batch_norm_backward(10),
                                          unpooled={"x"}),
                         {"x": 8, "mean": 8, "rstd": 8, "big": 8})

    def test_extern_outputs_are_extern_nodes_and_their_getitems(self):
        x = UsedNode("placeholder", "primals_1")
        conv = UsedNode("call_function", "convolution", [x],
                        target="aten.convolution.default")
        attention = UsedNode(
            "call_function", "attention", [conv],
            target="aten._scaled_dot_product_efficient_attention.default")
        out = UsedNode("call_function", "getitem", [attention],
                       target="getitem")
        relu = UsedNode("call_function", "relu", [conv],
                        target="aten.relu.default")
        stat = UsedNode("call_function", "getitem_1", [relu],
                        target="getitem")
        module = fx_module([x, conv, attention, out, relu, stat,
                            UsedNode("output", "output", [out, relu])])
        self.assertEqual(release_groups.extern_outputs(module),
                         {"convolution", "attention", "getitem"})

    def test_free_points_never_group_across_an_extern_node(self):
        # mul an extern kernel: rstd read last by it is in a segment of its
        # own, apart from x and mean, however much memory there is.
        self.assertEqual(
            self.free_points(self.batch_norm_backward(500, "aten.mm.default")),
            {"x": 6, "mean": 6, "rstd": 8, "big": 8})

    def test_free_points_are_the_last_uses_where_a_size_is_symbolic(self):
        module = self.batch_norm_backward(500)
        self.assertEqual(
            self.free_points(module, lambda node: None if node.name == "add"
                             else node.size),
            {"x": 6, "mean": 6, "rstd": 7, "big": 8})
        def unreadable(node):
            raise RuntimeError("no storage")
        with self.assertWarnsRegex(UserWarning, "one last reader only"):
            self.assertEqual(
                release_groups.free_points(
                    module, {"x": 6, "mean": 6, "rstd": 7, "big": 8},
                    unreadable, lambda node: node.size),
                {"x": 6, "mean": 6, "rstd": 7, "big": 8})
        module.graph.nodes[1].storage = None  # mean: no storage
        self.assertEqual(self.free_points(module),
                         {"x": 6, "mean": 6, "rstd": 7, "big": 8})


class ServiceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.client = MemplanClient(self.server.target, timeout=10.0)

    def tearDown(self):
        hook.uninstall()
        hook.reset_stats()
        self.client.close()

    def planned_by_service(self, mp, lines):
        """Plans `lines` with the installed hook, with no fallback
        warning; returns the graph's stats() record, which the service
        planned."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback warning
            mp.MemoryPlanner().plan(lines)
        record = hook.stats()["graphs"][-1]
        self.assertEqual(record["source"], "service")
        return record

    def test_events_give_the_plan_of_inductors_groups(self):
        lines, groups = example_graph()
        events = hook.events_from_lines(lines, allocations_of(groups),
                                        {"buf9"})
        self.assertEqual(len(events), len(lines))
        options = pb.PlanOptions(strategy=strategy("inductor"))
        from_events = self.client.plan(
            events=events, output_names=["buf1"], removed_buffers=["buf9"],
            options=options)
        from_buffers = self.client.plan(
            buffers=hook.buffers_from_groups(groups), options=options)
        # The service formed Inductor's groups, in order, at their lines.
        hook.read_placement(from_events, [g.names for g in groups],
                            ["cuda:0"] * 4, allocate_lines=[0, 1, 7, 10])
        self.assertEqual(
            [(a.pool, a.offset) for a in from_events.assignments],
            [(a.pool, a.offset) for a in from_buffers.assignments])
        self.assertEqual(
            [(p.name, p.size_bytes) for p in from_events.pools],
            [(p.name, p.size_bytes) for p in from_buffers.pools])
        self.assertEqual(from_events.stats.lower_bound_bytes,
                         from_buffers.stats.lower_bound_bytes)

    def test_a_placement_that_does_not_fit_inductors_groups_is_refused(self):
        lines, groups = example_graph()
        events = hook.events_from_lines(lines, allocations_of(groups),
                                        {"buf9"})
        response = self.client.plan(events=events, output_names=["buf1"],
                                    removed_buffers=["buf9"])
        names = [g.names for g in groups]
        with self.assertRaisesRegex(hook.HookError, "at event 7"):
            hook.read_placement(response, names, ["cuda:0"] * 4,
                                allocate_lines=[0, 1, 8, 10])
        with self.assertRaisesRegex(hook.HookError, "4 assignments for 3"):
            hook.read_placement(response, names[:3], ["cuda:0"] * 3)
        with self.assertRaisesRegex(hook.HookError, "buf0 on cuda:1"):
            hook.read_placement(response, names, ["cuda:1"] + ["cuda:0"] * 3)

    def test_the_hook_gives_inductor_the_services_pools_and_offsets(self):
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "auto", None, "events")
        planner = mp.MemoryPlanner()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback warning
            planner.plan(lines)
        self.assertEqual(mp.MemoryPlanner.own_plans, 0)
        record = hook.stats()["graphs"][0]
        self.assertEqual(hook.stats()["service_plans"], 1)
        self.assertEqual(record["input"], "events")
        response = record["response"]
        self.assertEqual(
            [(g.allocation.pool.name, g.allocation.offset) for g in groups],
            [(a.pool, a.offset) for a in response.assignments])
        pools = planner.pools.device_to_pools["cuda:0"]
        self.assertEqual(
            [(p.name, p.root.get_symbolic_size(), p.can_expand)
             for p in pools],
            [(p.name, p.size_bytes, False) for p in response.pools])
        for pool in pools:  # mark_first_last_usage reads these ranges
            self.assertEqual(
                pool.root.get_live_ranges().end,
                max(g.live_range.end for g in groups
                    if g.allocation.pool is pool))
        # The same graph as buffers gets the same plan.
        again = self.client.plan(record["buffers_request"])
        self.assertEqual([(a.pool, a.offset) for a in again.assignments],
                         [(a.pool, a.offset) for a in response.assignments])

    def test_a_shadow_predicts_the_graph_and_changes_nothing(self):
        # install(shadow=True): the request install() sends, the service's
        # predictions recorded, and Inductor's lines, groups and planner
        # left as they were (no pool built, Inductor's own plan not run, a
        # ReuseLine's delete_old put back after convert_to_pool_lines).
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        reuse = lines[4]
        reuse.delete_old = True

        class Planner(mp.MemoryPlanner):
            passes = []

            def drop_removed_buffers(self, copy):
                self.passes.append("drop")
                copy[2] = NullLine()

            def convert_to_pool_lines(self, copy):
                self.passes.append("convert")
                reuse.delete_old = False  # as Inductor's pass does

            def compute_live_ranges(self, copy):
                self.passes.append("live ranges")

        hook._install_on(mp, self.client, "auto", None, "events", shadow=True)
        before = [*lines]
        planner = Planner()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            hook.shadow_plan(hook._state, lines, lambda: planner)
        self.assertEqual(lines, before)
        self.assertTrue(reuse.delete_old)
        self.assertEqual(Planner.passes, ["drop", "convert", "live ranges"])
        self.assertEqual(mp.MemoryPlanner.own_plans, 0)
        self.assertEqual(planner.pools.device_to_pools, {})
        self.assertTrue(all(g.allocation.pool is None for g in groups))
        stats = hook.stats()
        self.assertEqual((stats["service_plans"], stats["fallbacks"]), (1, 0))
        record = stats["graphs"][0]
        self.assertTrue(record["shadow"])
        self.assertEqual(record["input"], "events")
        # The events of the lines as they were (buf9 removed, not dropped).
        self.assertEqual(len(record["request"].events), len(lines))
        expected = self.client.plan(record["request"])
        self.assertEqual(record["baseline_peak_bytes"],
                         expected.stats.baseline_peak_bytes)
        self.assertEqual(record["predicted_peak_bytes"],
                         expected.stats.predicted_peak_bytes)
        self.assertGreater(record["baseline_peak_bytes"], 0)
        # The class's own methods stay Inductor's.
        self.assertIs(mp.MemoryPlanner.plan, hook._state.original_plan)

    def test_a_shadow_that_cannot_plan_records_inductor_and_goes_on(self):
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)

        class Planner(mp.MemoryPlanner):
            def drop_removed_buffers(self, copy):
                pass

            def convert_to_pool_lines(self, copy):
                pass

            def compute_live_ranges(self, copy):
                pass

        closed = MemplanClient(closed_target(), timeout=0.5)
        self.addCleanup(closed.close)
        hook._install_on(mp, closed, "auto", None, "events", shadow=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # logged, not a warning
            hook.shadow_plan(hook._state, lines, Planner)
        stats = hook.stats()
        self.assertEqual((stats["service_plans"], stats["fallbacks"]), (0, 1))
        self.assertTrue(stats["graphs"][0]["shadow"])
        self.assertIn("reason", stats["graphs"][0])

    def test_the_allocators_cached_blocks_go_with_the_graph(self):
        # A cached small-pool segment's 2 MiB on the graph's device hold
        # every allocation of the example graph (each under 1 MiB):
        # nothing reserved, with or without pools.
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "auto", None, "events")
        cached = [pb.CachedBlock(device="cuda:0", size_bytes=2 << 20,
                                 small_pool=True)]
        with mock.patch.object(hook, "_entry_cache", return_value=cached):
            mp.MemoryPlanner().plan(lines)
        record = hook.stats()["graphs"][0]
        self.assertEqual(list(record["request"].cached_blocks), cached)
        self.assertEqual((record["cached_blocks"],
                          record["cached_block_bytes"]), (1, 2 << 20))
        self.assertEqual(record["predicted_reserved_bytes"], 0)
        self.assertEqual(record["baseline_reserved_bytes"], 0)
        without = self.client.plan(record["buffers_request"])
        self.assertGreater(without.stats.predicted_reserved_bytes, 0)

    def test_cached_blocks_go_with_inference_and_forward_graphs(self):
        # A training forward's compile-time cache holds what its measured
        # step starts with too (the segment of the input batch); a
        # backward's start the service models from its forward.
        cached = [pb.CachedBlock(device="cuda:0", size_bytes=2 << 20,
                                 small_pool=True)]
        for phase, sent in (("inference", True), ("forward", True),
                            ("backward", False)):
            with self.subTest(phase=phase):
                lines, mp = graph_of_phase(phase)
                hook._install_on(mp, self.client, "auto", None, "events",
                                 training=True)
                with mock.patch.object(hook, "_entry_cache",
                                       return_value=cached):
                    mp.MemoryPlanner().plan(lines)
                record = hook.stats()["graphs"][-1]
                self.assertEqual(list(record["request"].cached_blocks),
                                 cached if sent else [])
                hook.uninstall()

    def test_the_alignment_goes_with_the_graph(self):
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "auto", None, "events",
                         alignment=512)
        mp.MemoryPlanner().plan(lines)
        record = hook.stats()["graphs"][0]
        self.assertEqual(record["request"].options.alignment, 512)
        self.assertTrue(all(a.offset % 512 == 0
                            for a in record["response"].assignments))
        self.assertGreater(len(record["response"].assignments), 1)

    def test_a_backward_graphs_outputs_go_as_released_together(self):
        # A training backward's outputs are its gradients, which autograd
        # takes together as it returns: its request says so by default and
        # with pool_gradients=True, not with False; an inference graph's
        # never.
        for phase, pool_gradients, together in (
                ("backward", True, True), ("backward", None, True),
                ("backward", False, False), ("inference", True, False),
                ("inference", None, False)):
            with self.subTest(phase=phase, pool_gradients=pool_gradients):
                lines, mp = graph_of_phase(phase)
                options = {} if pool_gradients is None else {
                    "pool_gradients": pool_gradients}
                hook._install_on(mp, self.client, "auto", None, "events",
                                 **options)
                record = self.planned_by_service(mp, lines)
                self.assertEqual(
                    record["request"].options.outputs_released_together,
                    together)
                hook.uninstall()

    def test_a_training_forward_names_its_saved_activations_release_groups(
            self):
        # Outputs A and B are read last by one backward node (8), C by
        # another: one release group, [A, B]; none with
        # group_saved_activations=False, none for an inference graph.
        node = {name: Node(name) for name in ("bufA", "bufB", "bufC")}
        lines = [AllocateLine(node["bufA"]), KernelCallLine(),
                 AllocateLine(node["bufB"]), KernelCallLine(),
                 AllocateLine(node["bufC"]), KernelCallLine(),
                 "return (bufA, bufB, bufC)"]
        for phase, grouped, expected in (
                ("forward", True, [["bufA", "bufB"]]),
                ("forward", False, []), ("inference", True, [])):
            with self.subTest(phase=phase, grouped=grouped):
                groups = [BufferGroup(node["bufA"], 256, LiveRange(1, 4),
                                      is_output=True),
                          BufferGroup(node["bufB"], 128, LiveRange(2, 4),
                                      is_output=True),
                          BufferGroup(node["bufC"], 64, LiveRange(3, 4),
                                      is_output=True)]
                mp = fake_memory_planning(groups, removed=(),
                                          outputs=("bufA", "bufB", "bufC"))
                graph = mp.V.graph
                graph.is_backward = False
                graph.is_inference = phase == "inference"
                graph.graph_id = 5150
                fx_outputs = [UsedNode("call_function", name)
                              for name in ("relu", "mean", "conv")]
                graph.module = fx_module(
                    [*fx_outputs, UsedNode("output", "output", fx_outputs)])
                graph.module.meta[release_groups.META_KEY] = {
                    "relu": 8, "mean": 8, "conv": 9}
                graph.graph_outputs = [
                    types.SimpleNamespace(get_name=lambda n=n: n)
                    for n in ("bufA", "bufB", "bufC")]
                hook._install_on(mp, self.client, "auto", None, "events",
                                 training=True,
                                 group_saved_activations=grouped)
                record = self.planned_by_service(mp, lines)
                self.assertEqual(
                    [list(g.outputs)
                     for g in record["request"].release_groups], expected)
                hook.uninstall()

    def test_inference_graphs_ask_for_segment_reservations(self):
        # PlanOptions.reserve_segments: an inference graph's request asks
        # for them unless reserve_segments=False; a training graph's never
        # (install()'s default is on).
        self.assertIs(inspect.signature(hook.install)
                      .parameters["reserve_segments"].default, True)
        for phase, reserve, asked in (
                ("inference", True, True), ("inference", False, False),
                ("backward", True, False), ("forward", True, False)):
            with self.subTest(phase=phase, reserve=reserve):
                lines, mp = graph_of_phase(phase)
                hook._install_on(mp, self.client, "auto", None, "events",
                                 reserve_segments=reserve)
                mp.MemoryPlanner().plan(lines)
                record = hook.stats()["graphs"][-1]
                self.assertEqual(record["source"], "service")
                self.assertEqual(record["request"].options.reserve_segments,
                                 asked)
                hook.uninstall()

    def test_the_services_segment_reservations_run_first(self):
        # Each reservation the response names becomes a line before the
        # graph's first: a tensor of its bytes on its device, deleted at
        # once; the lines after it are those without the reservation.
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "auto", None, "events",
                         reserve_segments=True)
        plain = mp.MemoryPlanner().plan([*lines])
        hook.uninstall()

        class Reserving:
            def __init__(self, client):
                self.client = client

            def plan(self, *args, **kwargs):
                response = self.client.plan(*args, **kwargs)
                response.segment_reservations.add(device="cuda:0",
                                                  size_bytes=64 << 20)
                return response

        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, Reserving(self.client), "auto", None, "events",
                         reserve_segments=True)
        planned = mp.MemoryPlanner().plan(lines)
        self.assertEqual(
            planned[0], "memplan_segment0 = torch.empty((67108864,), "
            "dtype=torch.uint8, device='cuda:0'); del memplan_segment0")
        self.assertEqual(len(planned), len(plain) + 1)
        self.assertEqual(hook.stats()["graphs"][-1]["segment_reservations"],
                         [("cuda:0", 64 << 20)])

    def test_a_reservation_is_the_wrappers_allocation_inside_its_guard(self):
        # As the wrapper allocates (empty_strided_cuda: no torch.empty
        # argument parsing), first inside the guard of its device, before
        # any line that touches memory; a reservation of a device the graph
        # enters only after an allocation, or without a guard, stays a
        # torch.empty before the first line.
        fake_torch = types.ModuleType("torch")
        fake_torch.uint8 = UINT8
        fake_torch.device = lambda text: types.SimpleNamespace(
            type=text.split(":")[0], index=int(text.split(":")[1]))
        response = pb.PlanMemoryResponse()
        for device, size in (("cuda:0", 64 << 20), ("cuda:1", 4 << 20),
                             ("cuda:2", 2 << 20)):
            response.segment_reservations.add(device=device, size_bytes=size)
        allocate = AllocateLine(Node("buf0"))
        lines = ["# comment", KernelCallLine(),
                 EnterDeviceContextManagerLine(0), allocate,
                 EnterDeviceContextManagerLine(2), "return ()"]
        with mock.patch.dict("sys.modules", {"torch": fake_torch}):
            planned = hook.with_reservations(lines, response, Wrapper())
        self.assertEqual(planned, [
            "memplan_segment1 = torch.empty((4194304,), dtype=torch.uint8, "
            "device='cuda:1'); del memplan_segment1",
            "memplan_segment2 = torch.empty((2097152,), dtype=torch.uint8, "
            "device='cuda:2'); del memplan_segment2",
            "# comment", lines[1], lines[2],
            "memplan_segment0 = empty_strided_cuda((67108864, ), (1, ), "
            "torch.uint8); del memplan_segment0",
            allocate, lines[4], "return ()"])
        # Without a wrapper that allocates so, every one is torch.empty.
        plain = hook.with_reservations(lines, response, None)
        self.assertEqual(plain, [*hook.reservation_lines(response), *lines])
        self.assertEqual(hook.with_reservations(
            lines, pb.PlanMemoryResponse(), Wrapper()), lines)

    def test_training_graphs_ask_for_a_private_pool(self):
        # install(private_pool=True): a training graph's
        # request says PlanOptions.private_pool, a training forward's asks
        # for reservations (with reserve_segments) and carries no cached
        # blocks of the default pool; inference graphs are as without it.
        self.assertEqual(inspect.signature(hook.install)
                         .parameters["private_pool"].default, "auto")
        cached = [pb.CachedBlock(device="cuda:0", size_bytes=512)]
        for phase, private, reserve, asked_private, asked_reserve, sent in (
                ("forward", True, True, True, True, False),
                ("forward", True, False, True, False, False),
                ("forward", False, True, False, False, True),
                ("backward", True, True, True, False, False),
                ("inference", True, True, False, True, True)):
            with self.subTest(phase=phase, private=private, reserve=reserve):
                lines, mp = graph_of_phase(phase)
                hook._install_on(mp, self.client, "auto", None, "events",
                                 training=True, reserve_segments=reserve,
                                 private_pool=private)
                with mock.patch.object(hook, "_entry_cache",
                                       return_value=cached):
                    planned = mp.MemoryPlanner().plan(lines)
                record = hook.stats()["graphs"][-1]
                self.assertEqual(record["source"], "service")
                options = record["request"].options
                self.assertEqual(options.private_pool, asked_private)
                self.assertEqual(options.reserve_segments, asked_reserve)
                self.assertEqual(len(record["request"].cached_blocks),
                                 1 if sent else 0)
                # The graph's code enters the pool first and leaves it last.
                entered = planned[0] == (
                    "from memplan.inductor import enter_private_pool as "
                    "memplan_enter_private_pool; memplan_pool_route = "
                    "memplan_enter_private_pool((0,))")
                self.assertEqual(entered, asked_private)
                self.assertEqual(
                    planned[-1] == "memplan_pool_route.close(); "
                    "del memplan_pool_route", asked_private)
                hook.uninstall()

    def test_a_backward_sizes_its_private_forwards_reservation(self):
        # A private-pool forward's reservation reads its size at run time
        # (reservation_bytes, keyed by the forward's graph_hash and device);
        # its backward's plan names the step's
        # (forward_segment_reservations), which the forward then reserves,
        # once per pool: a pool that cached one size keeps it until
        # release_private_pools(). The forward's stats() record gets the
        # step's reservation as its predicted peak's floor.
        class Sizing:
            def __init__(self, client):
                self.client = client

            def plan(self, request, *args, **kwargs):
                response = self.client.plan(request, *args, **kwargs)
                if request.options.reserve_segments:
                    response.segment_reservations.add(device="cuda:0",
                                                      size_bytes=64 << 20)
                elif request.options.private_pool:  # the backward's
                    response.forward_segment_reservations.add(
                        device="cuda:0", size_bytes=80 << 20)
                return response

        hook.release_private_pools()
        lines, mp = graph_of_phase("forward")
        mp.V.graph.graph_id = 7301
        hook._install_on(mp, Sizing(self.client), "auto", None, "events",
                         training=True, reserve_segments=True,
                         private_pool=True)
        planned = mp.MemoryPlanner().plan(lines)
        forward = hook.stats()["graphs"][-1]
        hook.uninstall()
        key = f"{forward['graph_hash']}@cuda:0"
        self.assertEqual(
            planned[1], "from memplan.inductor import reservation_bytes as "
            "memplan_reservation_bytes; memplan_segment0 = torch.empty(("
            f"memplan_reservation_bytes({key!r}, 67108864),), "
            "dtype=torch.uint8, device='cuda:0'); del memplan_segment0")
        self.assertNotIn(key, hook._step_reservations)

        lines, mp = graph_of_phase("backward")
        mp.V.graph.graph_id = 7301
        hook._install_on(mp, Sizing(self.client), "auto", None, "events",
                         training=True, reserve_segments=True,
                         private_pool=True)
        mp.MemoryPlanner().plan(lines)
        backward = hook.stats()["graphs"][-1]
        hook.uninstall()
        self.assertEqual(backward["step_reservations"], [("cuda:0", 80 << 20)])
        forward = hook.stats()["graphs"][-2]
        self.assertEqual(forward["step_reservations"], [("cuda:0", 80 << 20)])
        self.assertEqual(forward["predicted_peak_bytes"], max(
            80 << 20, forward["planned_predicted_peak_bytes"]))

        # The code's call: the step's size, then the same while the pools
        # live, the step's again after release_private_pools().
        self.assertEqual(hook.reservation_bytes(key, 64 << 20), 80 << 20)
        hook._step_reservations[key] = 96 << 20
        self.assertEqual(hook.reservation_bytes(key, 64 << 20), 80 << 20)
        hook.release_private_pools()
        self.assertEqual(hook.reservation_bytes(key, 64 << 20), 96 << 20)
        # A key no backward sized: the plan's own.
        self.assertEqual(hook.reservation_bytes("other@cuda:0", 64 << 20),
                         64 << 20)
        hook.release_private_pools()

    def test_a_step_sized_reservation_inside_the_guard(self):
        # As the wrapper allocates, the size read at run time.
        fake_torch = types.ModuleType("torch")
        fake_torch.uint8 = UINT8
        fake_torch.device = lambda text: types.SimpleNamespace(
            type=text.split(":")[0], index=int(text.split(":")[1]))
        response = pb.PlanMemoryResponse()
        response.segment_reservations.add(device="cuda:0", size_bytes=64 << 20)
        lines = [EnterDeviceContextManagerLine(0), "return ()"]
        with mock.patch.dict("sys.modules", {"torch": fake_torch}):
            planned = hook.with_reservations(lines, response, Wrapper(),
                                             "abc")
        self.assertEqual(planned, [
            lines[0],
            "from memplan.inductor import reservation_bytes as "
            "memplan_reservation_bytes; memplan_segment0 = "
            "empty_strided_cuda((memplan_reservation_bytes('abc@cuda:0', "
            "67108864), ), (1, ), torch.uint8); del memplan_segment0",
            "return ()"])

    def test_auto_picks_forwards_whose_callers_outputs_are_small(self):
        # private_pool="auto" (the default): a training forward runs in the
        # private pool where every output its caller receives (AOTAutograd's
        # user_visible_output_idxs) is at most 1 MiB, the caching
        # allocator's small allocations; its backward follows it (same
        # graph_id). A forward that does not say which outputs are the
        # caller's, or has a larger one, and its backward, do not.
        def forward(graph_id, caller_bytes, saved_bytes=64 << 20,
                    visible=True):
            lines, mp = graph_of_phase("forward")
            values = [*caller_bytes, saved_bytes]
            args = tuple(types.SimpleNamespace(meta={
                "val": FakeValue(size)}) for size in values)
            meta = {"user_visible_output_idxs":
                    list(range(len(caller_bytes)))} if visible else {}
            output = types.SimpleNamespace(op="output", args=(args,),
                                           meta=meta)
            mp.V.graph.module = types.SimpleNamespace(
                graph=types.SimpleNamespace(nodes=[output]))
            mp.V.graph.sizevars = types.SimpleNamespace(
                size_hint=lambda expr: expr.hint)
            mp.V.graph.graph_id = graph_id
            return lines, mp

        def backward(graph_id):
            lines, mp = graph_of_phase("backward")
            mp.V.graph.graph_id = graph_id
            return lines, mp

        symbolic = types.SimpleNamespace(
            node=types.SimpleNamespace(expr=types.SimpleNamespace(
                hint=2 << 20)))
        for name, caller, visible, private in (
                ("a loss and a classifier's logits", [4, 6400], True, True),
                ("no output the caller receives", [], True, True),
                ("1 MiB exactly", [1 << 20], True, True),
                ("logits of 62.5 MiB", [4, 65536000], True, False),
                ("a symbolic size hinted at 2 MiB", [symbolic], True, False),
                ("the outputs unknown", [4], False, False)):
            with self.subTest(name):
                graph_id = 9000 + len(name)
                lines, mp = forward(graph_id, caller, visible=visible)
                hook._install_on(mp, self.client, "auto", None, "events",
                                 training=True, reserve_segments=True,
                                 private_pool="auto")
                planned = mp.MemoryPlanner().plan(lines)
                record = hook.stats()["graphs"][-1]
                self.assertEqual(record["source"], "service")
                self.assertEqual(record["request"].options.private_pool,
                                 private)
                self.assertEqual(record["request"].options.reserve_segments,
                                 private)
                self.assertEqual(any("memplan_enter_private_pool" in
                                     str(line) for line in planned), private)
                hook.uninstall()
                lines, mp = backward(graph_id)
                hook._install_on(mp, self.client, "auto", None, "events",
                                 training=True, reserve_segments=True,
                                 private_pool="auto")
                mp.MemoryPlanner().plan(lines)
                record = hook.stats()["graphs"][-1]
                self.assertEqual(record["phase"], "backward")
                self.assertEqual(record["request"].options.private_pool,
                                 private)
                hook.uninstall()
        # A backward whose forward this process never planned: no pool.
        lines, mp = backward(123456)
        hook._install_on(mp, self.client, "auto", None, "events",
                         training=True, private_pool="auto")
        mp.MemoryPlanner().plan(lines)
        self.assertFalse(
            hook.stats()["graphs"][-1]["request"].options.private_pool)
        hook.uninstall()

    def test_shadow_and_false_send_no_private_pool(self):
        # Default torch.compile's graphs (shadow: a plan not applied) run in
        # the default pool, so their requests describe it whatever
        # private_pool says; False runs no graph there.
        for shadow, private in ((True, True), (False, False)):
            lines, mp = graph_of_phase("forward")
            state = hook._install_on(mp, self.client, "auto", None,
                                     "events", training=True,
                                     reserve_segments=True,
                                     private_pool=private)
            planner = mp.MemoryPlanner()
            planner._memplan_lines = [*lines]
            record = hook._allocate_from_service(state, planner,
                                                 apply=not shadow)
            self.assertFalse(record["request"].options.private_pool)
            self.assertFalse(record["request"].options.reserve_segments)
            hook.uninstall()
        with self.assertRaisesRegex(ValueError, "private_pool"):
            hook.private_pool_value("always")
        with self.assertRaisesRegex(ValueError, "private_pool"):
            hook.install(private_pool=1)

    def test_graphs_under_cuda_graphs_get_no_private_pool(self):
        # torch.compile(mode="reduce-overhead") patches Inductor's
        # config.triton.cudagraphs in: cudagraph trees allocate the graph's
        # memory from their own pool and check its outputs are there, so
        # the request asks for no private pool and the code enters none.
        lines, mp = graph_of_phase("forward")
        mp.config.triton = types.SimpleNamespace(cudagraphs=True)
        hook._install_on(mp, self.client, "auto", None, "events",
                         training=True, reserve_segments=True,
                         private_pool=True)
        planned = mp.MemoryPlanner().plan(lines)
        record = hook.stats()["graphs"][-1]
        self.assertEqual(record["source"], "service")
        self.assertFalse(record["request"].options.private_pool)
        self.assertFalse(record["request"].options.reserve_segments)
        self.assertFalse(any("memplan_enter_private_pool" in str(line)
                             for line in planned))
        hook.uninstall()

    def test_private_pool_lines_name_every_cuda_device_of_the_plan(self):
        response = pb.PlanMemoryResponse()
        response.pools.add(name="pool0", device="cuda:1", size_bytes=512)
        response.pools.add(name="pool1", device="cpu", size_bytes=512)
        response.segment_reservations.add(device="cuda:0",
                                          size_bytes=16 << 20)
        lines = ["# first", "return ()"]
        planned = hook.with_private_pool(lines, response)
        self.assertEqual(planned[1:-1], lines)
        self.assertTrue(planned[0].endswith(
            "memplan_enter_private_pool((0, 1))"))
        response = pb.PlanMemoryResponse()
        response.pools.add(name="pool0", device="cpu", size_bytes=512)
        self.assertEqual(hook.with_private_pool(lines, response), lines)

    @staticmethod
    def _fake_pool_torch(events, capturing):
        """A torch module whose cuda.MemPool numbers its pools from 1 and
        whose use_mem_pool records ("enter" / "exit", pool id, device) in
        `events`; capturing[0]: is_current_stream_capturing()."""
        fake_torch = types.ModuleType("torch")

        class MemPool:
            made = 0

            def __init__(self):
                MemPool.made += 1
                self.id = MemPool.made

        @contextlib.contextmanager
        def use_mem_pool(pool, device=None):
            events.append(("enter", pool.id, device))
            yield
            events.append(("exit", pool.id, device))

        fake_torch.cuda = types.SimpleNamespace(
            MemPool=MemPool, use_mem_pool=use_mem_pool,
            is_current_stream_capturing=lambda: capturing[0])
        return fake_torch

    def test_a_private_pool_route_enters_and_leaves_the_hooks_pools(self):
        # enter_private_pool enters torch.cuda.use_mem_pool of the hook's
        # pool for each device (one MemPool per device, kept between
        # calls), close() leaves them; a route a graph left open (it
        # raised) is closed by the next enter; release_private_pools drops
        # the pools, and the next call makes new ones.
        events, capturing = [], [False]
        fake_torch = self._fake_pool_torch(events, capturing)
        hook.release_private_pools()
        with mock.patch.dict("sys.modules", {"torch": fake_torch}):
            route = hook.enter_private_pool((0, 1))
            route.close()
            route.close()  # idempotent
            self.assertEqual(events, [("enter", 1, 0), ("enter", 2, 1),
                                      ("exit", 2, 1), ("exit", 1, 0)])
            events.clear()
            hook.enter_private_pool((0,))  # left open
            hook.enter_private_pool((0,)).close()
            self.assertEqual(events, [("enter", 1, 0), ("exit", 1, 0),
                                      ("enter", 1, 0), ("exit", 1, 0)])
            events.clear()
            hook.release_private_pools()
            hook.enter_private_pool((0,)).close()
            self.assertEqual(events, [("enter", 3, 0), ("exit", 3, 0)])
            # While a CUDA graph is captured, its own pool holds the memory.
            events.clear()
            capturing[0] = True
            hook.enter_private_pool((0,)).close()
            self.assertEqual(events, [])
        hook.release_private_pools()

    def test_runtime_autotuning_allocates_outside_the_private_pool(self):
        # Inductor's CachingAutotuner.benchmark_all_configs runs at a
        # kernel's first launch, inside the graph's call: wrapped by the
        # hook, it leaves the calling thread's open route for its body (its
        # L2-flushing buffer and argument copies go to the default pool)
        # and enters the same pools again after; with no route open, or a
        # route closed inside it, it enters nothing.
        events = []
        fake_torch = self._fake_pool_torch(events, [False])
        hook.release_private_pools()

        def benchmark_all_configs(*args, **kwargs):
            events.append(("autotune", args, kwargs))
            return "timings"

        wrapped = hook._outside_private_pool(benchmark_all_configs)
        self.assertEqual(wrapped.__name__, "benchmark_all_configs")
        with mock.patch.dict("sys.modules", {"torch": fake_torch}):
            self.assertEqual(wrapped(1, a=2), "timings")
            self.assertEqual(events, [("autotune", (1,), {"a": 2})])
            events.clear()
            route = hook.enter_private_pool((0,))
            self.assertEqual(wrapped(), "timings")
            route.close()
            self.assertEqual(events, [("enter", 1, 0), ("exit", 1, 0),
                                      ("autotune", (), {}), ("enter", 1, 0),
                                      ("exit", 1, 0)])
            events.clear()
            route = hook.enter_private_pool((0,))
            with route.suspended():
                route.close()
            self.assertEqual(events, [("enter", 1, 0), ("exit", 1, 0)])
        hook.release_private_pools()

    def test_an_alignment_not_a_power_of_two_is_refused(self):
        for alignment in (3, -64, 1 << 31, 64.0):
            with self.assertRaisesRegex(ValueError, "alignment"):
                hook.install(self.server.target, alignment=alignment)

    def test_a_line_that_plans_nothing_keeps_the_events(self):
        # A NullLine inside the first run: the same groups, timesteps and
        # plan as without it, sent as events.
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "inductor", "combined", "events")
        mp.MemoryPlanner().plan(lines[:3] + [NullLine()] + lines[3:])
        record = hook.stats()["graphs"][0]
        self.assertEqual(record["source"], "service")
        self.assertEqual(record["input"], "events")
        self.assertEqual(record["pool_mode"], "combined")
        self.assertEqual(len(record["pools"]), 1)  # one pool per device
        as_buffers = self.client.plan(record["buffers_request"])
        self.assertEqual(
            [(a.pool, a.offset) for a in record["response"].assignments],
            [(a.pool, a.offset) for a in as_buffers.assignments])

    def test_unreachable_service_falls_back_to_inductor_with_a_warning(self):
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        down = MemplanClient(closed_target(), timeout=2.0, retries=1,
                             backoff=0.01)
        hook._install_on(mp, down, "auto", None, "events", owns_client=True)
        planner = mp.MemoryPlanner()
        with self.assertWarnsRegex(hook.MemplanFallbackWarning,
                                   "UNAVAILABLE.*Inductor plans"):
            planner.plan(lines)
        self.assertEqual(mp.MemoryPlanner.own_plans, 1)
        self.assertEqual(planner.pools.device_to_pools["cuda:0"][0].name,
                         "inductor0")
        stats = hook.stats()
        self.assertEqual((stats["service_plans"], stats["fallbacks"]), (0, 1))
        self.assertEqual(stats["graphs"][0]["total_pool_bytes"], 1152)

    def test_symbolic_sizes_take_the_services_expressions(self):
        lines, groups = example_graph()
        s0 = sympy.Symbol("s0", integer=True, positive=True)
        groups[3].symbolic_size = 4 * s0  # 512 bytes at the hint s0 = 128
        mp = fake_memory_planning(groups)
        hook._install_on(mp, self.client, "auto", None, "events")
        planner = mp.MemoryPlanner()
        # Inductor's own sympy functions need torch; sympy's stand in here.
        sympy_only = {"Max": sympy.Max, "Min": sympy.Min,
                      "FloorDiv": lambda a, b: sympy.floor(a / b),
                      "ceiling": sympy.ceiling, "floor": sympy.floor,
                      "Mod": sympy.Mod,
                      "align": lambda x: 64 * sympy.ceiling(x / 64)}
        with mock.patch.object(hook, "_sympy_functions", lambda: sympy_only):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no fallback warning
                planner.plan(lines)
        self.assertEqual(mp.MemoryPlanner.own_plans, 0)
        self.assertEqual(hook.stats()["service_plans"], 1)
        response = hook.stats()["graphs"][0]["response"]
        self.assertTrue(all(p.symbolic_size for p in response.pools))
        pools = planner.pools.device_to_pools["cuda:0"]
        sizes = [p.root.get_symbolic_size() for p in pools]
        self.assertTrue(any(s0 in size.free_symbols for size in sizes))
        # At the hint the expressions are the service's integer plan.
        self.assertEqual([int(size.subs(s0, 128)) for size in sizes],
                         [p.size_bytes for p in response.pools])
        self.assertEqual(
            [int(sympy.sympify(g.allocation.offset).subs(s0, 128))
             for g in groups],
            [a.offset for a in response.assignments])

    def test_uninstall_gives_inductor_its_planner_back(self):
        lines, groups = example_graph()
        mp = fake_memory_planning(groups)
        own_plan = mp.MemoryPlanner.plan
        own_allocate = mp.MemoryPlanner.allocate_groups
        hook._install_on(mp, self.client, "auto", None, "buffers")
        self.assertIsNot(mp.MemoryPlanner.allocate_groups, own_allocate)
        hook.uninstall()
        self.assertIs(mp.MemoryPlanner.plan, own_plan)
        self.assertIs(mp.MemoryPlanner.allocate_groups, own_allocate)


class SymbolicTest(unittest.TestCase):

    def test_expressions_over_known_names_parse(self):
        s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
        symbols = {"s0": s0, "s1": s1}
        functions = {"Max": sympy.Max, "ceiling": sympy.ceiling}
        expression = hook.parse_symbolic(
            "Max(64*s0, 128) + 64*ceiling(s1/64) + (s1 + 63)//64", symbols,
            functions)
        self.assertEqual(expression.subs({s0: 3, s1: 100}), 192 + 128 + 2)
        self.assertEqual(expression.free_symbols, {s0, s1})

    def test_anything_else_is_refused_before_sympy_sees_it(self):
        symbols = {"s0": sympy.Symbol("s0")}
        for text, message in (("__import__('os')", "unknown name"),
                              ("s0; s0", "position 2"),
                              ("s0.real", "position 2"),
                              ("s9 + 1", "unknown name 's9'"),
                              ("", "empty")):
            with self.assertRaisesRegex(hook.HookError, message, msg=text):
                hook.parse_symbolic(text, symbols, {})


@unittest.skipIf(torch is None, "needs torch")
class TorchTest(unittest.TestCase):
    """A real Inductor compile on CPU with the hook (where torch exists)."""

    def test_compiled_function_matches_eager_with_the_services_pools(self):
        with ServerProcess() as server:
            torch._inductor.config.memory_planning = True
            torch._inductor.config.force_disable_caches = True
            hook.install(server.target)
            try:
                def f(x):
                    a = torch.sin(x) @ x
                    b = torch.cos(a) @ a
                    return b.relu() @ x, a.sum()
                x = torch.randn(64, 64)
                with torch.no_grad():
                    expected = f(x)
                    actual = torch.compile(f)(x)
                torch.testing.assert_close(actual, expected)
                self.assertGreater(hook.stats()["service_plans"], 0)
                self.assertEqual(hook.stats()["fallbacks"], 0)
            finally:
                hook.uninstall()
                hook.reset_stats()


if __name__ == "__main__":
    unittest.main()
