"""Step time, diagnosed: for each (model, mode, configuration) of the GPU
suite, in a process of its own, one after another, the generated wrapper
code of every compiled graph and, over 40 steps timed alone, the median
GPU time (CUDA events) beside the median CPU time of the call (a
launch-bound step has them close), then a torch.profiler table and a
cProfile of 10 steps.

    CARRY=DIR python3 DIR/gpu/step_profile.py OUT MODELS MODES CONFIGS

DIR is a folder client/python/examples/stage_device.sh made (PYTHONPATH
as gpu/run_suite.sh sets it); MODELS, MODES and CONFIGS are comma lists of
tests/gpu/suite.py's names. Writes OUT/<model>.<mode>.<config>.<k>.py (the
k-th compiled graph's code) and OUT/server.log; prints one JSON line per
configuration and the profiles (docs/gpu.md, "Step time").
"""
import json
import os
import subprocess
import sys
import time

carry = os.environ["CARRY"]
sys.path.insert(0, os.path.join(carry, "gpu"))
import suite  # noqa: E402


def worker(model_name, mode, config, target, out):
    import torch
    import memplan.inductor as hook
    from torch._inductor.output_code import CompiledFxGraph
    from torch.profiler import ProfilerActivity, profile
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    sources = {}  # id(compiled graph) -> its wrapper code, in call order
    original = CompiledFxGraph.__call__

    def call(graph, inputs):
        code = getattr(graph, "source_code", None)
        if code is not None:
            sources.setdefault(id(graph), code)
        return original(graph, inputs)

    CompiledFxGraph.__call__ = call
    model, inputs, loss_of, forward, _ = suite.build(torch, model_name, mode)
    params = [p for p in model.parameters() if p.requires_grad]
    training = mode == "training"
    step = suite.stepper(torch, model, inputs, loss_of, params, training)

    suite.apply_config(torch, hook, target, config, training)
    fn = torch.compile(forward, options=suite.options_of(config))
    for _ in range(3):
        step(fn)
    torch.cuda.synchronize()
    suite.release_config(torch, hook)
    gpu, cpu = [], []
    for _ in range(40):
        torch.cuda.synchronize()
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        started = time.perf_counter()
        step(fn)
        cpu.append((time.perf_counter() - started) * 1e3)
        end.record()
        torch.cuda.synchronize()
        gpu.append(begin.elapsed_time(end))
    name = f"{model_name}.{mode}.{config}"
    for k, code in enumerate(sources.values()):
        with open(os.path.join(out, f"{name}.{k}.py"), "w") as f:
            f.write(code)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            step(fn)
        torch.cuda.synchronize()
    print(name, prof.key_averages().table(sort_by="self_cpu_time_total",
                                          row_limit=14), flush=True)
    import cProfile
    import io
    import pstats
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(10):
        step(fn)
    torch.cuda.synchronize()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
    print(name, text.getvalue(), flush=True)
    print(json.dumps({"name": name, "gpu_ms": sorted(gpu)[20],
                      "cpu_ms": sorted(cpu)[20], "graphs": len(sources)}),
          flush=True)


def main():
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
        return
    out, models, modes, configs = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    server = suite.Server(os.path.join(carry, "bin/memplan-server"),
                          os.path.join(carry, "lib"),
                          os.path.join(out, "server.log"))
    try:
        for model in models.split(","):
            for mode in modes.split(","):
                for config in configs.split(","):
                    subprocess.run([sys.executable, __file__, "--worker",
                                    model, mode, config, server.target, out],
                                   env=dict(os.environ, CARRY=carry))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
