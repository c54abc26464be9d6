"""Step time, diagnosed per process: for each (model, mode, configuration)
of the GPU suite, in a process of its own, one after another, the
generated wrapper code of every compiled graph and suite.step_profile's
numbers over 40 steps: the median CPU time of the call beside the median
GPU time (a launch-bound step has them close), the CUDA kernels' time and
launches, cProfile's Python functions of most own time, the Triton
configuration each kernel's autotuner chose (triton_configs) and the
compiled step's results against eager's in the same process
(error_vs_eager, suite.relative_error), so that a process's error can be
read beside its autotuner's choices. (Processes
differ in CPU speed: to compare configurations, time them in one process,
`run_suite.sh --step-time --profile`.)

    CARRY=DIR python3 DIR/gpu/step_profile.py OUT MODELS MODES CONFIGS

DIR is a folder client/python/examples/stage_device.sh made (PYTHONPATH
as gpu/run_suite.sh sets it); MODELS, MODES and CONFIGS are comma lists of
tests/gpu/suite.py's names. Writes OUT/<model>.<mode>.<config>.<k>.py (the
k-th compiled graph's code) and OUT/server.log; prints one JSON line per
configuration (docs/gpu.md, "Step time").
"""
import json
import os
import sys

carry = os.environ["CARRY"]
sys.path.insert(0, os.path.join(carry, "gpu"))
import suite  # noqa: E402

STEPS = 40  # steps timed, then as many profiled


def worker(model_name, mode, config, out, target):
    import torch
    import memplan.inductor as hook
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    graphs, restore = suite.compiled_graphs(torch)
    model, inputs, loss_of, forward, _ = suite.build(torch, model_name, mode)
    params = [p for p in model.parameters() if p.requires_grad]
    training = mode == "training"
    step = suite.stepper(torch, model, inputs, loss_of, params, training)
    eager = suite.step_results(torch, step(forward), params, training)

    suite.apply_config(torch, hook, target, config, training)
    fn = torch.compile(forward, options=suite.options_of(config))
    for _ in range(2):
        step(fn)
    compiled = suite.step_results(torch, step(fn), params, training)
    torch.cuda.synchronize()
    suite.release_config(torch, hook)
    restore()
    name = f"{model_name}.{mode}.{config}"
    codes = suite.wrapper_codes(graphs)
    for k, code in enumerate(codes):
        with open(os.path.join(out, f"{name}.{k}.py"), "w") as f:
            f.write(code)
    profile = suite.step_profile(torch, step, fn, STEPS)
    # "<graph>.<kernel>" -> the Triton configuration its autotuner chose.
    configs = {kernel: chosen for kernel, (chosen, _) in
               suite.kernel_configs(graphs).items()}
    print(json.dumps({"name": name, "graphs": len(codes), **profile,
                      "error_vs_eager": suite.relative_error(
                          torch, compiled, eager),
                      "triton_configs": configs}), flush=True)


def main():
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
        return
    out, models, modes, configs = sys.argv[1:5]
    suite.run_tool_workers(__file__, carry, out, [
        [model, mode, config, out] for model in models.split(",")
        for mode in modes.split(",") for config in configs.split(",")])


if __name__ == "__main__":
    main()
