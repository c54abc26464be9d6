"""The GPU model suite: what memplan does to torch.compile's memory.

    python3 tests/gpu/suite.py --server BIN [--server-libs DIR] --out DIR \\
        [--models resnet18,gpt2,...] [--modes inference,training] \\
        [--configs default,inductor_pools,...] [--gpus N] [--parallel N] \\
        [--step-time [--profile]]

(From a folder that client/python/examples/stage_device.sh made, on a
machine with a GPU, torch, torchvision, transformers and grpcio:
`bash CARRY/gpu/run_suite.sh --out DIR ...`.) One driver process starts
memplan-server and runs one worker process per (model, mode,
configuration), so that each configuration has the caching allocator to
itself (its peak reserved is its own) and dynamo never serves one
configuration's graphs to another. The configurations:

  default          torch.compile as shipped: Inductor's reuse pass
  inductor_pools   torch._inductor.config.memory_planning with Inductor's
                   own pools (intermediates); for training, with Inductor's
                   training-graph switch forced on
  memplan_<mode>   memory planning through memplan.inductor (training=True:
                   forward and backward graphs planned by the service), pool
                   mode <mode> (intermediates, combined, none), strategy
                   optimal: the pools of least bytes
  memplan_partition  the same with strategy auto, which partitions the
                   pools against the whole graph's peak, each of a training
                   backward's gradients in a pool of its own
                   (install(..., pool_gradients=False))
  memplan_partition_none  strategy auto in pool mode none: partitioned
                   pools that never grow past their first buffer
  memplan_partition_cold  memplan_partition without the caching
                   allocator's blocks at compile time (install(...,
                   entry_cache=False)): the service's model starts from an
                   empty cache
  memplan_partition_a512  memplan_partition with every pool offset a
                   multiple of 512 bytes (install(..., alignment=512)), as
                   the caching allocator aligns default's buffers
  memplan_partition_grads  memplan_partition with a training backward's
                   gradients in shared pools (install(...,
                   pool_gradients=True), the hook's default: outputs
                   released together) and the hook's default private pool
                   (install(..., private_pool="auto"): the training graphs
                   whose caller's outputs are small); memplan as the hook
                   ships
  memplan_partition_unreserved  memplan_partition without segment
                   reservations (install(..., reserve_segments=False)):
                   as the hook shipped before codegen version 11
  memplan_partition_private  memplan_partition_grads with every training
                   graph in the hook's private pool and a training
                   forward's reservation there (install(...,
                   private_pool=True))

Workers run in waves per GPU: a wave is every configuration of
max(1, parallel // configurations) (model, mode) pairs, started together
(compiling is CPU work; --parallel defaults to the CPU cores per GPU).
Memory statistics are per process, so the workers of a wave measure memory
side by side; step time is measured alone on the GPU: a worker holds a
shared lock on its GPU's lock file from its start until its memory
measurements are done, and an exclusive one around each timed step, so a
wave times its steps once every worker of it has compiled and measured, one
step at a time, the configurations interleaved.

With --step-time the suite measures step time only, one worker per
(model, mode) compiling every configuration in its one process (a
process's CPU speed moved step times by up to 1.5x from process to
process, whatever the code: docs/gpu.md, "Step time"): each configuration
with a torch.compile backend of its own, so that dynamo never runs one
configuration's code for another; then, alone on the GPU, rounds in which
every configuration and a control (default's code again, in a slot of its
own: what the same code measures from slot to slot) runs a warm-up step,
then the timed steps one step of each slot after another, the order
rotated each round. It writes
results.json and table.md (step times against default's, rows within
noise) and checks, in that one process, every configuration's outputs
and gradients against eager's and memplan's against Inductor's own
pools'. With --profile it then profiles each
configuration alone on the GPU (its kernels' GPU time and launches, the
CPU and GPU time of its steps, the Python functions of most own time:
step_profile) and keeps every compiled graph's wrapper code beside the
worker's record.

Each worker measures, for one compiled step (training: forward +
loss.backward(), gradients set to None before) after compiling and
torch.cuda.empty_cache(): peak allocated and peak reserved above the step's
start (and the reserved peak above the bytes in use at the start, which
counts the segments the previous step's gradients left cached), allocator
calls (memory_stats' allocation.all.allocated), step time
(CUDA events, median of 20 steps), compile time (the first step, under the
wave's CPU load), and, per compiled graph (CompiledFxGraph.__call__ wrapped:
peak statistics reset at entry, read at return), the peak allocated above
the graph's entry beside the service's predicted_peak_bytes and
baseline_peak_bytes for that graph. The driver checks that each memplan
configuration's outputs and gradients equal Inductor's own pools' (bitwise
where Inductor's own are bitwise from run to run) and that every
configuration is within tolerance of eager.

The driver writes DIR/results.json (every (model, mode)'s record),
DIR/table.md (the tables) and DIR/captured.jsonl.gz (per graph planned by
the service: the request the hook sent, each configuration's own where it
differed, and the peaks the GPU measured: the test data of
tests/server/whole_graph_gpu_test.cc); the workers' logs and
records stay in DIR/workers/.
"""

import argparse
import fcntl
import gzip
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
import time

VISION = ("resnet18", "resnet50", "densenet121", "mobilenet_v3_large",
          "efficientnet_b0", "convnext_tiny", "vit_b_16", "swin_t")
TRANSFORMERS = ("gpt2", "bert", "llama", "t5")
# Models with dynamic shapes: the model and the dimension marked dynamic.
DYNAMIC = ("bert_dynamic",)
MODELS = VISION + TRANSFORMERS + DYNAMIC
# Configuration -> (memplan strategy, Inductor pool mode); "default" and
# "inductor_pools" are torch.compile's own. The memplan_<mode>
# configurations are the pools that minimize pool bytes (strategy optimal:
# best fit, then the exact search); memplan_partition is strategy auto,
# which partitions the pools of a whole graph (issue 21). Every memplan
# configuration sends the caching allocator's blocks at compile time
# (install's entry_cache) but the ones named here.
COLD = ("memplan_partition_cold",)
# Configurations whose training backward graphs pool gradients together
# (install's pool_gradients=True, its default); every other memplan
# configuration passes False.
GRADIENTS_POOLED = ("memplan_partition_grads", "memplan_partition_private",
                    "memplan_partition_groups")
# Configurations whose training forwards name the saved activations their
# backward frees together (install's group_saved_activations=True, opt-in:
# PlanMemoryRequest.release_groups); every other memplan configuration
# leaves each saved activation a pool of its own.
SAVED_GROUPED = ("memplan_partition_groups",)
# Configurations whose inference graphs go without segment reservations
# (install's reserve_segments=False); every other memplan configuration
# has them (its default).
UNRESERVED = ("memplan_partition_unreserved",)
# install's private_pool per configuration: memplan_partition_private runs
# every training graph in the hook's private pool (True), memplan as the
# hook ships those it picks ("auto", its default); every other memplan
# configuration allocates from the default pool (False).
PRIVATE_POOL = {"memplan_partition_private": True,
                "memplan_partition_grads": "auto",
                "memplan_partition_groups": "auto"}
CONFIGS = {
    "default": (None, None),
    "inductor_pools": (None, "intermediates"),
    "memplan_intermediates": ("optimal", "intermediates"),
    "memplan_combined": ("optimal", "combined"),
    "memplan_none": ("optimal", "none"),
    "memplan_partition": ("auto", "intermediates"),
    "memplan_partition_none": ("auto", "none"),
    "memplan_partition_cold": ("auto", "intermediates"),
    "memplan_partition_a512": ("auto", "intermediates"),
    "memplan_partition_grads": ("auto", "intermediates"),
    "memplan_partition_unreserved": ("auto", "intermediates"),
    "memplan_partition_private": ("auto", "intermediates"),
    "memplan_partition_groups": ("auto", "intermediates"),
}
# Configurations whose pool offsets are multiples of more than the
# service's default 64 bytes (install's alignment): 512, the caching
# allocator's block alignment, as every default torch.compile buffer has.
ALIGNMENT = {"memplan_partition_a512": 512}
# Relative error against eager that every configuration may have, at least
# (compiled kernels reorder float sums); the check's bound is the larger of
# this and twice default torch.compile's own error on the same model.
EAGER_TOLERANCE = 1e-2
# Rounds the timed steps of a configuration are split into (see run_worker).
ROUNDS = 4
# Steps of an inference row's loop (m["loop_peak_reserved"], run_worker).
LOOP_STEPS = 5
# --step-time: seconds a worker waits at its wave's barrier (every worker of
# the wave compiled) before its timed rounds, at most.
BARRIER_SECONDS = 300
# --step-time: the control's name (default's compiled code timed again, in
# a slot of its own) and the least step-time ratio counted as noise.
CONTROL = "default_again"
STEP_NOISE_FLOOR = 0.02


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="memplan-server binary")
    parser.add_argument("--server-libs", default="",
                        help="LD_LIBRARY_PATH for memplan-server only")
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--worker-timeout", type=int, default=480,
                        help="seconds a worker may take")
    parser.add_argument("--gpus", type=int, default=0,
                        help="GPUs to spread workers over (0: all)")
    parser.add_argument("--parallel", type=int, default=0,
                        help="workers at once per GPU (0: CPU cores / GPUs)")
    parser.add_argument("--steps", type=int, default=20,
                        help="timed steps per configuration")
    parser.add_argument("--step-time", action="store_true",
                        help="time the configurations of each (model, mode)"
                        " in one process, interleaved (see the doc)")
    parser.add_argument("--profile", action="store_true",
                        help="with --step-time: also profile each "
                        "configuration's steps (CUDA kernels, CPU time) "
                        "and keep every compiled graph's wrapper code")
    parser.add_argument("--save-code", action="store_true",
                        help="keep every compiled graph's wrapper code "
                        "beside each worker's record (WORKER.CONFIG.K.py; "
                        "--profile keeps it too)")
    parser.add_argument("--trace-lines", action="store_true",
                        help="memory runs: one more step in which every "
                        "statement of every compiled graph's wrapper code "
                        "records the memory allocated after it and the "
                        "peak within it (LineTraces; diagnosis)")
    parser.add_argument("--entry-snapshots", action="store_true",
                        help="memory runs: record the caching allocator's "
                        "segments (torch.cuda.memory_snapshot(): each "
                        "block's size and state) at every compiled graph's "
                        "entry in the step that measures the graphs, and "
                        "every allocation, free and cudaMalloc during the "
                        "graph (the allocator's memory history; GraphCalls; "
                        "diagnosis)")
    parser.add_argument("--first-steps-history", action="store_true",
                        help="memory runs: record the allocator's memory "
                        "history from before the first compiled step and "
                        "keep every segment it cudaMalloc'd in the first "
                        "two steps (FirstSegments: which step, bytes, pool, "
                        "where; diagnosis of segments the steady state "
                        "does not take)")
    parser.add_argument("--default-shadow",
                        action=argparse.BooleanOptionalAction, default=True,
                        help="memory runs: default torch.compile with the "
                        "hook in shadow (install(shadow=True): every "
                        "graph's request sent, none planned), so that the "
                        "service's baseline_peak_bytes is that of the very "
                        "graph default compiled (on by default)")
    parser.add_argument("--worker", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--gpu-lock", help=argparse.SUPPRESS)
    parser.add_argument("--barrier", help=argparse.SUPPRESS)
    parser.add_argument("--barrier-count", type=int, default=0,
                        help=argparse.SUPPRESS)
    return parser.parse_args()


# --- The driver ----------------------------------------------------------

class Server:
    """memplan-server as a child process on 127.0.0.1:<free port>."""

    def __init__(self, binary, libs, log_path):
        env = dict(os.environ)
        if libs:
            env["LD_LIBRARY_PATH"] = libs
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--worker_threads=8"], env=env,
            text=True, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.PIPE)
        self.target = None
        for line in self.process.stderr:
            self.log.write(line)
            match = re.search(r"listening on (\S+)", line)
            if match:
                self.target = match.group(1)
                break
        if self.target is None:
            raise SystemExit("memplan-server did not start")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.process.stderr:
            self.log.write(line)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def run_tool_workers(script, carry, out, worker_args, parallel=False):
    """The driver of a GPU tool (step_profile.py, uninitialized_reads.py,
    training_reservations.py): a memplan-server from the staged folder
    `carry` (its log OUT/server.log), then `script --worker ARGS TARGET`
    for each ARGS of `worker_args` (lists of strings; TARGET the server's
    address), each a process of its own with CARRY set: one after another,
    or with `parallel` all at once. Returns when every worker has exited;
    the server is stopped whatever happens."""
    os.makedirs(out, exist_ok=True)
    server = Server(os.path.join(carry, "bin/memplan-server"),
                    os.path.join(carry, "lib"),
                    os.path.join(out, "server.log"))
    env = dict(os.environ, CARRY=carry)
    try:
        workers = []
        for args in worker_args:
            command = [sys.executable, script, "--worker", *args,
                       server.target]
            if parallel:
                workers.append(subprocess.Popen(command, env=env))
            else:
                subprocess.run(command, env=env)
        for worker in workers:
            worker.wait()
    finally:
        server.stop()


def gpu_count():
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return max(1, len([l for l in out.stdout.splitlines() if l.strip()]))


def run_driver(args):
    workers_dir = os.path.join(args.out, "workers")
    os.makedirs(workers_dir, exist_ok=True)
    server = Server(args.server, args.server_libs,
                    os.path.join(args.out, "server.log"))
    configs = args.configs.split(",")
    pairs = queue.Queue()
    for mode in args.modes.split(","):
        for model in args.models.split(","):
            if model in DYNAMIC and mode != "inference":
                continue
            pairs.put((model, mode))
    gpus = args.gpus or gpu_count()
    parallel = args.parallel or max(1, (os.cpu_count() or 1) // gpus)
    # A worker per configuration, or with --step-time one per (model, mode)
    # that compiles and times them all.
    groups = [",".join(configs)] if args.step_time else configs
    per_wave = max(1, parallel // len(groups))
    results, lock = [], threading.Lock()
    started = time.time()

    def run_worker_process(gpu, model, mode, config, barrier=None,
                           barrier_count=0):
        name = f"{model}.{mode}." + ("step_time" if args.step_time
                                      else config)
        out = os.path.join(workers_dir, name + ".json")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu),
                   PYTHONUNBUFFERED="1")
        command = [sys.executable, __file__, "--worker",
                   "--target", server.target, "--model", model,
                   "--mode", mode, "--config", config,
                   "--steps", str(args.steps), "--out", out,
                   "--gpu-lock", os.path.join(args.out, f"gpu{gpu}.lock")]
        if args.step_time:
            command.append("--step-time")
        if barrier:
            command += ["--barrier", barrier,
                        "--barrier-count", str(barrier_count)]
        if args.profile:
            command.append("--profile")
        if args.save_code:
            command.append("--save-code")
        if args.trace_lines:
            command.append("--trace-lines")
        if args.entry_snapshots:
            command.append("--entry-snapshots")
        if args.first_steps_history:
            command.append("--first-steps-history")
        if not args.default_shadow:
            command.append("--no-default-shadow")
        begin = time.time()
        with open(os.path.join(workers_dir, name + ".log"), "w") as log:
            process = subprocess.Popen(command, env=env, stdout=log,
                                       stderr=subprocess.STDOUT)
        return name, out, process, begin

    def gpu_loop(gpu):
        waves = 0
        while True:
            wave = []
            while len(wave) < per_wave:
                try:
                    wave.append(pairs.get_nowait())
                except queue.Empty:
                    break
            if not wave:
                return
            # --step-time: no worker times its steps while another of the
            # wave still compiles (its CPU load slows the timed process's
            # launches: run T4d, docs/gpu.md "Step time").
            waves += 1
            barrier = os.path.join(args.out, f"barrier.gpu{gpu}.{waves}") \
                if args.step_time else None
            running = {pair: [run_worker_process(
                gpu, *pair, group, barrier, len(wave) * len(groups))
                for group in groups] for pair in wave}
            # Every worker of the wave done before any record is merged:
            # merging loads and compares results on the CPU, which would
            # disturb the wave's timed steps.
            outcomes = {}
            for pair, processes in running.items():
                outcomes[pair] = {}
                for (name, out, process, begin), config in zip(processes,
                                                               groups):
                    try:
                        code = process.wait(timeout=max(
                            1, args.worker_timeout - (time.time() - begin)))
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
                        code = "timeout"
                    outcomes[pair][config] = (code, out,
                                              round(time.time() - begin, 1))
            for (model, mode), outcome in outcomes.items():
                try:
                    record = merge_step_times(model, mode, outcome) \
                        if args.step_time else \
                        merge_group(model, mode, configs, outcome)
                except Exception as error:  # reported; the others go on
                    import traceback
                    traceback.print_exc()
                    record = {"model": model, "mode": mode, "configs": {},
                              "problems": [f"merging the workers' records: "
                                           f"{type(error).__name__}: {error}"]}
                with lock:
                    results.append(record)
                    write_results(args, results)
                print(f"[gpu {gpu}] {model} {mode}: " + ", ".join(
                    f"{c} exit {outcome[c][0]} {outcome[c][2]} s"
                    for c in groups), flush=True)

    threads = [threading.Thread(target=gpu_loop, args=(g,)) for g in
               range(gpus)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    server.stop()
    table = write_results(args, results)
    print(table)
    print(f"suite: {len(results)} (model, mode) pairs, "
          f"{len(results) * len(groups)} workers in "
          f"{time.time() - started:.0f} s on {gpus} GPU(s), "
          f"{parallel} workers at once per GPU")


def read_worker(out):
    """The record a worker wrote to `out`, or None where it wrote none."""
    if not os.path.exists(out):
        return None
    with open(out) as f:
        return json.load(f)


def merge_group(model, mode, configs, outcomes):
    """One (model, mode)'s record from its configurations' workers:
    metrics per configuration, the output checks (which need every
    configuration's results), and per graph the measured and predicted
    peaks with the requests the hook sent."""
    record = {"model": model, "mode": mode, "configs": {}, "problems": [],
              "worker_seconds": {}}
    workers = {}
    for config in configs:
        code, out, seconds = outcomes[config]
        record["worker_seconds"][config] = seconds
        worker = read_worker(out)
        if code != 0 or worker is None:
            record["problems"].append(f"{config}: worker exit {code}")
        if worker is None:
            continue
        workers[config] = worker
        record.setdefault("device", worker.get("device"))
        record.setdefault("torch", worker.get("torch"))
        record["configs"][config] = worker["metrics"]
        record["problems"] += [f"{config}: {p}" for p in worker["problems"]]
    check_results(record, configs, outcomes)
    per_graph_peaks(record, configs, workers)
    planned_calls(record, configs)
    return record


def merge_step_times(model, mode, outcomes):
    """One (model, mode)'s record from its --step-time worker: per
    configuration (and the control, CONTROL) the step time and what the
    worker checked."""
    (code, out, seconds), = outcomes.values()
    record = {"model": model, "mode": mode, "configs": {}, "problems": [],
              "worker_seconds": seconds}
    worker = read_worker(out)
    if code != 0 or worker is None:
        record["problems"].append(f"step-time worker exit {code}")
    if worker is not None:
        record["device"] = worker.get("device")
        record["torch"] = worker.get("torch")
        record["configs"] = worker["metrics"]
        record["problems"] += worker["problems"]
        for key in ("barrier_wait_seconds", "kernels_against_default"):
            if key in worker:
                record[key] = worker[key]
    return record


def eager_problems(metrics, configs):
    """A problem for each configuration of `metrics` (config -> numbers)
    whose error_vs_eager (relative_error against eager's results in its
    own process) is above EAGER_TOLERANCE or twice default's own error,
    whichever is larger; an infinite error (results of other shapes, or
    NaNs: relative_error) is a problem in every configuration, default's
    included, and widens no bound."""
    default_error = metrics.get("default", {}).get("error_vs_eager", 0.0)
    if not math.isfinite(default_error):
        default_error = 0.0
    bound = max(EAGER_TOLERANCE, 2 * default_error)
    problems = []
    for config in configs:
        error = metrics.get(config, {}).get("error_vs_eager")
        if error is None or error <= bound:
            continue
        # Without default in the run there is no control: compiled
        # training steps can differ from eager by far more than the fixed
        # tolerance (resnet50's batch norms: 0.41 for default and memplan
        # alike).
        control = "" if "default" in metrics else \
            "; default did not run, so no control: add it"
        problems.append(f"{config}: outputs/gradients differ from eager by "
                        f"{error:.3g} (relative; bound {bound:.3g}{control})")
    return problems


def check_results(record, configs, outcomes):
    """memplan's outputs and gradients against Inductor's own pools':
    whether they are bitwise equal, and a problem where they differ by more
    than the larger of 1e-6, ten times Inductor's own run-to-run error
    (one process) and twice the control's error (default's results against
    Inductor's own pools', two processes: some models' kernels differ from
    process to process); and every
    configuration's against eager's (within EAGER_TOLERANCE or twice
    default's own error, whichever is larger). The workers saved their
    results next to their records (.pt); they are deleted here."""
    import torch
    metrics = record["configs"]
    saved = {}
    for config in configs:
        path = outcomes[config][1][:-len(".json")] + ".pt"
        if os.path.exists(path):
            saved[config] = torch.load(path)
            os.remove(path)
    record["problems"] += eager_problems(metrics, configs)
    own = metrics.get("inductor_pools", {})
    reference = saved.get("inductor_pools")
    if reference is not None and "default" in saved:
        # The control: default's results against Inductor's own pools'
        # (other kernels where the reuse pass and pools differ).
        own["bitwise_equal_to_default"] = bitwise_equal(
            torch, saved["default"], reference)
        own["error_vs_default"] = relative_error(torch, saved["default"],
                                                 reference)
    tolerance = max(1e-6, 10 * own.get("run_to_run_error", 0.0),
                    2 * own.get("error_vs_default", 0.0))
    for config in configs:
        m = metrics.get(config)
        if m is None or "error_vs_eager" not in m:
            continue
        if not config.startswith("memplan_") or reference is None \
                or config not in saved:
            continue
        ours = saved[config]
        m["bitwise_equal_to_inductor_pools"] = bitwise_equal(torch, ours,
                                                             reference)
        if not m["bitwise_equal_to_inductor_pools"]:
            m["error_vs_inductor_pools"] = relative_error(torch, ours,
                                                          reference)
            if m["error_vs_inductor_pools"] > tolerance:
                record["problems"].append(
                    f"{config}: outputs/gradients differ from Inductor's "
                    f"own pools' by {m['error_vs_inductor_pools']:.3g} "
                    f"(its run-to-run: {own.get('run_to_run_error', 0.0):.3g})")


def per_graph_peaks(record, configs, workers):
    """Per graph (the k-th graph call of the step in every configuration):
    measured peaks, and the service's numbers for the same graph; the
    captured requests for CI. With --trace-lines, per configuration also
    where its line trace peaks (line_trace_peak: "line_trace")."""
    record["graphs"], record["captured"] = [], []
    default_calls = workers.get("default", {}).get("graph_calls", [])
    memplan = [c for c in configs if c.startswith("memplan_")
               and c in workers]
    count = max([len(w.get("graph_calls", [])) for w in workers.values()]
                or [0])
    for k in range(count):
        g = {"index": k}
        if k < len(default_calls):
            g["default_measured"] = default_calls[k]["peak"]
            g["default_measured_reserved"] = default_calls[k].get("reserved")
            g["default_calls"] = default_calls[k].get("calls")
            g["phase"] = default_calls[k]["phase"]
        for config, worker in workers.items():
            traces = worker.get("line_traces") or []
            if k < len(traces) and "peak" in traces[k]:
                g.setdefault("line_trace", {})[config] = {
                    key: traces[k][key] for key in
                    ("peak", "peak_statement", "peak_inside_statement")}
        # Default's own answer (--default-shadow): the service's baseline
        # of the very graph default compiled, which can differ from a
        # memplan process's (swin_t's backward compiles differently from
        # run to run).
        shadow = hook_graph_of(workers.get("default", {}), k)
        if shadow is not None:
            g["baseline"] = shadow["baseline_peak_bytes"]
            g["baseline_reserved"] = shadow.get("baseline_reserved_bytes")
            g["baseline_calls"] = shadow.get("baseline_allocations")
            g["default_shadow_predicted"] = shadow["predicted_peak_bytes"]
        request_json = memplan_of_request = None
        cached_blocks = {}  # config -> the cached blocks its request sent
        requests = {}  # config -> its request, where not request_json
        for config in memplan:
            calls = workers[config]["graph_calls"]
            if k >= len(calls):
                continue
            call = calls[k]
            g["phase"] = call["phase"]
            h = hook_graph_of(workers[config], k)
            entry = {"measured": call["peak"],
                     "measured_reserved": call.get("reserved"),
                     "calls": call.get("calls")}
            if h is not None:
                entry.update(predicted=h["predicted_peak_bytes"],
                             baseline=h["baseline_peak_bytes"],
                             predicted_reserved=h.get(
                                 "predicted_reserved_bytes"),
                             baseline_reserved=h.get(
                                 "baseline_reserved_bytes"),
                             predicted_calls=h.get("predicted_allocations"),
                             baseline_calls=h.get("baseline_allocations"),
                             planner=h["planner"],
                             total_pool_bytes=h["total_pool_bytes"],
                             pools=h["pools"],
                             reservations=h.get("reservations", 0),
                             buffer_groups=h.get("buffer_groups"),
                             workspace_probe=h.get("workspace_probe"))
                # The first configuration's, whose request is captured (a
                # backward's baseline follows its own request's frees).
                g.setdefault("baseline", h["baseline_peak_bytes"])
                g.setdefault("baseline_reserved",
                             h.get("baseline_reserved_bytes"))
                g.setdefault("baseline_calls", h.get("baseline_allocations"))
                if request_json is None:
                    request_json = h["request"]
                    memplan_of_request = config[len("memplan_"):]
                if h.get("request") is not None:
                    cached_blocks[config[len("memplan_"):]] = \
                        h["request"].get("cached_blocks", [])
                    if not same_request(h["request"], request_json):
                        requests[config[len("memplan_"):]] = h["request"]
            g[config] = entry
        record["graphs"].append(g)
        # Default's request, with its cached blocks, where it is not the
        # captured one's in every field but options.
        default_request = None
        if request_json is not None and shadow is not None and \
                shadow.get("request") is not None:
            default_request = shadow["request"]
            if same_request(default_request, request_json) and \
                    default_request.get("cached_blocks") == \
                    cached_blocks.get(memplan_of_request):
                default_request = None
        if request_json is not None:
            record["captured"].append({
                "model": record["model"], "mode": record["mode"],
                "graph": k, "phase": g.get("phase"),
                "device": record.get("device"), "torch": record.get("torch"),
                "request": request_json,
                "default_measured": g.get("default_measured"),
                "memplan_measured": {
                    c[len("memplan_"):]: g[c]["measured"]
                    for c in memplan if c in g},
                "default_measured_reserved": g.get(
                    "default_measured_reserved"),
                "memplan_measured_reserved": {
                    c[len("memplan_"):]: g[c].get("measured_reserved")
                    for c in memplan if c in g},
                "memplan_cached_blocks": cached_blocks,
                "memplan_requests": requests,
                "default_request": default_request,
                "default_measured_calls": g.get("default_calls"),
                "memplan_measured_calls": {
                    c[len("memplan_"):]: g[c].get("calls")
                    for c in memplan if c in g}})


def hook_graph_of(worker, k):
    """The hook's record (worker["hook_graphs"]) of the k-th graph call of
    a worker's measured step: the one of the same graph id and phase, else
    the k-th (compile order is call order); None where the service did
    not answer for it."""
    calls = worker.get("graph_calls", [])
    graphs = worker.get("hook_graphs", [])
    if k >= len(calls):
        return None
    call = calls[k]
    match = [h for h in graphs if h.get("graph_id") is not None
             and h.get("graph_id") == call["graph_id"]
             and h.get("phase") == call["phase"]]
    if not match and k < len(graphs):
        match = [graphs[k]]
    if not match or match[-1]["source"] != "service":
        return None
    return match[-1]


def same_request(a, b):
    """Whether two requests (protobuf JSON) are one but for options and
    cached blocks: a training backward's input frees follow its forward's
    plan, so its request differs from pool mode to pool mode."""
    def strip(request):
        return {k: v for k, v in request.items()
                if k not in ("options", "cached_blocks")}
    return strip(a) == strip(b)


def planned_calls(record, configs):
    """Per memplan configuration, the allocator calls its plans replace
    (issue 21 counts these, not the extern kernels' own): the plans' pools
    and segment reservations, one call each (planned_calls), against default torch.compile's calls
    for the same buffers (planned_calls_default), summed over the step's
    graphs the service planned. Default's are measured: a graph's calls in
    default minus its calls with the plan, plus the plan's pools (the calls
    both make for what no pool holds, extern kernels' outputs and
    workspaces, cancel)."""
    for config in configs:
        m = record["configs"].get(config)
        if not config.startswith("memplan_") or m is None:
            continue
        pools = default = 0
        for g in record.get("graphs", []):
            entry = g.get(config, {})
            if None in (entry.get("pools"), entry.get("calls"),
                        g.get("default_calls")):
                continue
            # A segment reservation is one more call the plan makes.
            plan = entry["pools"] + entry.get("reservations", 0)
            pools += plan
            default += g["default_calls"] - entry["calls"] + plan
        if default > 0:
            m["planned_calls"] = pools
            m["planned_calls_default"] = default


def write_results(args, results):
    """Writes results.json, captured.jsonl.gz (not with --step-time) and
    table.md for the pairs done so far (so a run cut short still leaves
    them); returns the table."""
    results = sorted(results, key=lambda r: (
        r["mode"], MODELS.index(r["model"]) if r["model"] in MODELS else 99))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "captured"}
                   for r in results], f, indent=1)
    if args.step_time:
        table = step_time_markdown(results, args.configs.split(","))
    else:
        captured = [graph for r in results
                    for graph in r.get("captured", [])]
        with gzip.open(os.path.join(args.out, "captured.jsonl.gz"),
                       "wt") as f:
            for graph in captured:
                f.write(json.dumps(graph, sort_keys=True) + "\n")
        table = markdown(results, args.configs.split(","))
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    return table


# The summary's columns: (name, metric, the ratio counted "within", and the
# metric of the same configuration it is a ratio to: None for default's
# same metric).
SUMMARY = (("peak allocated", "peak_allocated", 1.005, None),
           ("peak reserved", "peak_reserved", 1.005, None),
           ("peak reserved above the bytes in use at the start",
            "peak_reserved_over_live", 1.005, None),
           ("allocator calls", "allocator_calls", 1.005, None),
           ("calls the plan replaces", "planned_calls", 0.25,
            "planned_calls_default"),
           ("step time (per process: --step-time times them in one)",
            "step_ms", 1.05, None))


def mib(value):
    return "" if value is None else f"{value / 2**20:.1f}"


def per_graph_table(results, memplan, measured, baseline, predicted,
                    unit=mib):
    """Markdown rows, per compiled graph: default's `measured` (its key
    prefixed "default_") / the service's `baseline`, then each memplan
    configuration's `measured` / `predicted`, each written by `unit`
    (bytes as MiB)."""
    def show(value):
        return "" if value is None else unit(value)

    lines = ["| model | mode | graph | default: measured / baseline | "
             + " | ".join(f"{c}: measured / predicted" for c in memplan)
             + " |", "| --- | --- | --- | --- |" + " --- |" * len(memplan)]
    for r in results:
        for g in r.get("graphs", []):
            cells = [f"{show(g.get('default_' + measured))} / "
                     f"{show(g.get(baseline))}"]
            for c in memplan:
                m = g.get(c, {})
                cells.append(f"{show(m.get(measured))} / "
                             f"{show(m.get(predicted))}")
            lines.append(f"| {r['model']} | {r['mode']} | {g['index']} "
                         f"{g.get('phase', '')} | " + " | ".join(cells) + " |")
    return lines


def markdown(results, configs):
    """The suite's tables: per model and mode, each configuration's peak
    allocated / peak reserved (MiB above the step's start; in
    parentheses above the bytes in use at the start), allocator calls
    (memplan's: with the calls its plans replace, "(pools for default's
    calls)", planned_calls), step time; then per graph, measured vs
    predicted peaks."""
    device = next((r.get("device") for r in results if r.get("device")), "?")
    torch_version = next((r.get("torch") for r in results if r.get("torch")),
                         "?")
    lines = [f"GPU: {device}; torch {torch_version}", ""]
    header = "| model | mode | " + " | ".join(
        f"{c}: alloc / reserved (above live) MiB, calls, ms"
        for c in configs) + " |"
    lines += [header, "| --- | --- |" + " --- |" * len(configs)]
    for r in results:
        cells = []
        for c in configs:
            m = r.get("configs", {}).get(c)
            if not m or "error" in m:
                cells.append("error" if m else "")
                continue
            planned = (f" ({m['planned_calls']} for "
                       f"{m['planned_calls_default']})"
                       if "planned_calls" in m else "")
            over_live = (f" ({mib(m['peak_reserved_over_live'])})"
                         if "peak_reserved_over_live" in m else "")
            cells.append(f"{mib(m['peak_allocated'])} / "
                         f"{mib(m['peak_reserved'])}{over_live}, "
                         f"{m['allocator_calls']}"
                         f"{planned}, {m.get('step_ms', 0):.2f}")
        lines.append(f"| {r['model']} | {r['mode']} | " + " | ".join(cells)
                     + " |")
    lines += ["", "Per compiled graph (MiB above the graph's entry): "
              "default measured / service baseline; memplan measured / "
              "service predicted, per pool mode", ""]
    memplan = [c for c in configs if c.startswith("memplan_")]
    lines += per_graph_table(results, memplan, "measured", "baseline",
                             "predicted")
    lines += ["", "Per compiled graph, reserved (MiB above the graph's "
              "entry; the service's caching-allocator model starts from "
              "the cached blocks the hook sent, or an empty cache; the "
              "baseline's from the first memplan configuration's): default "
              "measured / service baseline_reserved; "
              "memplan measured / service predicted_reserved", ""]
    lines += per_graph_table(results, memplan, "measured_reserved",
                             "baseline_reserved", "predicted_reserved")
    lines += ["", "Per compiled graph, allocator calls (allocation.all."
              "allocated over the graph's call; the service counts each "
              "allocation of an extern kernel call the hook probed, none "
              "inside the calls it did not): default measured / "
              "service baseline_allocations; memplan measured / service "
              "predicted_allocations", ""]
    lines += per_graph_table(results, memplan, "calls", "baseline_calls",
                             "predicted_calls", unit=str)
    lines += ["", "Against default torch.compile, over the (model, mode) rows "
              "that both ran: geometric mean and worst of the ratio, and the "
              "rows at most +0.5% (step time: at most +5%; calls the plan "
              "replaces: the plans' pools over default's calls for the same "
              "buffers, at most 1/4)", ""]
    lines += ["| configuration | " + " | ".join(
        name for name, _, _, _ in SUMMARY) + " |",
        "| --- |" + " --- |" * len(SUMMARY)]
    for c in configs:
        if c == "default":
            continue
        cells = []
        for _, key, bound, against in SUMMARY:
            ratios = []
            for r in results:
                ours = r.get("configs", {}).get(c, {}).get(key)
                theirs = r.get("configs", {}).get(
                    c if against else "default", {}).get(against or key)
                if ours is not None and theirs:
                    ratios.append(max(ours, 1e-9) / theirs)
            if not ratios:
                cells.append("")
                continue
            mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            within = sum(1 for x in ratios if x <= bound)
            cells.append(f"{mean:.3f} / {max(ratios):.3f}, "
                         f"{within} of {len(ratios)}")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += ["", "Checks", ""]
    for r in results:
        problems = r.get("problems", [])
        lines.append(f"- {r['model']} {r['mode']}: "
                     + ("; ".join(problems) if problems else "ok"))
    return "\n".join(lines) + "\n"
def within_noise(ratio, control):
    """Whether a step-time ratio to default is within noise: at most 2%
    above default's, or twice the row's control (default's own code timed
    in a slot of its own) off 1, whichever is larger."""
    return ratio <= 1 + max(STEP_NOISE_FLOOR, 2 * abs(control - 1))


def step_time_markdown(results, configs):
    """The --step-time table: per (model, mode), each configuration's step
    time (ms, median) and its ratio to default's, the control's ratio
    (default timed again in a slot of its own: the noise); then per
    configuration the geometric mean and worst ratio and the rows within
    noise (within_noise)."""
    device = next((r.get("device") for r in results if r.get("device")), "?")
    torch_version = next((r.get("torch") for r in results if r.get("torch")),
                         "?")
    others = [c for c in configs if c != "default"]
    lines = [f"GPU: {device}; torch {torch_version}; every configuration of "
             "a row compiled and timed in one process, interleaved; "
             "ms per step (median) and the ratio to default's", "",
             "| model | mode | default | control | "
             + " | ".join(others) + " |",
             "| --- | --- | --- | --- |" + " --- |" * len(others)]
    ratios = {c: [] for c in others}
    for r in results:
        m = r.get("configs", {})
        base = m.get("default", {}).get("step_ms")
        control = m.get(CONTROL, {}).get("step_ms")

        def cell(ms):
            if ms is None:
                return "error"
            return f"{ms:.2f}" + (f" ({ms / base:.3f})" if base else "")
        cells = [cell(base), cell(control)]
        for c in others:
            ms = m.get(c, {}).get("step_ms")
            cells.append(cell(ms))
            if ms is not None and base and control:
                ratios[c].append((ms / base, control / base))
        lines.append(f"| {r['model']} | {r['mode']} | " + " | ".join(cells)
                     + " |")
    lines += ["", "Against default: geometric mean / worst ratio, rows within "
              f"noise (at most +{STEP_NOISE_FLOOR:.0%} or twice the row's "
              "control off 1)", "",
              "| configuration | step time |", "| --- | --- |"]
    for c in others:
        if not ratios[c]:
            continue
        values = [x for x, _ in ratios[c]]
        mean = math.exp(sum(math.log(x) for x in values) / len(values))
        within = sum(1 for x, k in ratios[c] if within_noise(x, k))
        lines.append(f"| {c} | {mean:.3f} / {max(values):.3f}, {within} of "
                     f"{len(values)} |")
    lines += launches_markdown(results, configs)
    lines += profile_markdown(results, configs)
    lines += ["", "Checks (one process: memplan's outputs and gradients "
              "against Inductor's own pools')", ""]
    for r in results:
        problems = r.get("problems", [])
        lines.append(f"- {r['model']} {r['mode']}: "
                     + ("; ".join(problems) if problems else "ok"))
    return "\n".join(lines) + "\n"


def launches_markdown(results, configs):
    """Per (model, mode) of a --step-time run: each slot's CPU time of the
    call (ms, median of the timed steps: the launches; a launch-bound
    step's time follows it) with its ratio to default's, and per
    configuration the Triton kernels autotuned to another configuration
    than default's kernel of the same name, of its kernels
    (kernels_against_default; "n shared": default's own kernel objects).
    Nothing where no row has CPU times."""
    if not any("step_cpu_ms" in m for r in results
               for m in r.get("configs", {}).values()):
        return []
    others = [c for c in configs if c != "default"]
    lines = ["", "CPU time of the call (ms, median; ratio to default's) "
             "and Triton kernels autotuned otherwise than default's", "",
             "| model | mode | default | control | " + " | ".join(others)
             + " |", "| --- | --- | --- | --- |" + " --- |" * len(others)]
    for r in results:
        m = r.get("configs", {})
        base = m.get("default", {}).get("step_cpu_ms")
        kernels = r.get("kernels_against_default", {})

        def cell(slot):
            ms = m.get(slot, {}).get("step_cpu_ms")
            text = "-" if ms is None else f"{ms:.2f}" + (
                f" ({ms / base:.3f})" if base else "")
            if slot in kernels:
                k = kernels[slot]
                text += (f"; {len(k['other_config'])} of {k['kernels']} "
                         f"kernels otherwise ({k['same_object']} shared)")
            return text
        lines.append(f"| {r['model']} | {r['mode']} | "
                     + " | ".join(cell(s) for s in ["default", CONTROL]
                                  + others) + " |")
    return lines


def profile_markdown(results, configs):
    """With --profile: per (model, mode) and configuration (and the
    control, CPU side only), the CPU time of a step's call, its GPU time,
    the CUDA kernels' busy time and launches per step; the wrapper code's
    lines by kind (line_costs); then, against default's, the kernels and
    Python functions whose time per step differs most (lines of a list;
    none without profiles)."""
    rows = [(r, c, r["configs"][c]["profile"]) for r in results
            for c in [*configs, CONTROL]
            if "profile" in r.get("configs", {}).get(c, {})]
    if not rows:
        return []
    lines = ["", "Profiles (step_profile, median of "
             f"{PROFILE_STEPS}): ms per step", "",
             "| model | mode | configuration | CPU (call) | GPU | kernels "
             "busy | kernel launches |", "| --- | --- | --- | --- | --- | "
             "--- | --- |"]
    for r, c, p in rows:
        busy = p.get("kernel_busy_ms")
        lines.append(f"| {r['model']} | {r['mode']} | {c} | {p['cpu_ms']:.2f}"
                     f" | {p['gpu_ms']:.2f} | "
                     f"{'' if busy is None else f'{busy:.2f}'} | "
                     f"{p.get('kernel_launches', '')} |")
    lines += ["", "Wrapper code's lines by kind under sys.settrace "
              "(line_costs): us per step (lines per step)", ""]
    for r, c, p in rows:
        if p.get("wrapper_lines"):
            lines.append(f"- {r['model']} {r['mode']} {c}: " + "; ".join(
                f"{kind} {us:.0f} ({count:g})" for kind, (us, count) in
                p["wrapper_lines"].items()))
    for key, what in (("kernels_us_launches", "Kernels whose GPU time"),
                      ("python_us_calls", "Python functions whose own "
                       "time")):
        lines += ["", f"{what} per step differs most from default's (us "
                  "per step, calls per step):", ""]
        for r, c, p in rows:
            base = r["configs"].get("default", {}).get("profile")
            if c in ("default", CONTROL) or base is None or key not in p:
                continue
            ours, theirs = p[key], base.get(key, {})
            change = sorted(set(ours) | set(theirs), key=lambda n: -abs(
                ours.get(n, [0, 0])[0] - theirs.get(n, [0, 0])[0]))[:5]
            lines.append(f"- {r['model']} {r['mode']} {c}: " + "; ".join(
                f"{n[:60]} {theirs.get(n, [0, 0])[0]:.0f} -> "
                f"{ours.get(n, [0, 0])[0]:.0f} us "
                f"({theirs.get(n, [0, 0])[1]:g} -> "
                f"{ours.get(n, [0, 0])[1]:g})" for n in change))
    return lines


# --- The worker --------------------------------------------------------------

def seed_everything(torch):
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)


def without_dropout(torch, model):
    """Dropout and stochastic depth off, so that every configuration
    computes the same function in training mode."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if type(module).__name__ == "StochasticDepth":
            module.p = 0.0
    return model


def build(torch, name, mode):
    """Returns (model, inputs (a dict of keyword arguments), loss(output),
    dynamic)."""
    seed_everything(torch)
    device = "cuda"
    dynamic = name in DYNAMIC
    base = name.replace("_dynamic", "")
    if base in VISION:
        import torchvision
        model = getattr(torchvision.models, base)(num_classes=100)
        x = torch.randn(16, 3, 224, 224, device=device)
        labels = torch.randint(0, 100, (16,), device=device)
        inputs = {"x": x}

        def loss(out):
            return torch.nn.functional.cross_entropy(out, labels)

        def forward(model, x):
            return model(x)
    else:
        import transformers
        common = dict(vocab_size=8000)
        if base == "gpt2":
            config = transformers.GPT2Config(
                n_layer=4, n_embd=512, n_head=8, n_positions=256,
                resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, **common)
            model = transformers.GPT2LMHeadModel(config)
        elif base == "bert":
            config = transformers.BertConfig(
                hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                intermediate_size=2048, max_position_embeddings=256,
                hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                **common)
            model = transformers.BertForMaskedLM(config)
        elif base == "llama":
            config = transformers.LlamaConfig(
                hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                num_attention_heads=8, num_key_value_heads=8,
                max_position_embeddings=256, **common)
            model = transformers.LlamaForCausalLM(config)
        elif base == "t5":
            config = transformers.T5Config(
                d_model=512, d_ff=2048, d_kv=64, num_layers=4,
                num_decoder_layers=4, num_heads=8, dropout_rate=0, **common)
            model = transformers.T5ForConditionalGeneration(config)
        else:
            raise SystemExit(f"unknown model {name}")
        model.config.use_cache = False
        ids = torch.randint(0, 8000, (8, 256), device=device)
        inputs = {"input_ids": ids}
        if base == "t5":
            inputs["decoder_input_ids"] = torch.randint(0, 8000, (8, 256),
                                                        device=device)

        def loss(out):
            return out.float().mean()

        def forward(model, **kwargs):
            return model(**kwargs).logits
    model = without_dropout(torch, model.to(device))
    model.train(mode == "training")
    return model, inputs, loss, forward, dynamic


def graph_identity(graph):
    """A compiled graph's {"graph_id" (AOTAutograd's, shared by a forward
    and its backward), "phase": "inference", "forward" or "backward"}."""
    kwargs = getattr(graph, "fx_kwargs", {}) or {}
    return {"graph_id": kwargs.get("graph_id"),
            "phase": "backward" if kwargs.get("is_backward") else (
                "inference" if kwargs.get("is_inference") else "forward")}


def python_site(frames):
    """A one-element list of the innermost Python frames of a memory-history
    record's `frames` ("file:line function", at most 6, innermost first),
    or empty where it has none."""
    frames = [f for f in frames or ()
              if f.get("filename", "").endswith(".py")]
    if not frames:
        return []
    return [[f"{os.path.basename(f['filename'])}:{f.get('line')} "
             f"{f.get('name')}" for f in frames[:6]]]


def allocation_site(block):
    """Where a snapshot's allocated block was allocated (python_site) where
    the allocator's memory history recorded it (--entry-snapshots turns it
    on); else empty."""
    if block.get("state") != "active_allocated":
        return []
    return python_site(block.get("frames"))


# --entry-snapshots: the allocator's memory history keeps this many of its
# latest actions (torch.cuda.memory._record_memory_history's max_entries).
HISTORY_ENTRIES = 200000
# --first-steps-history: the memory history's size from before the first
# compiled step (its compile's allocations included).
FIRST_STEPS_ENTRIES = 2000000


def first_step_trace(torch):
    """The memory history's actions on the current device so far."""
    traces = torch.cuda.memory._snapshot().get("device_traces") or []
    device = torch.cuda.current_device()
    return traces[device] if device < len(traces) else []


def first_segments(torch, ends):
    """FirstSegments: every segment the caching allocator cudaMalloc'd
    since the history began, as [step (1 while the first compiled step
    ran, 2 the second, 0 after), bytes, pool id ([0, 0]: the default
    pool; [] where the segment was freed since), *python_site]; `ends`:
    the history's length after each step."""
    snapshot = torch.cuda.memory._snapshot()
    device = torch.cuda.current_device()
    traces = snapshot.get("device_traces") or []
    trace = traces[device] if device < len(traces) else []
    pools = {segment["address"]: list(segment.get("segment_pool_id") or
                                      (0, 0))
             for segment in snapshot["segments"]}
    found = []
    for index, entry in enumerate(trace):
        if entry.get("action") != "segment_alloc":
            continue
        step = next((k + 1 for k, end in enumerate(ends) if index < end), 0)
        found.append([step, entry.get("size", 0),
                      pools.get(entry.get("addr"), []),
                      *python_site(entry.get("frames"))])
    return found


# The actions allocator_trace keeps (the history also records
# "free_requested", "oom", "snapshot" and expandable segments' mappings).
TRACE_ACTIONS = ("alloc", "free_completed", "segment_alloc", "segment_free")


def allocator_trace(before, after, device):
    """The caching allocator's actions on `device` (an index) between two
    torch.cuda.memory._snapshot()s taken while its memory history records
    (before: at a graph's entry, after: at its return), in order:
    [[action (TRACE_ACTIONS), bytes, address, *python_site], ...]: an
    "alloc"'s or "free_completed"'s bytes are the bytes requested (its
    block may be larger: a cached block taken whole), a "segment_alloc"'s
    the segment cudaMalloc'd (the reserved bytes growing). None where the
    history may have dropped actions (its ring of HISTORY_ENTRIES full by
    the return) or has no trace for the device."""
    def trace_of(snapshot):
        traces = snapshot.get("device_traces") or []
        return traces[device] if device < len(traces) else None
    first, last = trace_of(before), trace_of(after)
    if first is None or last is None or len(last) >= HISTORY_ENTRIES:
        return None
    return [[entry["action"], entry.get("size", 0), entry.get("addr", 0),
             *python_site(entry.get("frames"))]
            for entry in last[len(first):]
            if entry.get("action") in TRACE_ACTIONS]


class GraphCalls:
    """Wraps CompiledFxGraph.__call__ (every compiled forward, backward and
    inference graph): while `measuring`, records per call the peak allocated
    and reserved above the graph's entry (peak statistics reset at entry,
    read at return) and the allocator calls the graph made
    (allocation.all.allocated), the bytes allocated at the entry
    (`entry_allocated`) and the most allocated since the previous graph's
    entry or the step's start (`peak_before_entry`: both absolute, for
    where the step's peak falls between graphs); with `snapshots` (the
    allocator's memory history recording), also the allocator's segments at
    the entry (`entry_segments`): per segment [pool ("small" or "large"),
    bytes, [[block bytes, state ("active_allocated", "inactive", ...),
    *allocation_site], ...] in address order, the segment's address, its
    pool's id ([0, 0]: the default pool)], and
    what the allocator did during the call (`trace`: allocator_trace) and
    since the previous graph returned (`trace_before_entry`: the eager work
    between graphs, such as the loss and autograd's; for a step's first
    graph, since the step began)."""

    def __init__(self, torch, snapshots=False):
        from torch._inductor.output_code import CompiledFxGraph
        self.torch = torch
        self.measuring = False
        self.snapshots = snapshots
        self.calls = []
        self.last_return = None  # the snapshot at the last graph's return
        original = CompiledFxGraph.__call__
        graph_calls = self

        def call(graph, inputs):
            if not graph_calls.measuring:
                graph_calls.last_return = None
                return original(graph, inputs)
            cuda = graph_calls.torch.cuda
            entry = before = None
            if graph_calls.snapshots:
                before = cuda.memory._snapshot()
                entry = [[segment.get("segment_type", ""),
                          segment["total_size"],
                          [[block["size"], block["state"],
                            *allocation_site(block)]
                           for block in segment["blocks"]],
                          segment["address"],
                          list(segment.get("segment_pool_id") or (0, 0))]
                         for segment in sorted(before["segments"],
                                               key=lambda s: s["address"])]
            peak_before = cuda.max_memory_allocated()
            cuda.reset_peak_memory_stats()
            base = cuda.memory_allocated()
            base_reserved = cuda.memory_reserved()
            base_calls = cuda.memory_stats().get("allocation.all.allocated",
                                                 0)
            try:
                return original(graph, inputs)
            finally:
                if before is not None:
                    after = cuda.memory._snapshot()
                    device = cuda.current_device()
                    entry_trace = {"trace": allocator_trace(before, after,
                                                            device)}
                    if graph_calls.last_return is not None:
                        entry_trace["trace_before_entry"] = allocator_trace(
                            graph_calls.last_return, before, device)
                    graph_calls.last_return = after
                else:
                    entry_trace = {}
                graph_calls.calls.append({
                    **graph_identity(graph),
                    "peak": cuda.max_memory_allocated() - base,
                    "reserved": cuda.max_memory_reserved() - base_reserved,
                    "calls": cuda.memory_stats().get(
                        "allocation.all.allocated", 0) - base_calls,
                    "entry_allocated": base,
                    "peak_before_entry": peak_before,
                    **({"entry_segments": entry} if entry is not None
                       else {}),
                    **entry_trace})

        CompiledFxGraph.__call__ = call


class LineTraces:
    """Wraps CompiledFxGraph.__call__ for diagnosis: while `tracing`, each
    compiled graph runs a copy of its wrapper code in which every statement
    of `call` (and of the `with` blocks in it) is followed by a probe, and
    records per statement the bytes allocated after it and the most bytes
    allocated within it (a cuDNN workspace, a temporary inside an extern
    kernel), both above the graph's entry (torch.cuda.memory_allocated and
    max_memory_allocated, peak statistics reset at every probe: no device
    synchronization). The copy is loaded through Inductor's PyCodeCache
    (its kernels come from Triton's cache) and called as the original's
    `call`, without the wrapper Inductor puts around it (the inputs here
    are aligned). calls: per graph call, {"graph_id", "phase", "rows":
    [[statement (120 characters at most), after, within], ...]}, rows kept
    where the allocated bytes changed or the peak within rose above them."""

    def __init__(self, torch):
        from torch._inductor.output_code import CompiledFxGraph
        self.torch = torch
        self.tracing = False
        self.calls = []
        self.modules = {}  # id(graph) -> (module, statement labels)
        original = CompiledFxGraph.__call__
        traces = self

        def call(graph, inputs):
            if not traces.tracing or getattr(graph, "source_code",
                                             None) is None:
                return original(graph, inputs)
            return traces._traced_call(graph, inputs)

        CompiledFxGraph.__call__ = call

    def _module(self, graph):
        import ast
        from torch._inductor.codecache import PyCodeCache
        key = id(graph)
        if key in self.modules:
            return self.modules[key]
        tree = ast.parse(graph.source_code)
        labels = []

        def probed(body):
            out = []
            for statement in body:
                if isinstance(statement, ast.With):
                    statement.body = probed(statement.body)
                    out.append(statement)
                    continue
                out.append(statement)
                if isinstance(statement, ast.Return):
                    continue
                labels.append(" ".join(ast.unparse(statement).split())[:120])
                out.append(ast.parse(
                    f"_memplan_probe({len(labels) - 1})").body[0])
            return out

        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "call":
                node.body = probed(node.body)
        module = PyCodeCache.load(ast.unparse(tree))
        self.modules[key] = (module, labels)
        return self.modules[key]

    def _traced_call(self, graph, inputs):
        cuda = self.torch.cuda
        module, labels = self._module(graph)
        rows = []
        cuda.reset_peak_memory_stats()
        base = cuda.memory_allocated()
        last = [0]

        def probe(i):
            after = cuda.memory_allocated() - base
            within = cuda.max_memory_allocated() - base
            if after != last[0] or within > after:
                rows.append([labels[i], after, within])
            last[0] = after
            cuda.reset_peak_memory_stats()

        module._memplan_probe = probe
        try:
            return module.call(inputs)
        finally:
            self.calls.append({**graph_identity(graph), "rows": rows})


def line_trace_peak(rows):
    """Where a graph's line trace (LineTraces' rows) peaks: (bytes above
    the graph's entry, the statement, bytes allocated inside that statement
    above the larger of the allocated before and after it: an extern
    kernel's workspace). A Triton launch counts by its before and after
    only: its launcher allocates nothing the graph keeps, and its first
    launch in a freshly loaded module may benchmark configurations with
    buffers of its own."""
    peak, statement, inside, before = 0, None, 0, 0
    for label, after, within in rows:
        if label.startswith("triton_"):
            top, extra = max(before, after), 0
        else:
            top, extra = max(after, within), max(0, within - max(before,
                                                                 after))
        if top > peak:
            peak, statement, inside = top, label, extra
        before = after
    return peak, statement, inside


def force_training_pools(torch, enabled):
    """Inductor's own pools for training graphs: its switch in
    PythonWrapperCodegen.run_wrapper_ir_passes forced on (or restored)."""
    from torch._inductor.codegen import wrapper as W
    if not hasattr(force_training_pools, "original"):
        force_training_pools.original = W.PythonWrapperCodegen.run_wrapper_ir_passes
    original = force_training_pools.original
    if not enabled:
        W.PythonWrapperCodegen.run_wrapper_ir_passes = original
        return

    def run_wrapper_ir_passes(self, is_inference):
        original(self, True)

    W.PythonWrapperCodegen.run_wrapper_ir_passes = run_wrapper_ir_passes

def options_of(config):
    """torch.compile's options for `config`: Inductor's pools where the
    configuration has a pool mode; Triton kernels compiled in the worker's
    own process (the wave's workers are the parallelism)."""
    _, pool_mode = CONFIGS[config]
    options = {"compile_threads": 1}
    if pool_mode is not None:
        options.update(memory_planning=True, memory_pool=pool_mode)
    return options


def tensors_of(torch, value):
    """The tensors of an output, flattened, detached, on the CPU."""
    if isinstance(value, torch.Tensor):
        return [value.detach().float().cpu()]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(torch, v)]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in tensors_of(torch, value[k])]
    return []


def relative_error(torch, actual, expected):
    """The relative L2 error of a step's results, {"outputs": [tensors],
    "gradients": [tensors]}: ||a - e|| / ||e|| over all outputs taken as
    one vector, likewise over all gradients, the larger of the two (inf
    where the shapes differ or either side holds a NaN or an infinity: a
    NaN's difference would otherwise compare below every bound, and t5's
    compiled step does return NaNs where its memory held them, docs/gpu.md
    "Runs U6, W5, V12, P5, P6, R1 and R2")."""
    worst = 0.0
    for part in ("outputs", "gradients"):
        a, e = actual[part], expected[part]
        if len(a) != len(e) or any(x.shape != y.shape for x, y in zip(a, e)):
            return float("inf")
        if not e:
            continue
        difference = sum(float((x - y).double().norm()) ** 2
                         for x, y in zip(a, e)) ** 0.5
        norm = sum(float(y.double().norm()) ** 2 for y in e) ** 0.5
        if not (math.isfinite(difference) and math.isfinite(norm)):
            return float("inf")
        worst = max(worst, difference / (norm or 1.0))
    return worst


def bitwise_equal(torch, actual, expected):
    return all(len(actual[p]) == len(expected[p]) and all(
        torch.equal(x, y) for x, y in zip(actual[p], expected[p]))
        for p in ("outputs", "gradients"))


def stepper(torch, model, inputs, loss_of, params, training):
    """One step of `model` with the compiled or eager `fn`: step(fn) runs
    the forward (training: with `params`' gradients set to None first, then
    loss_of(output).backward(); inference: under no_grad) and returns the
    output."""
    def step(fn):
        if training:
            for p in params:
                p.grad = None
            out = fn(model, **inputs)
            loss_of(out).backward()
            return out
        with torch.no_grad():
            return fn(model, **inputs)
    return step


def gradient_memory(torch, params, start_allocated):
    """What a training step's gradients hold after it: gradient_bytes (the
    .grad tensors' own bytes), gradient_storage_bytes and gradient_storages
    (the distinct storages under them: more bytes than the gradients' where
    a pool of several gradients keeps a slot no .grad uses, such as one
    autograd copied to its parameter's layout), and end_allocated (bytes
    allocated after the step, above its start)."""
    grads = [p.grad for p in params if p.grad is not None]
    storages = {}
    for g in grads:
        storage = g.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return {"gradient_bytes": sum(g.numel() * g.element_size()
                                  for g in grads),
            "gradient_storage_bytes": sum(storages.values()),
            "gradient_storages": len(storages),
            "end_allocated": torch.cuda.memory_allocated() - start_allocated}


def step_results(torch, out, params, training):
    """A step's outputs and (training) parameters' gradients, on the CPU."""
    return {"outputs": tensors_of(torch, out),
            "gradients": [p.grad.detach().float().cpu() for p in params]
            if training else []}


def apply_config(torch, hook, target, config, training, shadow=False):
    """Puts `config`'s settings in place for a compile (torch.compile
    compiles at the first call): Inductor's training-graph switch forced
    for inductor_pools in training; for memplan configurations the hook
    installed (service `target`, every graph planned, stats reset); with
    `shadow`, default's graphs sent to the service as memplan_partition_
    grads would send them, none planned (install(shadow=True)).
    release_config undoes them."""
    force_training_pools(torch, config == "inductor_pools" and training)
    if config == "default" and shadow:
        hook.install(target, strategy="auto", shadow=True, timeout=60.0)
        hook.reset_stats()
    if config.startswith("memplan_"):
        hook.install(target, strategy=CONFIGS[config][0], training=True,
                     timeout=60.0, entry_cache=config not in COLD,
                     alignment=ALIGNMENT.get(config, 0),
                     pool_gradients=config in GRADIENTS_POOLED,
                     reserve_segments=config not in UNRESERVED,
                     private_pool=PRIVATE_POOL.get(config, False),
                     group_saved_activations=config in SAVED_GROUPED)
        hook.reset_stats()


def release_config(torch, hook):
    """Undoes apply_config (whichever configuration it applied)."""
    hook.uninstall()
    force_training_pools(torch, False)


def hook_stats(hook, m, problems, prefix=""):
    """The hook's stats since apply_config; sets m's service_plans,
    fallbacks and fallback_reasons, and adds a problem (after `prefix`) to
    `problems` where a graph fell back."""
    stats = hook.stats()
    m["service_plans"] = stats["service_plans"]
    m["fallbacks"] = stats["fallbacks"]
    m["fallback_reasons"] = [g.get("reason") for g in stats["graphs"]
                             if g["source"] != "service"]
    if m["fallbacks"]:
        problems.append(f"{prefix}{m['fallbacks']} graph(s) fell back: "
                        f"{m['fallback_reasons']}")
    if not stats["graphs"]:
        problems.append(f"{prefix}the hook saw no graph")
    return stats


def backend_of(torch, config, dynamic):
    """A torch.compile backend: Inductor with options_of(config), equal
    only to itself. Dynamo runs a frame's cached code only under an equal
    backend (its cache's backend match compares with ==), and Inductor's
    own backends are equal when their options are: without this,
    memplan_partition compiled after inductor_pools in one process would
    run Inductor's pools."""
    class Backend(torch._TorchCompileInductorWrapper):
        __eq__ = object.__eq__
        __hash__ = object.__hash__

    backend = Backend(None, options_of(config), True if dynamic else None)
    backend.__name__ = "inductor"  # torch.compile's name for it
    return backend


def timed_steps(torch, step, fn, count, cpu=None):
    """`count` steps of `fn`, each timed alone with CUDA events (ms); where
    `cpu` is a list, each call's CPU time (ms, perf_counter from the call
    to its return: the launches) is appended to it."""
    times = []
    for _ in range(count):
        torch.cuda.synchronize()
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        started = time.perf_counter()
        step(fn)
        if cpu is not None:
            cpu.append((time.perf_counter() - started) * 1e3)
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    return times


PROFILE_STEPS = 5
PROFILE_KERNELS = 40  # the kernels of most GPU time kept per configuration
PROFILE_FUNCTIONS = 25  # the Python functions of most own time kept


def step_profile(torch, step, fn, steps):
    """Where `steps` steps of `fn` spend their time, per step:
    cpu_profiles' numbers, then kernel_profile's."""
    return {**cpu_profiles(torch, step, {"": fn}, steps)[""],
            **kernel_profile(torch, step, fn, steps)}


def timing_order(slots):
    """One cycle of --step-time's steps, [(slot, timed)]: every slot once,
    timed, in an order where default's code never runs right after itself
    (default after the control or the control after default, the cycle
    repeated): a step that follows a step of the same compiled code runs
    warmer (run L4 in docs/gpu.md, the slots in a fixed cycle default,
    memplan, control: mobilenet_v3_large's default 2.67 ms a call after
    the control, the control 2.73 after memplan's). So the other slots
    sit between the two: [default, half of them, control, the rest], or,
    with one other slot, [default, it, control, it untimed]. Any other
    slots (no control, or no other): as given, each timed."""
    others = [s for s in slots if s not in ("default", CONTROL)]
    if "default" not in slots or CONTROL not in slots or not others:
        return [(slot, True) for slot in slots]
    half = (len(others) + 1) // 2
    rest = [(slot, True) for slot in others[half:]] or [(others[0], False)]
    return [("default", True), *[(slot, True) for slot in others[:half]],
            (CONTROL, True), *rest]


def cpu_profiles(torch, step, fns, steps):
    """The CPU side of `steps` steps of each of `fns` (slot -> compiled
    function), per step, {slot: numbers}: the CPU time of the call
    (perf_counter, the step's launches: close to the GPU time when launch
    bound) and the GPU time (CUDA events), medians; over `steps` more steps
    under cProfile, the Python functions of most own time
    (python_functions); over `steps` more under line_costs, the wrapper
    code's lines by kind (wrapper_lines). Each part runs the slots step by
    step in turn: a process times its calls slower after any profiler or
    tracer has run in it (run L3 in docs/gpu.md, one slot profiled after
    another: default's own code 3.48 ms a call first, 5.14 last), so each
    part's slots sample the same moments, and the times come first. Run
    every slot's before any kernel_profile. The slots run in timing_order.
    """
    import cProfile
    import pstats
    cpu = {slot: [] for slot in fns}
    gpu = {slot: [] for slot in fns}
    order = timing_order(list(fns))
    for _ in range(steps):
        for slot, timed in order:
            if timed:
                gpu[slot] += timed_steps(torch, step, fns[slot], 1, cpu[slot])
            else:
                step(fns[slot])
    profilers = {slot: cProfile.Profile() for slot in fns}
    for _ in range(steps):
        for slot, timed in order:
            if timed:
                profilers[slot].enable()
            step(fns[slot])
            torch.cuda.synchronize()
            if timed:
                profilers[slot].disable()
    lines = line_costs(torch, step, fns, steps)
    return {slot: {"cpu_ms": sorted(cpu[slot])[steps // 2],
                   "gpu_ms": sorted(gpu[slot])[steps // 2],
                   "python_us_calls": python_functions(
                       pstats.Stats(profilers[slot]).stats, steps),
                   "wrapper_lines": lines[slot]} for slot in fns}


def kernel_profile(torch, step, fn, steps):
    """Under torch.profiler, over `steps` steps of `fn`: the GPU time of
    every CUDA kernel (microseconds and launches per step, by kernel name),
    their sum ("busy") and the PROFILE_KERNELS kernels of most time."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step(fn)
        torch.cuda.synchronize()
    kernels = {}
    for event in prof.key_averages():
        if event.device_type == DeviceType.CUDA and \
                event.self_device_time_total > 0:
            kernels[event.key] = [
                round(event.self_device_time_total / steps, 1),
                round(event.count / steps, 2)]
    top = sorted(kernels.items(), key=lambda item: -item[1][0])
    return {"kernel_busy_ms": round(sum(k[0] for k in kernels.values())
                                    / 1e3, 3),
            "kernel_launches": round(sum(k[1] for k in kernels.values())),
            "kernels_us_launches": dict(top[:PROFILE_KERNELS])}


# Kinds of a wrapper code line, by its text (line_kind_of): the first whose
# test holds.
WRAPPER_LINE_KINDS = (
    ("pool view", lambda t: "alloc_from_pool(" in t or ".view(torch." in t),
    ("allocation", lambda t: "empty_strided" in t or "torch.empty(" in t),
    ("view", lambda t: re.match(r"\w+ = reinterpret_tensor\(", t)),
    ("rename", lambda t: re.match(r"\w+ = \w+(; del \w+)?\s*(#.*)?$", t)),
    ("del", lambda t: t.startswith("del ")),
    ("triton", lambda t: ".run(" in t),
    ("extern", lambda t: "extern_kernels." in t or "torch.ops." in t),
    ("assert", lambda t: t.startswith("assert_")),
    ("other", lambda t: True),
)


def line_kind_of(text):
    """The WRAPPER_LINE_KINDS name of one line of wrapper code."""
    text = text.strip()
    for kind, test in WRAPPER_LINE_KINDS:
        if test(text):
            return kind
    return "other"


def line_costs(torch, step, fns, steps):
    """Where the compiled graphs' wrapper code spends a step's CPU time,
    for each of `fns` (slot -> compiled function), {slot: {kind: [us per
    step, lines per step]}}: over `steps` steps of each (the slots in
    timing_order) under sys.settrace, the time from each line of a wrapper
    module's call() (a frame named call whose globals hold
    reinterpret_tensor and assert_size_stride, as Inductor's output code's
    do) to its next line, summed per kind of line (line_kind_of). The
    tracer's own cost (about a microsecond a line, and a little for each
    Python call a line makes) is in every line alike, so compare lines of
    a kind across configurations, not against untraced times."""
    import linecache
    import sys
    clock = time.perf_counter
    totals = {slot: {} for slot in fns}
    kinds = {}
    last = [None, 0.0, None]  # kind of the line running, its start, slot

    def close(now):
        if last[0] is not None:
            total = totals[last[2]].setdefault(last[0], [0.0, 0])
            total[0] += now - last[1]
            total[1] += 1
        last[0] = None

    def local(frame, event, arg):
        now = clock()
        close(now)
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            kind = kinds.get(key)
            if kind is None:
                kind = kinds[key] = line_kind_of(linecache.getline(*key))
            last[0] = kind
        last[1] = clock()
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "call" and all(
                name in frame.f_globals for name in
                ("reinterpret_tensor", "assert_size_stride")):
            return local
        return None

    for _ in range(steps):
        for slot, timed in timing_order(list(fns)):
            if not timed:
                step(fns[slot])
                continue
            last[2] = slot
            sys.settrace(tracer)
            try:
                step(fns[slot])
            finally:
                sys.settrace(None)
                close(clock())
            torch.cuda.synchronize()
    return {slot: {kind: [round(total * 1e6 / steps, 1),
                          round(count / steps, 2)]
                   for kind, (total, count) in sorted(totals[slot].items())}
            for slot in fns}


def python_functions(stats, steps):
    """cProfile's raw stats ({(file, line, name): (primitive calls, calls,
    own seconds, cumulative seconds, callers)}) as {"name (file:line)":
    [own microseconds, calls] per step}, the PROFILE_FUNCTIONS of most own
    time (cProfile's table prints milliseconds: too coarse for calls of a
    few microseconds)."""
    rows = sorted(stats.items(), key=lambda item: -item[1][2])
    return {f"{name} ({os.path.basename(file)}:{line})": [
        round(own * 1e6 / steps, 1), round(calls / steps, 2)]
        for (file, line, name), (_, calls, own, _, _) in
        rows[:PROFILE_FUNCTIONS]}


def compiled_graphs(torch):
    """Records every compiled graph (Inductor's CompiledFxGraph) as it is
    first called: returns (graphs, restore), graphs a dict id(graph) ->
    graph in call order, restore() undoing the patch of
    CompiledFxGraph.__call__. A graph's wrapper code is its source_code
    (wrapper_codes)."""
    from torch._inductor.output_code import CompiledFxGraph
    graphs = {}
    original = CompiledFxGraph.__call__

    def call(graph, inputs):
        graphs.setdefault(id(graph), graph)
        return original(graph, inputs)

    CompiledFxGraph.__call__ = call

    def restore():
        CompiledFxGraph.__call__ = original
    return graphs, restore


def save_codes(out, config, graphs):
    """Writes the wrapper code of each graph compiled_graphs recorded
    (wrapper_codes) to OUT.CONFIG.K.py, `out` a worker's record, its
    suffix (.json) dropped, K the graph's place in call order."""
    stem = os.path.splitext(out)[0]
    for k, code in enumerate(wrapper_codes(graphs)):
        with open(f"{stem}.{config}.{k}.py", "w") as f:
            f.write(code)


def wrapper_codes(graphs):
    """The wrapper code of each graph compiled_graphs recorded that has
    one, in call order."""
    return [code for code in (getattr(graph, "source_code", None)
                              for graph in graphs.values())
            if code is not None]


def autotuned_config(autotuner):
    """The Triton configuration a CachingAutotuner launches and how many it
    still holds ("XBLOCK: 2, R0_BLOCK: 256, num_warps: 2, ... of 0": none
    once autotuning at its first call has chosen): the same kernel source
    can run another configuration in another process or another
    configuration's graph (docs/gpu.md, run P3)."""
    launchers = getattr(autotuner, "launchers", None) or []
    configs = getattr(autotuner, "configs", None) or []
    return ", ".join(str(launcher.config) for launcher in launchers) + \
        f" of {len(configs)}"


def kernel_configs(graphs):
    """Per Triton kernel of the compiled graphs (compiled_graphs, in call
    order), "<k>.<kernel name>" (k: the graph's index) -> [its
    autotuned_config, id() of the kernel object]: two configurations'
    graphs with the same object run one autotuned kernel. The kernels are
    the CachingAutotuner objects of the wrapper module's globals: those of
    the graph's current_callable, or of a function it wraps (Inductor's
    input-alignment wrapper holds the module's call in its closure)."""
    kernels = {}
    for k, graph in enumerate(graphs.values()):
        for namespace in wrapped_globals(
                getattr(graph, "current_callable", None)):
            for name, value in namespace.items():
                if type(value).__name__ == "CachingAutotuner":
                    kernels[f"{k}.{name}"] = [autotuned_config(value),
                                              id(value)]
    return kernels


def wrapped_globals(fn, depth=4):
    """The __globals__ of `fn` and of the functions it wraps (a method's
    function, __wrapped__, callables in its closure), `depth` levels deep
    at most, each once."""
    found, seen, level = [], set(), [fn]
    for _ in range(depth):
        following = []
        for f in level:
            f = getattr(f, "__func__", f)
            if f is None or id(f) in seen:
                continue
            seen.add(id(f))
            namespace = getattr(f, "__globals__", None)
            if namespace is not None and all(namespace is not n
                                             for n in found):
                found.append(namespace)
            following.append(getattr(f, "__wrapped__", None))
            following += [cell.cell_contents
                          for cell in getattr(f, "__closure__", None) or ()
                          if callable(getattr(cell, "cell_contents", None))]
        level = following
    return found


def kernels_against_default(configs):
    """From a --step-time worker's metrics (configuration -> its record,
    each with kernel_configs' "triton_configs"), per configuration other
    than default: {"same_object": kernels that are default's own objects,
    "other_config": names of those whose autotuned configuration differs
    from default's kernel of the same name, "kernels": how many}."""
    default = configs.get("default", {}).get("triton_configs")
    if default is None:
        return {}
    compared = {}
    for config, m in configs.items():
        ours = m.get("triton_configs")
        if config == "default" or ours is None:
            continue
        compared[config] = {
            "kernels": len(ours),
            "same_object": sum(1 for name, (_, obj) in ours.items()
                               if name in default and default[name][1] == obj),
            "other_config": sorted(name for name, (chosen, _) in ours.items()
                                   if name in default
                                   and default[name][0] != chosen)}
    return compared


def arrive_at_barrier(args, wait):
    """--step-time: marks this worker as arrived at its wave's barrier
    (a file in the folder args.barrier) and, with `wait`, waits until
    args.barrier_count workers have arrived or BARRIER_SECONDS passed.
    Returns the seconds waited."""
    if not args.barrier:
        return 0.0
    os.makedirs(args.barrier, exist_ok=True)
    open(os.path.join(args.barrier, os.path.basename(args.out)), "w").close()
    begin = time.time()
    while wait and len(os.listdir(args.barrier)) < args.barrier_count and \
            time.time() - begin < BARRIER_SECONDS:
        time.sleep(0.2)
    return round(time.time() - begin, 1)


def run_step_time_worker(args):
    """--step-time: the configurations of args.config (a comma list) of one
    (model, mode) in this one process, so that they share its CPU speed
    (docs/gpu.md, "Step time"): each compiled on the same model with a
    backend of its own (backend_of) and run twice (compile, autotuning),
    one after another; then, once every worker of its wave has compiled
    (arrive_at_barrier), alone on the GPU (the exclusive lock), ROUNDS
    rounds in which each configuration and the control (CONTROL: default's
    code again, in a slot of its own) runs a warm-up step, then its share
    of args.steps timed ones (CUDA events) one step at a time, the slots
    alternating, the order rotated every round;
    recompiling is an error then (torch.compiler.set_stance
    "fail_on_recompile"). Also compares, in this process, every
    configuration's outputs and gradients with eager's (eager_problems)
    and each memplan configuration's and default's with Inductor's own
    pools'. With args.profile, then profiles each configuration
    (step_profile, alone on the GPU); with args.profile or args.save_code
    writes each compiled graph's wrapper code beside args.out (save_codes).
    Writes its record to args.out."""
    gpu_lock = open(args.gpu_lock, "a+")
    fcntl.flock(gpu_lock, fcntl.LOCK_SH)  # before any GPU work
    import torch
    import memplan.inductor as hook
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    training = args.mode == "training"
    configs = args.config.split(",")
    worker = {"model": args.model, "mode": args.mode, "configs": configs,
              "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "metrics": {}, "problems": []}
    model, inputs, loss_of, forward, dynamic = build(torch, args.model,
                                                     args.mode)
    params = [p for p in model.parameters() if p.requires_grad]
    step = stepper(torch, model, inputs, loss_of, params, training)
    fns, results = {}, {}
    eager = step_results(torch, step(forward), params, training)
    compiled, restore = compiled_graphs(torch)
    graphs_of = {}
    for config in configs:
        m = worker["metrics"][config] = {}
        compiled.clear()
        try:
            apply_config(torch, hook, args.target, config, training)
            fn = torch.compile(forward,
                               backend=backend_of(torch, config, dynamic),
                               dynamic=True if dynamic else None)
            counters = torch._dynamo.utils.counters["stats"]
            graphs = counters["unique_graphs"]
            begin = time.time()
            step(fn)
            torch.cuda.synchronize()
            m["compile_seconds"] = round(time.time() - begin, 2)
            results[config] = step_results(torch, step(fn), params, training)
            # Dynamo's graphs compiled for this configuration: none would
            # mean another configuration's code ran (see backend_of).
            m["dynamo_graphs"] = counters["unique_graphs"] - graphs
            if not m["dynamo_graphs"]:
                worker["problems"].append(f"{config}: nothing compiled")
            if config.startswith("memplan_"):
                hook_stats(hook, m, worker["problems"], f"{config}: ")
            fns[config] = fn
            graphs_of[config] = dict(compiled)
            if args.profile or args.save_code:
                save_codes(args.out, config, compiled)
        except Exception as error:  # reported; the others go on
            import traceback
            traceback.print_exc()
            m["error"] = f"{type(error).__name__}: {error}"
            worker["problems"].append(f"{config}: {m['error']}")
        finally:
            release_config(torch, hook)
    for config, ours in results.items():
        worker["metrics"][config]["error_vs_eager"] = relative_error(
            torch, ours, eager)
    worker["problems"] += eager_problems(worker["metrics"], list(results))
    reference = results.get("inductor_pools")
    for config, ours in results.items():
        if reference is None or config == "inductor_pools":
            continue
        m = worker["metrics"][config]
        m["bitwise_equal_to_inductor_pools"] = bitwise_equal(torch, ours,
                                                             reference)
        m["error_vs_inductor_pools"] = relative_error(torch, ours, reference)
    del results, reference, eager
    restore()  # no timed step pays for the recording

    # Every worker of the wave compiled (or gone) before any times a step.
    worker["barrier_wait_seconds"] = arrive_at_barrier(args, wait=True)
    slots = list(fns)
    if "default" in fns:
        fns[CONTROL] = fns["default"]
        slots.append(CONTROL)
        worker["metrics"][CONTROL] = {}
    times = {slot: [] for slot in slots}
    cpu_times = {slot: [] for slot in slots}
    torch.compiler.set_stance("fail_on_recompile")
    fcntl.flock(gpu_lock, fcntl.LOCK_UN)
    rounds = min(ROUNDS, args.steps)

    def run_slot(slot, timed):
        """One step of `slot`, timed or (a warm-up) not."""
        if slot not in fns:
            return  # failed earlier
        try:
            if timed:
                times[slot] += timed_steps(torch, step, fns[slot], 1,
                                           cpu_times[slot])
            else:
                step(fns[slot])
        except Exception as error:  # a recompile, say: reported
            del fns[slot]
            m = worker["metrics"][slot]
            m["error"] = f"timing: {type(error).__name__}: {error}"
            worker["problems"].append(f"{slot}: {m['error']}")

    # Each round: a warm-up step of every slot, then its share of the
    # timed steps one step at a time, the slots alternating in
    # timing_order (rotated each round), so that every slot samples the
    # same moments of the machine: in run X5 a row's step time fell by a
    # third within a round, which favoured whichever slot a round timed
    # last.
    cycle = timing_order(slots)
    for r in range(rounds):
        fcntl.flock(gpu_lock, fcntl.LOCK_EX)
        shift = r % len(cycle) if cycle else 0
        order = cycle[shift:] + cycle[:shift]
        for slot in dict.fromkeys(slot for slot, _ in order):
            run_slot(slot, timed=False)
        for _ in range(args.steps * (r + 1) // rounds
                       - args.steps * r // rounds):
            for slot, timed in order:
                run_slot(slot, timed=timed)
        fcntl.flock(gpu_lock, fcntl.LOCK_UN)
    if args.profile:
        # Every slot's CPU profile (the control's too), the slots in
        # turn, then every configuration's kernels (see cpu_profiles).
        fcntl.flock(gpu_lock, fcntl.LOCK_EX)
        for slot, profile in cpu_profiles(torch, step, fns,
                                          PROFILE_STEPS).items():
            worker["metrics"][slot]["profile"] = profile
        for config in configs:
            if config in fns:
                worker["metrics"][config]["profile"].update(kernel_profile(
                    torch, step, fns[config], PROFILE_STEPS))
        fcntl.flock(gpu_lock, fcntl.LOCK_UN)
    for slot in fns:
        m = worker["metrics"][slot]
        m["step_ms_each"] = [round(t, 3) for t in times[slot]]  # in order
        ordered = sorted(times[slot])
        m["step_ms"] = ordered[len(ordered) // 2]
        if cpu_times[slot]:
            ordered = sorted(cpu_times[slot])
            m["step_cpu_ms"] = round(ordered[len(ordered) // 2], 3)
    # The Triton configuration each kernel runs (autotuned by now), and
    # whether a configuration's graphs share default's kernel objects or
    # run another configuration of the same kernel (kernels_against_default).
    for config, recorded in graphs_of.items():
        worker["metrics"][config]["triton_configs"] = kernel_configs(recorded)
    worker["kernels_against_default"] = kernels_against_default(
        worker["metrics"])
    with open(args.out, "w") as f:
        json.dump(worker, f, indent=1)


def run_worker(args):
    """One configuration of one (model, mode): see the module's doc. Writes
    its record (args.out) and its step's outputs and gradients (.pt beside
    it) for the driver's checks."""
    gpu_lock = open(args.gpu_lock, "a+")
    fcntl.flock(gpu_lock, fcntl.LOCK_SH)  # before any GPU work: see the doc
    import torch
    import memplan.inductor as hook
    from google.protobuf import json_format

    # No compiled-graph caches: the configuration compiles (and the hook
    # plans) every graph; Triton's kernel cache stays.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    training = args.mode == "training"
    config = args.config
    worker = {"model": args.model, "mode": args.mode, "config": config,
              "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "metrics": {}, "problems": []}
    m = worker["metrics"]
    model, inputs, loss_of, forward, dynamic = build(torch, args.model,
                                                     args.mode)
    params = [p for p in model.parameters() if p.requires_grad]
    calls = GraphCalls(torch, snapshots=args.entry_snapshots)
    traces = LineTraces(torch) if args.trace_lines else None

    step = stepper(torch, model, inputs, loss_of, params, training)

    def results_of(out):
        return step_results(torch, out, params, training)

    def write():
        with open(args.out, "w") as f:
            json.dump(worker, f, indent=1)

    eager = results_of(step(forward))
    try:
        shadowed = config == "default" and args.default_shadow
        apply_config(torch, hook, args.target, config, training, shadowed)
        fn = torch.compile(forward, options=options_of(config),
                           dynamic=True if dynamic else None)
        torch.cuda.synchronize()
        # --save-code: the graphs as they are first called (the patch
        # undone before the measured step).
        codes = compiled_graphs(torch) if args.save_code else None
        if args.first_steps_history:
            torch.cuda.memory._record_memory_history(
                max_entries=FIRST_STEPS_ENTRIES)
        begin = time.time()
        out = step(fn)
        first_steps = [len(first_step_trace(torch))]
        if codes is not None:
            codes[1]()
            save_codes(args.out, config, codes[0])
        if args.entry_snapshots:
            # Allocation sites for the entry snapshots' allocated blocks
            # (allocation_site) and each graph's allocator_trace, from the
            # measured steps on.
            torch.cuda.memory._record_memory_history(
                max_entries=HISTORY_ENTRIES)
        torch.cuda.synchronize()
        m["compile_seconds"] = round(time.time() - begin, 2)
        out = step(fn)  # once more: autotuning done
        if args.first_steps_history:
            worker["first_segments"] = first_segments(
                torch, first_steps + [len(first_step_trace(torch))])
        results = results_of(out)
        if config == "inductor_pools":
            # Run to run: kernels with atomics (attention's backward)
            # differ from themselves; say by how much.
            again = results_of(step(fn))
            m["bitwise_run_to_run"] = bitwise_equal(torch, again, results)
            m["run_to_run_error"] = relative_error(torch, again, results)
        if config.startswith("memplan_") or shadowed:
            stats = hook_stats(hook, m, worker["problems"])
            worker["hook_graphs"] = [{
                "source": g["source"], "graph_id": g.get("graph_id"),
                "phase": g.get("phase"), "planner": g.get("planner"),
                "predicted_peak_bytes": g.get("predicted_peak_bytes"),
                "baseline_peak_bytes": g.get("baseline_peak_bytes"),
                "predicted_reserved_bytes": g.get("predicted_reserved_bytes"),
                "baseline_reserved_bytes": g.get("baseline_reserved_bytes"),
                "cached_blocks": g.get("cached_blocks"),
                "cached_block_bytes": g.get("cached_block_bytes"),
                "predicted_allocations": g.get("predicted_allocations"),
                "baseline_allocations": g.get("baseline_allocations"),
                "total_pool_bytes": g.get("total_pool_bytes"),
                "pools": len(g.get("pools") or []),
                "reservations": len(g.get("segment_reservations") or []),
                "buffer_groups": g.get("buffer_groups"),
                "workspace_probe": g.get("workspace_probe"),
                "request": json_format.MessageToDict(
                    g["request"], preserving_proto_field_name=True)
                if g.get("request") is not None else None,
            } for g in stats["graphs"]]
        release_config(torch, hook)
        # One step measured, after empty_cache.
        del out
        import gc
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        # The step's start: after the previous step's gradients are set to
        # None (their segments stay cached, as in a training loop that
        # empties the cache between steps). Read before that, the start
        # counted the gradients as the caching allocator charged them,
        # which differs by configuration (one block per gradient or pools
        # of them) while every graph's memory was the same (run Q3).
        if training:
            for param in params:
                param.grad = None
        start_allocated = torch.cuda.memory_allocated()
        start_reserved = torch.cuda.memory_reserved()
        calls_before = torch.cuda.memory_stats().get(
            "allocation.all.allocated", 0)
        segments_before = torch.cuda.memory_stats().get(
            "segment.all.allocated", 0)
        torch.cuda.reset_peak_memory_stats()
        out = step(fn)
        torch.cuda.synchronize()
        m["peak_allocated"] = torch.cuda.max_memory_allocated() \
            - start_allocated
        m["peak_reserved"] = torch.cuda.max_memory_reserved() - start_reserved
        # The same peak above the bytes in use at the start (not its
        # reserved bytes): a training step starts with the previous step's
        # gradient segments cached, which are the configuration's own (one
        # block per gradient, or pools of them) and differ between
        # configurations while the bytes in use do not; this counts them.
        m["peak_reserved_over_live"] = (torch.cuda.max_memory_reserved()
                                        - start_allocated)
        m["start_reserved"] = start_reserved
        m["start_allocated"] = start_allocated
        m["allocator_calls"] = torch.cuda.memory_stats().get(
            "allocation.all.allocated", 0) - calls_before
        if training:
            m.update(gradient_memory(torch, params, start_allocated))
        del out
        # What the reserved peak is made of: the caching allocator's
        # segments (cudaMalloc'd blocks) after the step, in MiB, largest
        # first, and how many of them the step added.
        snapshot = torch.cuda.memory_snapshot()
        segments = sorted((s["total_size"] for s in snapshot), reverse=True)
        m["segments_mib"] = [round(s / 2**20, 1) for s in segments]
        # The same of the segments outside the default pool (the hook's
        # private pool: segment_pool_id other than (0, 0)), largest first.
        m["private_segments_mib"] = sorted(
            (round(s["total_size"] / 2**20, 1) for s in snapshot
             if tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0)),
            reverse=True)
        m["segments_added"] = torch.cuda.memory_stats().get(
            "segment.all.allocated", 0) - segments_before
        # One step with every graph's peak above its entry, after
        # empty_cache too, so that each graph's reserved growth is its own
        # from the step's cold cache (as the service's allocator model
        # starts; before 2026-11-27 this step ran warm and read 0).
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        calls.calls = []
        torch.cuda.reset_peak_memory_stats()
        worker["graph_step_start"] = torch.cuda.memory_allocated()
        calls.measuring = True
        if args.entry_snapshots:  # the first graph's trace_before_entry
            calls.last_return = torch.cuda.memory._snapshot()
        out = step(fn)
        calls.measuring = False
        torch.cuda.synchronize()
        if args.entry_snapshots and calls.last_return is not None:
            # After the last graph returned: autograd's accumulation, ...
            worker["graph_step_tail_trace"] = allocator_trace(
                calls.last_return, torch.cuda.memory._snapshot(),
                torch.cuda.current_device())
        # The most allocated since the last graph's entry (absolute): after
        # the last graph returned, autograd's accumulation and the rest.
        worker["graph_step_tail_peak"] = torch.cuda.max_memory_allocated()
        del out
        worker["graph_calls"] = calls.calls
        if args.trace_lines:
            gc.collect()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            traces.tracing = True
            step(fn)  # the traced modules' first launches (benchmarking)
            traces.calls = []
            out = step(fn)
            traces.tracing = False
            del out
            for trace in traces.calls:
                peak, statement, inside = line_trace_peak(trace["rows"])
                trace.update(peak=peak, peak_statement=statement,
                             peak_inside_statement=inside)
            worker["line_traces"] = traces.calls
        # An inference loop's steady state: from empty_cache, LOOP_STEPS
        # steps, each output kept until the next step returns (as `out =
        # model(x)` in a loop); the reserved peak above the loop's start.
        if not training:
            gc.collect()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            loop_start = torch.cuda.memory_reserved()
            torch.cuda.reset_peak_memory_stats()
            out = None
            for _ in range(LOOP_STEPS):
                out = step(fn)
            torch.cuda.synchronize()
            m["loop_peak_reserved"] = (torch.cuda.max_memory_reserved()
                                       - loop_start)
            del out
        m["error_vs_eager"] = relative_error(torch, results, eager)
        torch.save(results, args.out[:-len(".json")] + ".pt")
    except Exception as error:  # reported; the driver goes on
        import traceback
        traceback.print_exc()
        m["error"] = f"{type(error).__name__}: {error}"
        worker["problems"].append(m["error"])
        write()
        return

    # Step time: alone on the GPU (the exclusive lock), in rounds of a
    # warm-up step and `steps / ROUNDS` timed ones, so that the wave's
    # configurations interleave and no timed step pays for the switch from
    # another process's context; CUDA events, median.
    fcntl.flock(gpu_lock, fcntl.LOCK_UN)
    times = []
    rounds = min(ROUNDS, args.steps)
    for r in range(rounds):
        fcntl.flock(gpu_lock, fcntl.LOCK_EX)
        step(fn)
        times += timed_steps(torch, step, fn, args.steps * (r + 1) // rounds
                             - args.steps * r // rounds)
        fcntl.flock(gpu_lock, fcntl.LOCK_UN)
    m["step_ms_each"] = [round(t, 3) for t in times]  # in order, rounds
    times.sort()
    m["step_ms"] = times[len(times) // 2]
    write()


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.worker and arguments.step_time:
        try:
            run_step_time_worker(arguments)
        finally:  # a worker that failed early must not hold the others
            arrive_at_barrier(arguments, wait=False)
    elif arguments.worker:
        run_worker(arguments)
    else:
        run_driver(arguments)
