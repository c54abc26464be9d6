"""The GPU suite's tables and records (tests/gpu/suite.py), without a GPU:
the --step-time rule for noise, its table's ratios and summary, how a
step-time worker's record is merged, the output check against eager, the
allocator's actions a graph call records, and that every script of
tests/gpu compiles (a GPU machine is the first to run most of them), and
tests/bench/saved_activation_groups.py's count of a forward's output
pools."""
import gzip
import json
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "gpu"))
import suite  # noqa: E402


GPU_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "gpu")


class GpuScriptsCompileTest(unittest.TestCase):
    def test_every_script_compiles(self):
        scripts = sorted(f for f in os.listdir(GPU_DIR) if f.endswith(".py"))
        self.assertIn("uninitialized_reads.py", scripts)
        self.assertIn("training_reservations.py", scripts)
        for script in scripts:
            with open(os.path.join(GPU_DIR, script)) as f:
                compile(f.read(), script, "exec")  # SyntaxError fails


class RunToolWorkersTest(unittest.TestCase):
    """The GPU tools' shared driver: one server, a worker per argument
    list with the server's address last, the server stopped after."""

    def test_runs_each_worker_with_the_target_then_stops_the_server(self):
        server = mock.Mock(target="127.0.0.1:5")
        with tempfile.TemporaryDirectory() as out, \
                mock.patch.object(suite, "Server", return_value=server), \
                mock.patch.object(suite.subprocess, "run") as run, \
                mock.patch.object(suite.subprocess, "Popen") as popen:
            suite.run_tool_workers("tool.py", "/carry", out,
                                   [["a", "x"], ["b", "y"]])
            self.assertEqual(
                [c.args[0][1:] for c in run.call_args_list],
                [["tool.py", "--worker", "a", "x", "127.0.0.1:5"],
                 ["tool.py", "--worker", "b", "y", "127.0.0.1:5"]])
            self.assertEqual(run.call_args.kwargs["env"]["CARRY"], "/carry")
            popen.assert_not_called()
            suite.run_tool_workers("tool.py", "/carry", out, [["c"]],
                                   parallel=True)
            self.assertEqual(popen.call_args.args[0][1:],
                             ["tool.py", "--worker", "c", "127.0.0.1:5"])
            popen.return_value.wait.assert_called_once()
        self.assertEqual(server.stop.call_count, 2)

    def test_stops_the_server_when_a_worker_fails_to_start(self):
        server = mock.Mock(target="t")
        with tempfile.TemporaryDirectory() as out, \
                mock.patch.object(suite, "Server", return_value=server), \
                mock.patch.object(suite.subprocess, "run",
                                  side_effect=OSError("no python")):
            with self.assertRaises(OSError):
                suite.run_tool_workers("tool.py", "/carry", out, [["a"]])
        server.stop.assert_called_once()


def row(model, default, control, partition, problems=()):
    configs = {"default": {"step_ms": default},
               suite.CONTROL: {"step_ms": control},
               "memplan_partition": {"step_ms": partition}
               if partition is not None else {"error": "timing: boom"}}
    return {"model": model, "mode": "inference", "device": "GPU X",
            "torch": "2.11", "configs": configs, "problems": list(problems)}


class WithinNoiseTest(unittest.TestCase):
    def test_two_percent_is_the_floor(self):
        self.assertTrue(suite.within_noise(1.02, 1.0))
        self.assertFalse(suite.within_noise(1.021, 1.0))
        self.assertTrue(suite.within_noise(0.5, 1.0))

    def test_a_noisy_control_widens_the_band_either_way(self):
        self.assertTrue(suite.within_noise(1.06, 0.97))
        self.assertTrue(suite.within_noise(1.06, 1.03))
        self.assertFalse(suite.within_noise(1.07, 1.03))


class StepTimeTableTest(unittest.TestCase):
    def test_ratios_summary_and_errors(self):
        results = [row("resnet18", 10.0, 10.1, 10.5),
                   row("gpt2", 5.0, 4.9, 5.05),
                   row("bert", 8.0, 8.0, None, ["memplan_partition: boom"])]
        table = suite.step_time_markdown(
            results, ["default", "memplan_partition"])
        self.assertIn("GPU: GPU X; torch 2.11", table)
        self.assertIn("| resnet18 | inference | 10.00 (1.000) | "
                      "10.10 (1.010) | 10.50 (1.050) |", table)
        self.assertIn("| gpt2 | inference | 5.00 (1.000) | 4.90 (0.980) | "
                      "5.05 (1.010) |", table)
        self.assertIn("| bert | inference | 8.00 (1.000) | 8.00 (1.000) | "
                      "error |", table)
        # Geometric mean of 1.05 and 1.01; resnet18 is outside its band
        # (its control is 1% off: 2%), gpt2 inside; bert not counted.
        self.assertIn("| memplan_partition | 1.030 / 1.050, 1 of 2 |", table)
        self.assertIn("- bert inference: memplan_partition: boom", table)
        self.assertIn("- gpt2 inference: ok", table)


class MemoryTableTest(unittest.TestCase):
    def test_reserved_above_the_live_start_beside_above_the_start(self):
        # A training step whose start caches the previous step's gradient
        # segments: memplan's start holds 40 MiB fewer of them, so above
        # the start it reserves more and above the bytes in use less.
        mib = 2**20

        def config(reserved, over_live):
            return {"peak_allocated": 100 * mib, "peak_reserved": reserved,
                    "peak_reserved_over_live": over_live,
                    "allocator_calls": 10}
        results = [{"model": "vit_b_16", "mode": "training",
                    "device": "GPU X", "torch": "2.11", "problems": [],
                    "configs": {
                        "default": config(200 * mib, 300 * mib),
                        "memplan_partition_grads": config(220 * mib,
                                                          290 * mib)}}]
        table = suite.markdown(results,
                               ["default", "memplan_partition_grads"])
        self.assertIn("| vit_b_16 | training | 100.0 / 200.0 (300.0), 10, "
                      "0.00 | 100.0 / 220.0 (290.0), 10, 0.00 |", table)
        self.assertIn("| peak reserved above the bytes in use at the start "
                      "|", table)
        self.assertIn("| memplan_partition_grads | 1.000 / 1.000, 1 of 1 | "
                      "1.100 / 1.100, 0 of 1 | 0.967 / 0.967, 1 of 1 |",
                      table)


class ProfileTableTest(unittest.TestCase):
    def test_no_profiles_no_lines(self):
        self.assertEqual(suite.profile_markdown(
            [row("gpt2", 5.0, 5.0, 5.1)], ["default", "memplan_partition"]),
            [])

    def test_times_and_the_kernels_that_changed_most(self):
        r = row("densenet121", 50.0, 50.0, 60.0)
        r["configs"]["default"]["profile"] = {
            "cpu_ms": 20.0, "gpu_ms": 50.0, "kernel_busy_ms": 48.0,
            "kernel_launches": 900,
            "kernels_us_launches": {"conv": [30000.0, 100], "add": [500.0,
                                                                    10]}}
        r["configs"]["memplan_partition"]["profile"] = {
            "cpu_ms": 21.0, "gpu_ms": 60.0, "kernel_busy_ms": 58.0,
            "kernel_launches": 910,
            "kernels_us_launches": {"conv": [39000.0, 100], "add": [500.0,
                                                                    10],
                                    "copy": [1000.0, 10]}}
        table = "\n".join(suite.profile_markdown(
            [r], ["default", "memplan_partition"]))
        self.assertIn("| densenet121 | inference | memplan_partition | "
                      "21.00 | 60.00 | 58.00 | 910 |", table)
        self.assertIn("- densenet121 inference memplan_partition: conv "
                      "30000 -> 39000 us (100 -> 100); copy 0 -> 1000 us "
                      "(0 -> 10); add 500 -> 500 us (10 -> 10)", table)

    def test_python_functions_per_step_most_own_time_first(self):
        stats = {("/x/a.py", 3, "call"): (5, 5, 0.002, 0.03, {}),
                 ("~", 0, "<built-in method torch.mm>"): (650, 650, 0.0065,
                                                          0.0065, {}),
                 ("/x/b.py", 9, "run"): (1900, 1900, 0.0019, 0.01, {})}
        self.assertEqual(suite.python_functions(stats, 5), {
            "<built-in method torch.mm> (~:0)": [1300.0, 130.0],
            "call (a.py:3)": [400.0, 1.0],
            "run (b.py:9)": [380.0, 380.0]})
        default = row("t5", 5.0, 5.0, 5.2)
        for config, mm in (("default", 1200.0), ("memplan_partition",
                                                 1300.0)):
            default["configs"][config]["profile"] = {
                "cpu_ms": 5.0, "gpu_ms": 5.0, "kernel_busy_ms": 4.0,
                "kernel_launches": 100, "kernels_us_launches": {},
                "python_us_calls": {"torch.mm": [mm, 130.0]}}
        table = "\n".join(suite.profile_markdown(
            [default], ["default", "memplan_partition"]))
        self.assertIn("Python functions whose own time per step differs",
                      table)
        self.assertIn("- t5 inference memplan_partition: torch.mm 1200 -> "
                      "1300 us (130 -> 130)", table)


class TimingOrderTest(unittest.TestCase):
    def test_defaults_code_never_follows_itself(self):
        control = suite.CONTROL
        self.assertEqual(suite.timing_order(
            ["default", "memplan_partition", control]), [
            ("default", True), ("memplan_partition", True), (control, True),
            ("memplan_partition", False)])
        self.assertEqual(suite.timing_order(
            ["default", "a", "b", "c", control]), [
            ("default", True), ("a", True), ("b", True), (control, True),
            ("c", True)])
        for slots in (["default", "a", "b", control], ["default", "a",
                                                        control]):
            cycle = [slot for slot, _ in suite.timing_order(slots)]
            for i, slot in enumerate(cycle):  # cyclically
                self.assertNotEqual({slot, cycle[i - 1]},
                                    {"default", control}, cycle)
            timed = [slot for slot, t in suite.timing_order(slots) if t]
            self.assertEqual(sorted(timed), sorted(slots))

    def test_without_a_pair_the_slots_as_given(self):
        self.assertEqual(suite.timing_order(["default", "a"]),
                         [("default", True), ("a", True)])
        self.assertEqual(suite.timing_order(["default", suite.CONTROL]),
                         [("default", True), (suite.CONTROL, True)])
        self.assertEqual(suite.timing_order([""]), [("", True)])


class WrapperLineCostsTest(unittest.TestCase):
    def test_each_line_by_kind(self):
        for text, kind in (
                ("    pool0 = empty_strided_cuda((5, ), (1, ), torch.float32)",
                 "allocation"),
                ("memplan_segment0 = torch.empty((64,), dtype=torch.uint8, "
                 "device='cuda:0'); del memplan_segment0", "allocation"),
                ("buf7 = reinterpret_tensor(pool0.view(torch.int64), (8, ), "
                 "(1, ), 0)", "pool view"),
                ("pool0_int64 = alloc_from_pool(pool0, 0, torch.int64, (0, ),"
                 " (1, ))", "pool view"),
                ("buf2 = reinterpret_tensor(pool0, (4, ), (1, ), 16)", "view"),
                ("buf8 = buf5; del buf5  # reuse", "rename"),
                ("buf3 = buf1  # reuse", "rename"),
                ("del pool0, buf3", "del"),
                ("triton_poi_fused_0.run(buf1, 256, stream=stream0)",
                 "triton"),
                ("extern_kernels.mm(buf1, arg4_1, out=buf2)", "extern"),
                ("assert_size_stride(arg0_1, (8, ), (1, ))", "assert"),
                ("with torch.cuda._DeviceGuard(0):", "other")):
            self.assertEqual(suite.line_kind_of(text), kind, text)

    def test_the_wrapper_calls_lines_only_summed_per_kind(self):
        # A module as Inductor writes one (reinterpret_tensor and
        # assert_size_stride among its globals):
        # its call()'s lines are counted; the step's own lines, and a
        # function the wrapper calls, are not.
        source = ("async_compile = None\n"
                  "def helper():\n"
                  "    x = 1\n"
                  "    return x\n"
                  "def call(args):\n"
                  "    buf0 = empty_strided_cuda(args)\n"
                  "    helper()\n"
                  "    del buf0\n"
                  "    return ()\n")
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "cwrapper.py")
            with open(path, "w") as f:
                f.write(source)
            module = {"empty_strided_cuda": lambda args: list(args),
                      "reinterpret_tensor": None, "assert_size_stride": None}
            exec(compile(source, path, "exec"), module)
            # The same call without Inductor's names: not a wrapper's.
            other = dict(module, reinterpret_tensor=0)
            del other["reinterpret_tensor"]
            exec(compile(source, path, "exec"), other)
            torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
                synchronize=lambda: None))
            costs = suite.line_costs(torch, lambda fn: fn([1]), {
                "default": module["call"], "other": other["call"]}, 4)
        self.assertEqual({kind: count for kind, (_, count) in
                          costs["default"].items()},
                         {"allocation": 1, "other": 2, "del": 1})
        self.assertTrue(all(us >= 0 for us, _ in costs["default"].values()))
        self.assertEqual(costs["other"], {})


class LineTracePeakTest(unittest.TestCase):

    def test_the_peak_is_where_a_statement_allocates_the_most(self):
        rows = [["buf7 = empty_strided_cuda((16, 512, 7, 7))", 100, 100],
                ["triton_red_fused_2.run(buf7)", 100, 6100],
                ["buf8 = torch.ops.aten.convolution_backward.default(buf7)",
                 1000, 1300],
                ["del primals_116", 100, 1000]]
        # The Triton launch's own peak is not the graph's; the convolution
        # holds 300 bytes above its output inside the call (a workspace).
        self.assertEqual(suite.line_trace_peak(rows), (
            1300, "buf8 = torch.ops.aten.convolution_backward.default(buf7)",
            300))

    def test_a_free_is_not_a_workspace(self):
        self.assertEqual(suite.line_trace_peak(
            [["buf0 = empty_strided_cuda((4,))", 64, 64],
             ["del arg0_1", -100, 64]]),
            (64, "buf0 = empty_strided_cuda((4,))", 0))


class AllocatorTraceTest(unittest.TestCase):

    @staticmethod
    def entry(action, size, addr, frames=()):
        return {"action": action, "size": size, "addr": addr,
                "frames": [{"filename": f"/x/{name}.py", "line": line,
                            "name": name} for name, line in frames]}

    def test_the_graphs_actions_with_their_python_sites(self):
        old = [self.entry("alloc", 512, 4096)]
        during = [self.entry("free_requested", 512, 4096),
                  self.entry("free_completed", 512, 4096),
                  self.entry("segment_alloc", 20 << 20, 1 << 30),
                  self.entry("alloc", 3 << 20, 1 << 30,
                             [("wrapper", 12), ("call", 3)]),
                  self.entry("snapshot", 0, 0)]
        before = {"device_traces": [old]}
        after = {"device_traces": [old + during]}
        self.assertEqual(suite.allocator_trace(before, after, 0), [
            ["free_completed", 512, 4096],
            ["segment_alloc", 20 << 20, 1 << 30],
            ["alloc", 3 << 20, 1 << 30, ["wrapper.py:12 wrapper",
                                         "call.py:3 call"]]])

    def test_none_where_the_history_may_have_dropped_actions(self):
        full = [self.entry("alloc", 512, 0)] * suite.HISTORY_ENTRIES
        self.assertIsNone(suite.allocator_trace(
            {"device_traces": [full[1:]]}, {"device_traces": [full]}, 0))
        # No trace for the device: none recorded.
        self.assertIsNone(suite.allocator_trace(
            {"device_traces": [[]]}, {"device_traces": [[]]}, 1))


class FirstSegmentsTest(unittest.TestCase):

    def test_each_segment_with_its_step_pool_and_site(self):
        entry = AllocatorTraceTest.entry
        trace = [entry("segment_alloc", 40 << 20, 1 << 30, [("call", 7)]),
                 entry("alloc", 512, 1 << 30),
                 entry("segment_alloc", 50 << 20, 2 << 30,
                       [("benchmarking", 383)]),
                 entry("segment_alloc", 20 << 20, 3 << 30),
                 entry("segment_alloc", 2 << 20, 4 << 30)]
        snapshot = {"device_traces": [trace],
                    "segments": [
                        {"address": 1 << 30, "segment_pool_id": (0, 1)},
                        {"address": 2 << 30, "segment_pool_id": (0, 1)},
                        {"address": 4 << 30}]}
        fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
            current_device=lambda: 0,
            memory=types.SimpleNamespace(_snapshot=lambda: snapshot)))
        self.assertEqual(suite.first_segments(fake_torch, [2, 4]), [
            [1, 40 << 20, [0, 1], ["call.py:7 call"]],
            [2, 50 << 20, [0, 1], ["benchmarking.py:383 benchmarking"]],
            [2, 20 << 20, []],  # released since: no pool
            [0, 2 << 20, [0, 0]]])  # after the steps, the default pool


class MergeStepTimesTest(unittest.TestCase):
    def test_the_workers_metrics_become_the_record(self):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "w.json")
            worker = row("gpt2", 5.0, 5.0, 5.1, ["x: y"])
            worker["metrics"] = worker.pop("configs")
            worker["kernels_against_default"] = {"memplan_partition": {}}
            with open(out, "w") as f:
                json.dump(worker, f)
            record = suite.merge_step_times("gpt2", "inference",
                                            {"a,b": (0, out, 12.5)})
        self.assertEqual(record["configs"]["memplan_partition"],
                         {"step_ms": 5.1})
        self.assertEqual(record["device"], "GPU X")
        self.assertEqual(record["problems"], ["x: y"])
        self.assertEqual(record["worker_seconds"], 12.5)
        self.assertEqual(record["kernels_against_default"],
                         {"memplan_partition": {}})

    def test_a_worker_that_wrote_nothing_is_a_problem(self):
        record = suite.merge_step_times(
            "gpt2", "training", {"a,b": ("timeout", "/nonexistent.json", 9)})
        self.assertEqual(record["configs"], {})
        self.assertEqual(record["problems"],
                         ["step-time worker exit timeout"])


class CachingAutotuner:
    """Stands for Triton's CachingAutotuner (kernel_configs knows it by its
    class name): `chosen` launched, `left` configurations still held."""

    def __init__(self, chosen, left=0):
        self.launchers = [types.SimpleNamespace(config=chosen)]
        self.configs = [None] * left


def graph_with(**kernels):
    """A CompiledFxGraph stand-in whose call's module globals hold
    `kernels` (and a name that is no kernel)."""
    namespace = dict(kernels, buf0=3)
    exec("def call(args):\n    return args\n", namespace)
    return types.SimpleNamespace(current_callable=namespace["call"])


class KernelConfigsTest(unittest.TestCase):
    def test_each_graphs_kernels_by_index_and_name(self):
        shared = CachingAutotuner("XBLOCK: 2, R0_BLOCK: 256")
        first = graph_with(triton_red_fused_0=shared)
        second = graph_with(triton_poi_fused_0=CachingAutotuner("XBLOCK: 8",
                                                                left=2))
        # Inductor's alignment wrapper: the module's call in a closure.
        call = second.current_callable

        def run(args):
            return call(args)
        second = types.SimpleNamespace(current_callable=run,
                                       inner=call)
        kernels = suite.kernel_configs({1: first, 2: second})
        self.assertEqual(kernels, {
            "0.triton_red_fused_0": ["XBLOCK: 2, R0_BLOCK: 256 of 0",
                                     id(shared)],
            "1.triton_poi_fused_0": ["XBLOCK: 8 of 2",
                                     id(second.inner.__globals__[
                                         "triton_poi_fused_0"])]})

    def test_configurations_against_defaults_kernels(self):
        configs = {
            "default": {"triton_configs": {"0.a": ["R0_BLOCK: 256 of 0", 1],
                                           "0.b": ["XBLOCK: 8 of 0", 2]}},
            "memplan_partition": {"triton_configs": {
                "0.a": ["R0_BLOCK: 128 of 0", 3],
                "0.b": ["XBLOCK: 8 of 0", 2],
                "0.c": ["XBLOCK: 4 of 0", 4]}},
            suite.CONTROL: {}}
        self.assertEqual(suite.kernels_against_default(configs), {
            "memplan_partition": {"kernels": 3, "same_object": 1,
                                  "other_config": ["0.a"]}})
        self.assertEqual(suite.kernels_against_default({"x": {}}), {})

    def test_the_table_shows_cpu_times_and_kernels(self):
        results = [row("t5", 5.0, 5.1, 5.2)]
        m = results[0]["configs"]
        m["default"]["step_cpu_ms"] = 4.0
        m[suite.CONTROL]["step_cpu_ms"] = 4.1
        m["memplan_partition"]["step_cpu_ms"] = 4.2
        results[0]["kernels_against_default"] = {"memplan_partition": {
            "kernels": 30, "same_object": 29, "other_config": ["2.k"]}}
        table = suite.step_time_markdown(
            results, ["default", "memplan_partition"])
        self.assertIn("| t5 | inference | 4.00 (1.000) | 4.10 (1.025) | "
                      "4.20 (1.050); 1 of 30 kernels otherwise (29 shared) |",
                      table)
        self.assertNotIn("CPU time of the call", suite.step_time_markdown(
            [row("t5", 5.0, 5.1, 5.2)], ["default", "memplan_partition"]))


class CheckResultsTest(unittest.TestCase):
    """The check against eager: its bound is twice default's own error, and
    a run without default says it had no control."""

    def check(self, errors):
        record = {"configs": {config: {"error_vs_eager": error}
                              for config, error in errors.items()},
                  "problems": []}
        outcomes = {config: (0, "/nonexistent/%s.json" % config, 1)
                    for config in errors}
        # No worker saved results (.pt): torch is imported but not used.
        with mock.patch.dict(sys.modules,
                             {"torch": types.ModuleType("torch")}):
            suite.check_results(record, list(errors), outcomes)
        return record["problems"]

    def test_without_default_there_is_no_control(self):
        problems = self.check({"memplan_partition": 0.41})
        self.assertEqual(len(problems), 1)
        self.assertIn("differ from eager by 0.41", problems[0])
        self.assertIn("default did not run", problems[0])

    def test_default_as_far_from_eager_widens_the_bound(self):
        self.assertEqual(
            self.check({"default": 0.41, "memplan_partition": 0.41}), [])
        problems = self.check({"default": 0.001, "memplan_partition": 0.41})
        self.assertEqual(len(problems), 1)
        self.assertNotIn("default did not run", problems[0])


class EagerProblemsTest(unittest.TestCase):
    """--step-time's workers check against eager as the memory runs do
    (eager_problems, shared with check_results)."""

    def test_names_each_configuration_past_the_bound(self):
        metrics = {"default": {"error_vs_eager": 5.8e-7},
                   "memplan_partition": {"error_vs_eager": 0.893},
                   "memplan_combined": {"error_vs_eager": 1e-6},
                   "default_again": {}}
        problems = suite.eager_problems(metrics, list(metrics))
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("memplan_partition: "))
        self.assertIn("0.893", problems[0])
        self.assertIn("bound 0.01", problems[0])

    def test_a_non_finite_error_is_a_problem_everywhere(self):
        metrics = {"default": {"error_vs_eager": float("inf")},
                   "memplan_partition": {"error_vs_eager": 0.5},
                   "memplan_combined": {"error_vs_eager": 1e-6}}
        problems = suite.eager_problems(metrics, list(metrics))
        self.assertEqual([p.split(":")[0] for p in problems],
                         ["default", "memplan_partition"])
        self.assertIn("bound 0.01", problems[1])


class RelativeErrorTest(unittest.TestCase):
    """A NaN in a step's results is never within a bound (t5's compiled
    step returned NaNs where its memory held them)."""

    class Tensor:
        """Just what relative_error uses of a tensor."""

        def __init__(self, values):
            self.values = list(values)
            self.shape = (len(self.values),)

        def __sub__(self, other):
            return type(self)(a - b for a, b in zip(self.values, other.values))

        def double(self):
            return self

        def norm(self):
            return sum(v * v for v in self.values) ** 0.5

    def results(self, *values):
        return {"outputs": [self.Tensor(values)], "gradients": []}

    def test_close_results_give_their_relative_error(self):
        error = suite.relative_error(None, self.results(3.0, 4.0),
                                     self.results(3.0, 4.5))
        self.assertAlmostEqual(error, 0.5 / (3.0 ** 2 + 4.5 ** 2) ** 0.5)

    def test_a_nan_gives_inf(self):
        nan = float("nan")
        self.assertEqual(suite.relative_error(
            None, self.results(nan, 4.0), self.results(3.0, 4.0)),
            float("inf"))
        self.assertEqual(suite.relative_error(
            None, self.results(3.0, 4.0), self.results(3.0, nan)),
            float("inf"))

    def test_other_shapes_give_inf(self):
        self.assertEqual(suite.relative_error(
            None, self.results(1.0), self.results(1.0, 2.0)), float("inf"))


class CapturedRequestsTest(unittest.TestCase):
    """Each configuration's own request is captured where it differs."""

    def worker(self, frees, options, blocks=()):
        request = {"events": [{"kind": "EVENT_KIND_FREE_INPUT",
                               "size_bytes": str(frees)}],
                   "options": options, "cached_blocks": list(blocks)}
        return {"graph_calls": [{"peak": 100 + frees, "phase": "backward",
                                 "graph_id": 3}],
                "hook_graphs": [{"source": "service", "graph_id": 3,
                                 "phase": "backward", "planner": "x",
                                 "predicted_peak_bytes": 1,
                                 "baseline_peak_bytes": 2,
                                 "total_pool_bytes": 3, "pools": 1,
                                 "request": request}]}

    def test_a_backward_request_per_pool_mode(self):
        workers = {"default": {"graph_calls": [{"peak": 90,
                                                "phase": "backward"}]},
                   "memplan_partition": self.worker(64, {"strategy": "A"}),
                   # The same request but for options and cached blocks.
                   "memplan_partition_cold": self.worker(
                       64, {"strategy": "B"}, [{"size_bytes": "512"}]),
                   # Other frees: its own.
                   "memplan_combined": self.worker(0, {"strategy": "C"})}
        record = {"model": "m", "mode": "training"}
        suite.per_graph_peaks(record, list(workers), workers)
        [captured] = record["captured"]
        self.assertEqual(captured["request"]["options"], {"strategy": "A"})
        self.assertEqual(list(captured["memplan_requests"]), ["combined"])
        # The graph's baseline is the captured (first) request's.
        workers["memplan_combined"]["hook_graphs"][0][
            "baseline_peak_bytes"] = 7
        suite.per_graph_peaks(record, list(workers), workers)
        self.assertEqual(record["graphs"][0]["baseline"], 2)
        self.assertEqual(record["graphs"][0]["memplan_combined"]["baseline"],
                         7)
        self.assertEqual(
            captured["memplan_requests"]["combined"]["events"][0]
            ["size_bytes"], "0")
        self.assertEqual(captured["memplan_measured"],
                         {"partition": 164, "partition_cold": 164,
                          "combined": 100})
        self.assertTrue(suite.same_request(
            {"events": [], "options": {"a": 1}},
            {"events": [], "cached_blocks": [1]}))
        self.assertFalse(suite.same_request({"events": [1]},
                                            {"events": [2]}))

    def test_defaults_own_request_gives_its_baseline(self):
        # --default-shadow: default's hook answered for the graph it
        # compiled; its baseline is the graph's, and its request is
        # captured where it differs from the memplan process's.
        workers = {"default": self.worker(32, {"strategy": "D"}),
                   "memplan_partition": self.worker(64, {"strategy": "A"})}
        workers["default"]["hook_graphs"][0]["baseline_peak_bytes"] = 5
        record = {"model": "m", "mode": "training"}
        suite.per_graph_peaks(record, list(workers), workers)
        [graph] = record["graphs"]
        self.assertEqual(graph["baseline"], 5)
        self.assertEqual(graph["memplan_partition"]["baseline"], 2)
        [captured] = record["captured"]
        self.assertEqual(captured["default_measured"], 132)
        self.assertEqual(
            captured["default_request"]["events"][0]["size_bytes"], "32")
        # The same request (but for options): none kept.
        workers["default"] = self.worker(64, {"strategy": "D"})
        suite.per_graph_peaks(record, list(workers), workers)
        self.assertIsNone(record["captured"][0]["default_request"])
        # Its cached blocks differ: kept, with them.
        workers["default"] = self.worker(64, {"strategy": "D"},
                                         [{"size_bytes": "512"}])
        suite.per_graph_peaks(record, list(workers), workers)
        self.assertEqual(
            record["captured"][0]["default_request"]["cached_blocks"],
            [{"size_bytes": "512"}])


class GradientMemoryTest(unittest.TestCase):
    def test_a_pool_of_gradients_is_one_storage_of_their_bytes(self):
        # Two gradients in one 96-byte storage (a pool), one of its own:
        # 2 storages; a pool slot no gradient uses shows as storage bytes
        # above the gradients'.
        def grad(ptr, nbytes, numel):
            storage = types.SimpleNamespace(data_ptr=lambda: ptr,
                                            nbytes=lambda: nbytes)
            return types.SimpleNamespace(
                untyped_storage=lambda: storage, numel=lambda: numel,
                element_size=lambda: 4)
        params = [types.SimpleNamespace(grad=grad(1000, 96, 8)),
                  types.SimpleNamespace(grad=grad(1000, 96, 16)),
                  types.SimpleNamespace(grad=grad(5000, 64, 16)),
                  types.SimpleNamespace(grad=None)]
        torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
            memory_allocated=lambda: 1160))
        self.assertEqual(suite.gradient_memory(torch, params, 1000), {
            "gradient_bytes": 160, "gradient_storage_bytes": 160,
            "gradient_storages": 2, "end_allocated": 160})
        params[1].grad = None  # its slot stays in the pool's storage
        self.assertEqual(
            suite.gradient_memory(torch, params, 1000)["gradient_bytes"], 96)
        self.assertEqual(suite.gradient_memory(
            torch, params, 1000)["gradient_storage_bytes"], 160)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "bench"))
import saved_activation_groups  # noqa: E402


class SavedActivationGroupsTest(unittest.TestCase):
    """tests/bench/saved_activation_groups.py: a forward's output pools
    grouped by the backward's free clusters."""

    def test_outputs_freed_with_nothing_allocated_between_share(self):
        def allocate(name):
            return {"kind": "EVENT_KIND_ALLOCATE", "name": name}

        def free(name):
            return {"kind": "EVENT_KIND_FREE_INPUT", "name": name}
        # Forward: buf0..buf4 outputs, each in a pool of its own, buf4
        # Inductor's reuse of buf3's storage (so in buf3's pool); buf5 an
        # intermediate in a pool of its own.
        forward = {
            "events": [allocate("buf0"), allocate("buf1"), allocate("buf2"),
                       allocate("buf3"),
                       {"kind": "EVENT_KIND_REUSE", "name": "buf3",
                        "reused_as": "buf4"},
                       allocate("buf5")],
            "output_names": ["buf0", "buf1", "buf2", "buf4", "buf6"]}
        plan = {"assignments": [
            {"allocation_event": str(i), "pool": f"pool{i}"}
            for i in (0, 1, 2, 3, 5)]}
        sources = [{"input": f"in{i}", "forward_output": f"buf{i}"}
                   for i in (0, 1, 2, 4)]
        # Backward: in0 and in1 freed together (one cluster), then an
        # allocation, then in2 (a cluster of its own); in4 never freed.
        backward = {"events": [free("in0"), {"kind": "EVENT_KIND_OTHER"},
                               free("in1"), allocate("buf9"), free("in2")],
                    "forward": {"request": forward, "plan": plan,
                                "input_sources": sources}}
        # 5 pools, 4 holding an output (pool5 an intermediate's; buf6 no
        # planned buffer); pools 0 and 1 share: 3.
        self.assertEqual(saved_activation_groups.output_pools(backward),
                         (5, 4, 3))
        backward["events"].insert(1, allocate("buf8"))  # splits in0, in1
        self.assertEqual(saved_activation_groups.output_pools(backward),
                         (5, 4, 4))

    def test_a_capture_never_gains_pools(self):
        capture = os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "server",
            "testdata", "whole_graph", "captured_h100_shipped.jsonl.gz")
        backwards = 0
        with gzip.open(capture, "rt") as lines:
            for line in lines:
                graph = json.loads(line)
                if graph["phase"] != "backward":
                    continue
                backwards += 1
                pools, outputs, grouped = \
                    saved_activation_groups.output_pools(graph["request"])
                self.assertLessEqual(outputs, pools, graph["model"])
                self.assertLessEqual(grouped, outputs, graph["model"])
                self.assertGreater(grouped, 0, graph["model"])
        self.assertGreaterEqual(backwards, 12)


if __name__ == "__main__":
    unittest.main()
