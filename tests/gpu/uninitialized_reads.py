"""Does a compiled step read memory it never wrote? For each (model,
configuration) of the GPU suite, in a process of its own: eager's step,
then eager's and the compiled step's results again with the caching
allocator's free blocks filled with a value before the step (NaN, 0,
1e6, then 0 again), each against eager's unfilled results
(suite.relative_error: inf where a result holds a NaN) and whether the
outputs hold a NaN. A step whose results move with what its free memory
held reads bytes it did not write: its outputs then depend on the
allocator's state, so on the plan as much as on anything, and a plan
cannot be judged by them (docs/gpu.md, "Runs U6, W5, V12, P5, P6, R1 and
R2": t5's compiled inference step, default torch.compile's as much as
memplan's).

    CARRY=DIR python3 DIR/gpu/uninitialized_reads.py OUT MODELS CONFIGS [MODE]

DIR is a folder client/python/examples/stage_device.sh made (PYTHONPATH
as gpu/run_suite.sh sets it); MODELS and CONFIGS are comma lists of
tests/gpu/suite.py's names, MODE inference (the default) or training.
Prints one JSON line per (model, configuration); OUT gets the server's
log.
"""
import json
import os
import sys

carry = os.environ["CARRY"]
sys.path.insert(0, os.path.join(carry, "gpu"))
import suite  # noqa: E402

# Each fill: two blocks of 1 GiB, 100 of 4 MiB and 2,000 of 512 KiB (the
# small pool's), float32, filled and freed after empty_cache.
FILLS = (float("nan"), 0.0, 1e6, 0.0)


def fill_free_memory(torch, value):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    blocks = [torch.full((256 * 2**20,), value, device="cuda")
              for _ in range(2)]
    blocks += [torch.full((2**20,), value, device="cuda")
               for _ in range(100)]
    blocks += [torch.full((128 * 1024,), value, device="cuda")
               for _ in range(2000)]
    del blocks
    torch.cuda.synchronize()


def worker(model_name, mode, config, target):
    import torch
    import memplan.inductor as hook
    torch._inductor.config.fx_graph_cache = False
    model, inputs, loss_of, forward, _ = suite.build(torch, model_name, mode)
    params = [p for p in model.parameters() if p.requires_grad]
    training = mode == "training"
    step = suite.stepper(torch, model, inputs, loss_of, params, training)

    def results(fn):
        return suite.step_results(torch, step(fn), params, training)

    def has_nan(r):
        return any(bool(t.isnan().any())
                   for t in r["outputs"] + r["gradients"])

    record = {"name": f"{model_name}.{mode}.{config}", "fills": FILLS}
    eager = results(forward)

    def against_eager(fn):
        r = results(fn)
        return [suite.relative_error(torch, r, eager), has_nan(r)]

    def after_fills(fn):
        checks = []
        for value in FILLS:
            fill_free_memory(torch, value)
            checks.append(against_eager(fn))
        return checks

    record["eager"] = after_fills(forward)
    suite.apply_config(torch, hook, target, config, training)
    fn = torch.compile(forward, options=suite.options_of(config))
    for _ in range(3):
        step(fn)
    suite.release_config(torch, hook)
    record["compiled_unfilled"] = against_eager(fn)
    record["compiled"] = after_fills(fn)
    print(json.dumps(record), flush=True)


def main():
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
        return
    out, models, configs = sys.argv[1:4]
    mode = sys.argv[4] if len(sys.argv) > 4 else "inference"
    suite.run_tool_workers(__file__, carry, out, [
        [model, mode, config] for model in models.split(",")
        for config in configs.split(",")])


if __name__ == "__main__":
    main()
