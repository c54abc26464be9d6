"""The GPU model suite: what memplan does to torch.compile's memory.

    python3 tests/gpu/suite.py --server BIN [--server-libs DIR] --out DIR \\
        [--models resnet18,gpt2,...] [--modes inference,training] \\
        [--configs default,inductor_pools,...] [--gpus N]

(From a folder that client/python/examples/stage_device.sh made, on a
machine with a GPU, torch, torchvision, transformers and grpcio:
`bash CARRY/gpu/run_suite.sh --out DIR ...`.) One driver process starts memplan-server and runs one worker
process per (model, mode), one at a time per GPU (CUDA_VISIBLE_DEVICES),
so that each measures alone. A worker compiles its model once per
configuration:

  default          torch.compile as shipped: Inductor's reuse pass
  inductor_pools   torch._inductor.config.memory_planning with Inductor's
                   own pools (intermediates); for training, with Inductor's
                   training-graph switch forced on
  memplan_<mode>   memory planning through memplan.inductor (training=True:
                   forward and backward graphs planned by the service), pool
                   mode <mode> (intermediates, combined, none), strategy
                   optimal: the pools of least bytes
  memplan_partition  the same with strategy auto, which partitions the
                   pools against the whole graph's peak

and measures, for one compiled step (training: forward + loss.backward(),
gradients set to None before) after compiling and torch.cuda.empty_cache():
peak allocated and peak reserved above the step's start, allocator calls
(memory_stats' allocation.all.allocated), step time (CUDA events, median of
20 steps, configurations interleaved), compile time (the first step), and,
per compiled graph (CompiledFxGraph.__call__ wrapped: peak statistics reset
at entry, read at return), the peak allocated above the graph's entry beside
the service's predicted_peak_bytes and baseline_peak_bytes for that graph.
It checks that each memplan configuration's outputs and gradients equal
Inductor's own pools' (bitwise) and eager's (within tolerance).

The driver writes DIR/results.json (every worker's record), DIR/table.md
(the tables) and DIR/captured.jsonl.gz (per graph planned by the service:
the request the hook sent and the peaks the GPU measured: the test data of
tests/server/whole_graph_gpu_test.cc).
"""

import argparse
import gzip
import json
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
# which partitions the pools of a whole graph (issue 21).
CONFIGS = {
    "default": (None, None),
    "inductor_pools": (None, "intermediates"),
    "memplan_intermediates": ("optimal", "intermediates"),
    "memplan_combined": ("optimal", "combined"),
    "memplan_none": ("optimal", "none"),
    "memplan_partition": ("auto", "intermediates"),
}


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
    parser.add_argument("--steps", type=int, default=20,
                        help="timed steps per configuration")
    parser.add_argument("--worker", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
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


def gpu_count():
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return max(1, len([l for l in out.stdout.splitlines() if l.strip()]))


def run_driver(args):
    os.makedirs(args.out, exist_ok=True)
    server = Server(args.server, args.server_libs,
                    os.path.join(args.out, "server.log"))
    jobs = queue.Queue()
    for mode in args.modes.split(","):
        for model in args.models.split(","):
            if model in DYNAMIC and mode != "inference":
                continue
            jobs.put((model, mode))
    gpus = args.gpus or gpu_count()
    results, lock = [], threading.Lock()
    started = time.time()

    def gpu_loop(gpu):
        while True:
            try:
                model, mode = jobs.get_nowait()
            except queue.Empty:
                return
            out = os.path.join(args.out, f"{model}.{mode}.json")
            log = os.path.join(args.out, f"{model}.{mode}.log")
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu),
                       PYTHONUNBUFFERED="1")
            begin = time.time()
            command = [sys.executable, __file__, "--worker",
                       "--target", server.target, "--model", model,
                       "--mode", mode, "--configs", args.configs,
                       "--steps", str(args.steps), "--out", out]
            with open(log, "w") as log_file:
                try:
                    code = subprocess.run(
                        command, env=env, stdout=log_file,
                        stderr=subprocess.STDOUT,
                        timeout=args.worker_timeout).returncode
                except subprocess.TimeoutExpired:
                    code = "timeout"
            record = {"model": model, "mode": mode, "exit": code}
            if os.path.exists(out):
                with open(out) as f:
                    record = json.load(f)
                record["exit"] = code
            record["worker_seconds"] = round(time.time() - begin, 1)
            with lock:
                results.append(record)
                write_results(args, results)
            print(f"[gpu {gpu}] {model} {mode}: exit {code}, "
                  f"{record['worker_seconds']} s", flush=True)

    threads = [threading.Thread(target=gpu_loop, args=(g,)) for g in
               range(gpus)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    server.stop()
    table = write_results(args, results)
    print(table)
    print(f"suite: {len(results)} workers in {time.time() - started:.0f} s "
          f"on {gpus} GPU(s)")


def write_results(args, results):
    """Writes results.json, captured.jsonl.gz and table.md for the workers
    done so far (so a run cut short still leaves them); returns the
    table."""
    results = sorted(results, key=lambda r: (
        r["mode"], MODELS.index(r["model"]) if r["model"] in MODELS else 99))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    captured = [graph for r in results for graph in r.get("captured", [])]
    with gzip.open(os.path.join(args.out, "captured.jsonl.gz"), "wt") as f:
        for graph in captured:
            f.write(json.dumps(graph, sort_keys=True) + "\n")
    table = markdown(results, args.configs.split(","))
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    return table


def mib(value):
    return "" if value is None else f"{value / 2**20:.1f}"


def markdown(results, configs):
    """The suite's tables: per model and mode, each configuration's peak
    allocated / peak reserved (MiB above the step's start), allocator
    calls, step time; then per graph, measured vs predicted peaks."""
    device = next((r.get("device") for r in results if r.get("device")), "?")
    torch_version = next((r.get("torch") for r in results if r.get("torch")),
                         "?")
    lines = [f"GPU: {device}; torch {torch_version}", ""]
    header = "| model | mode | " + " | ".join(
        f"{c}: alloc / reserved MiB, calls, ms" for c in configs) + " |"
    lines += [header, "| --- | --- |" + " --- |" * len(configs)]
    for r in results:
        cells = []
        for c in configs:
            m = r.get("configs", {}).get(c)
            if not m or "error" in m:
                cells.append("error" if m else "")
                continue
            cells.append(f"{mib(m['peak_allocated'])} / "
                         f"{mib(m['peak_reserved'])}, {m['allocator_calls']}, "
                         f"{m.get('step_ms', 0):.2f}")
        lines.append(f"| {r['model']} | {r['mode']} | " + " | ".join(cells)
                     + " |")
    lines += ["", "Per compiled graph (MiB above the graph's entry): "
              "default measured / service baseline; memplan measured / "
              "service predicted, per pool mode", ""]
    memplan = [c for c in configs if c.startswith("memplan_")]
    lines += ["| model | mode | graph | default: measured / baseline | "
              + " | ".join(f"{c}: measured / predicted" for c in memplan)
              + " |", "| --- | --- | --- | --- |" + " --- |" * len(memplan)]
    for r in results:
        for g in r.get("graphs", []):
            cells = [f"{mib(g.get('default_measured'))} / "
                     f"{mib(g.get('baseline'))}"]
            for c in memplan:
                m = g.get(c, {})
                cells.append(f"{mib(m.get('measured'))} / "
                             f"{mib(m.get('predicted'))}")
            lines.append(f"| {r['model']} | {r['mode']} | {g['index']} "
                         f"{g.get('phase', '')} | " + " | ".join(cells) + " |")
    lines += ["", "Checks", ""]
    for r in results:
        problems = r.get("problems", [])
        if r.get("exit"):
            problems = [f"worker exit {r['exit']}"] + problems
        lines.append(f"- {r['model']} {r['mode']}: "
                     + ("; ".join(problems) if problems else "ok"))
    return "\n".join(lines) + "\n"


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


class GraphCalls:
    """Wraps CompiledFxGraph.__call__ (every compiled forward, backward and
    inference graph): while `measuring`, records per call the peak allocated
    above the graph's entry (peak statistics reset at entry, read at
    return)."""

    def __init__(self, torch):
        from torch._inductor.output_code import CompiledFxGraph
        self.torch = torch
        self.measuring = False
        self.calls = []
        original = CompiledFxGraph.__call__
        graph_calls = self

        def call(graph, inputs):
            if not graph_calls.measuring:
                return original(graph, inputs)
            cuda = graph_calls.torch.cuda
            cuda.reset_peak_memory_stats()
            base = cuda.memory_allocated()
            try:
                return original(graph, inputs)
            finally:
                kwargs = getattr(graph, "fx_kwargs", {}) or {}
                graph_calls.calls.append({
                    "graph_id": kwargs.get("graph_id"),
                    "phase": "backward" if kwargs.get("is_backward") else (
                        "inference" if kwargs.get("is_inference")
                        else "forward"),
                    "peak": cuda.max_memory_allocated() - base})

        CompiledFxGraph.__call__ = call


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
    """torch.compile's options for `config`. Dynamo takes two compiles with
    equal options for one backend and serves one's graphs to the other
    (a model with graph breaks compiles its resumed frames once), so each
    configuration's options differ, in compile_threads, which changes no
    generated code."""
    _, pool_mode = CONFIGS[config]
    options = {"compile_threads": 8 + list(CONFIGS).index(config)}
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
    """The largest relative L2 error over the tensors: ||a - e|| / ||e||
    (absolute where e is 0)."""
    worst = 0.0
    for a, e in zip(actual, expected):
        norm = float(e.norm()) or 1.0
        worst = max(worst, float((a - e).norm()) / norm)
    return worst


def run_worker(args):
    import torch
    import memplan.inductor as hook
    from google.protobuf import json_format

    # No compiled-graph caches: every configuration compiles (and the
    # hook plans) every graph; Triton's kernel cache stays.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    torch._dynamo.config.cache_size_limit = 64
    torch._dynamo.config.accumulated_cache_size_limit = 256
    training = args.mode == "training"
    record = {"model": args.model, "mode": args.mode,
              "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "configs": {}, "problems": []}
    model, inputs, loss_of, forward, dynamic = build(torch, args.model,
                                                     args.mode)
    params = [p for p in model.parameters() if p.requires_grad]
    calls = GraphCalls(torch)

    def step(fn):
        if training:
            for p in params:
                p.grad = None
            out = fn(model, **inputs)
            loss_of(out).backward()
            return out
        with torch.no_grad():
            return fn(model, **inputs)

    def results_of(out):
        values = tensors_of(torch, out)
        if training:
            values += [p.grad.detach().float().cpu() for p in params]
        return values

    eager = results_of(step(forward))
    compiled = {}
    per_graph = {}  # config -> list of calls of one measured step
    configs = args.configs.split(",")
    for config in configs:
        m = record["configs"].setdefault(config, {})
        try:
            hook.uninstall()
            force_training_pools(torch, config == "inductor_pools" and
                                 training)
            if config.startswith("memplan_"):
                hook.install(args.target, strategy=CONFIGS[config][0],
                             training=True, timeout=60.0)
                hook.reset_stats()
            # A code object of its own per configuration: dynamo's cache of
            # one configuration never serves another.
            own = type(forward)(forward.__code__.replace(
                co_name=f"forward_{config}"), forward.__globals__,
                forward.__name__, forward.__defaults__, forward.__closure__)
            fn = torch.compile(own, options=options_of(config),
                               dynamic=True if dynamic else None)
            torch.cuda.synchronize()
            begin = time.time()
            out = step(fn)
            torch.cuda.synchronize()
            m["compile_seconds"] = round(time.time() - begin, 2)
            out = step(fn)  # once more: autotuning done
            m["results"] = results_of(out)
            if config == "inductor_pools":
                # Run to run: kernels with atomics (attention's backward)
                # differ from themselves; say by how much.
                again = results_of(step(fn))
                m["bitwise_run_to_run"] = all(
                    torch.equal(a, b) for a, b in zip(again, m["results"]))
                m["run_to_run_error"] = relative_error(torch, again,
                                                       m["results"])
            if config.startswith("memplan_"):
                stats = hook.stats()
                m["service_plans"] = stats["service_plans"]
                m["fallbacks"] = stats["fallbacks"]
                m["fallback_reasons"] = [g.get("reason") for g in
                                         stats["graphs"]
                                         if g["source"] != "service"]
                m["hook_graphs"] = stats["graphs"]
            hook.uninstall()
            force_training_pools(torch, False)
            # One step measured, after empty_cache.
            del out
            import gc
            gc.collect()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            start_allocated = torch.cuda.memory_allocated()
            start_reserved = torch.cuda.memory_reserved()
            calls_before = torch.cuda.memory_stats().get(
                "allocation.all.allocated", 0)
            torch.cuda.reset_peak_memory_stats()
            out = step(fn)
            torch.cuda.synchronize()
            m["peak_allocated"] = (torch.cuda.max_memory_allocated()
                                   - start_allocated)
            m["peak_reserved"] = (torch.cuda.max_memory_reserved()
                                  - start_reserved)
            m["allocator_calls"] = (torch.cuda.memory_stats().get(
                "allocation.all.allocated", 0) - calls_before)
            del out
            # One step with every graph's peak above its entry.
            calls.calls = []
            calls.measuring = True
            out = step(fn)
            calls.measuring = False
            per_graph[config] = calls.calls
            del out
            compiled[config] = fn
        except Exception as error:  # reported, the others go on
            import traceback
            traceback.print_exc()
            m["error"] = f"{type(error).__name__}: {error}"
            record["problems"].append(f"{config}: {m['error']}")
            hook.uninstall()
            force_training_pools(torch, False)

    # Step times: configurations interleaved, CUDA events, median.
    times = {c: [] for c in compiled}
    for _ in range(args.steps):
        for config, fn in compiled.items():
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            step(fn)
            end.record()
            torch.cuda.synchronize()
            times[config].append(begin.elapsed_time(end))
    for config, values in times.items():
        values.sort()
        record["configs"][config]["step_ms"] = values[len(values) // 2]

    # Outputs and gradients: memplan's against Inductor's own pools'
    # (bitwise where Inductor's own are bitwise from run to run; else
    # within ten times their run-to-run error, at least 1e-6) and eager's
    # (relative L2 error at most 1e-2).
    own = record["configs"].get("inductor_pools", {})
    reference = own.get("results")
    deterministic = own.get("bitwise_run_to_run", True)
    tolerance = max(1e-6, 10 * own.get("run_to_run_error", 0.0))
    for config in configs:
        m = record["configs"][config]
        results = m.pop("results", None)
        if results is None:
            continue
        m["error_vs_eager"] = relative_error(torch, results, eager)
        if m["error_vs_eager"] > 1e-2:
            record["problems"].append(
                f"{config}: outputs/gradients differ from eager by "
                f"{m['error_vs_eager']:.3g} (relative)")
        if config.startswith("memplan_") and reference is not None:
            m["bitwise_equal_to_inductor_pools"] = all(
                torch.equal(a, b) for a, b in zip(results, reference))
            if not m["bitwise_equal_to_inductor_pools"]:
                m["error_vs_inductor_pools"] = relative_error(
                    torch, results, reference)
                if deterministic or m["error_vs_inductor_pools"] > tolerance:
                    record["problems"].append(
                        f"{config}: outputs/gradients differ from Inductor's "
                        f"own pools' by {m['error_vs_inductor_pools']:.3g} "
                        f"(its run-to-run: "
                        f"{own.get('run_to_run_error', 0.0):.3g})")
        if config.startswith("memplan_") and m.get("fallbacks"):
            record["problems"].append(
                f"{config}: {m['fallbacks']} graph(s) fell back: "
                f"{m['fallback_reasons']}")

    # Per graph: measured peaks, and the service's numbers for the same
    # graph (the k-th graph call of the step in every configuration).
    record["graphs"], record["captured"] = [], []
    default_calls = per_graph.get("default", [])
    memplan_configs = [c for c in configs if c.startswith("memplan_")
                       and c in per_graph]
    count = max([len(v) for v in per_graph.values()] or [0])
    for k in range(count):
        g = {"index": k}
        if k < len(default_calls):
            g["default_measured"] = default_calls[k]["peak"]
            g["phase"] = default_calls[k]["phase"]
        request_json = None
        for config in memplan_configs:
            call = per_graph[config][k] if k < len(per_graph[config]) else None
            if call is None:
                continue
            g["phase"] = call["phase"]
            graphs = record["configs"][config].get("hook_graphs", [])
            match = [h for h in graphs if h.get("graph_id") is not None
                     and h.get("graph_id") == call["graph_id"]
                     and h.get("phase") == call["phase"]]
            if not match and k < len(graphs):  # compile order = call order
                match = [graphs[k]]
            entry = {"measured": call["peak"]}
            if match and match[-1]["source"] == "service":
                h = match[-1]
                entry.update(predicted=h["predicted_peak_bytes"],
                             baseline=h["baseline_peak_bytes"],
                             planner=h["planner"],
                             total_pool_bytes=h["total_pool_bytes"],
                             pools=len(h["pools"]))
                g["baseline"] = h["baseline_peak_bytes"]
                if request_json is None:
                    request_json = json_format.MessageToDict(
                        h["request"], preserving_proto_field_name=True)
            g[config] = entry
        record["graphs"].append(g)
        if request_json is not None:
            record["captured"].append({
                "model": args.model, "mode": args.mode, "graph": k,
                "phase": g.get("phase"), "device": record["device"],
                "torch": record["torch"], "request": request_json,
                "default_measured": g.get("default_measured"),
                "memplan_measured": {
                    c[len("memplan_"):]: g[c]["measured"]
                    for c in memplan_configs if c in g}})
    for config in record["configs"].values():
        config.pop("hook_graphs", None)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.worker:
        run_worker(arguments)
    else:
        run_driver(arguments)
