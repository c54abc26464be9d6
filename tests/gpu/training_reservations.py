"""Would one segment reserved at a training step's start lower the step's
peak reserved, in a loop with and without an optimizer, and with the
compiled graphs allocating from a private pool? For each (model,
configuration) of the GPU suite, in training, all in parallel processes:
the suite's one-step measurement (suite.py's memory worker: after
empty_cache, the gradients then set to None; peak allocated and peak
reserved above the bytes in use at the start, and the segments the step
adds), each after three steps of a loop in its steady state, with a
reservation of R bytes at the forward graph's entry (torch.empty(R)
freed at once, as the hook runs an inference graph's reservation), for
R = 0, fractions
of the step's peak allocated (FRACTIONS, rounded down to 2 MiB) and the
forward graph's own peak above its entry (R = "forward": the size a
reservation planned from the forward's request alone could take, the
forward measured in the first R = 0 step, rounded down); and the
same with an optimizer's step after the backward (Adam; SGD with
momentum), whose state, allocated at its first step, stays between steps
(docs/gpu.md, "Runs U6, W5, V12, P5, P6, R1 and R2"). Each of these once
as torch.compile runs the graphs and once (POOLS: "private") with every
compiled graph's call, forward and backward, inside
torch.cuda.use_mem_pool of one torch.cuda.MemPool, the reservation in it:
the graphs' activations, workspaces and gradients then come from a pool
that an optimizer's state, allocated outside the graphs, cannot split
(use_mem_pool routes the calling thread's allocations, and each graph's
call is entered on its own thread: the backward's on autograd's). Rows
with POOLS "private" were not run on a GPU before this script was
committed.

    CARRY=DIR python3 DIR/gpu/training_reservations.py OUT MODELS CONFIGS

DIR is a folder client/python/examples/stage_device.sh made (PYTHONPATH
as gpu/run_suite.sh sets it); MODELS and CONFIGS are comma lists of
tests/gpu/suite.py's names. Prints one JSON line per (model,
configuration), MiB; OUT gets the server's log.
"""
import contextlib
import gc
import json
import os
import sys

carry = os.environ["CARRY"]
sys.path.insert(0, os.path.join(carry, "gpu"))
import suite  # noqa: E402

MIB = 2**20
FRACTIONS = (0.95, 0.8)
OPTIMIZERS = (None, "adam", "sgd")
POOLS = ("default", "private")


def worker(model_name, config, target):
    import torch
    import memplan.inductor as hook
    torch._inductor.config.fx_graph_cache = False
    from torch._inductor.output_code import CompiledFxGraph
    model, inputs, loss_of, forward, _ = suite.build(torch, model_name,
                                                     "training")
    params = [p for p in model.parameters() if p.requires_grad]
    suite.apply_config(torch, hook, target, config, True)
    fn = torch.compile(forward, options=suite.options_of(config))
    loop = {"reserve": 0, "optimizer": None, "pool": None,
            "forward_peak": None}
    original = CompiledFxGraph.__call__

    def reserve():
        reserved = torch.empty(loop["reserve"], dtype=torch.uint8,
                               device="cuda")
        del reserved

    def call(graph, graph_inputs):
        pool = loop["pool"]
        forward = suite.graph_identity(graph)["phase"] == "forward"
        with (torch.cuda.use_mem_pool(pool) if pool is not None
              else contextlib.nullcontext()):
            if loop["reserve"] and forward:
                reserve()
            if forward and loop["forward_peak"] == []:
                entry = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                result = original(graph, graph_inputs)
                loop["forward_peak"].append(
                    torch.cuda.max_memory_allocated() - entry)
                return result
            return original(graph, graph_inputs)

    CompiledFxGraph.__call__ = call

    def step():
        for p in params:
            p.grad = None
        out = fn(model, **inputs)
        loss_of(out).backward()
        if loop["optimizer"] is not None:
            loop["optimizer"].step()
        return out

    for _ in range(3):
        step()
    suite.release_config(torch, hook)

    def measure(size, optimizer, pool):
        loop.update(reserve=size, optimizer=None, pool=None)
        for p in params:
            p.grad = None
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the previous trial's segments
        if pool == "private":
            loop["pool"] = torch.cuda.MemPool()
        if optimizer == "adam":
            loop["optimizer"] = torch.optim.Adam(params, lr=1e-6)
        elif optimizer == "sgd":
            loop["optimizer"] = torch.optim.SGD(params, lr=1e-6,
                                                momentum=0.9)
        for _ in range(3):
            out = step()
        del out
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        for p in params:
            p.grad = None
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        segments = torch.cuda.memory_stats().get("segment.all.allocated", 0)
        out = step()
        torch.cuda.synchronize()
        row = {"pool": pool, "optimizer": optimizer, "reserve": size / MIB,
               "peak_allocated": (torch.cuda.max_memory_allocated()
                                  - start) / MIB,
               "peak_reserved_over_live": (torch.cuda.max_memory_reserved()
                                           - start) / MIB,
               "segments_added": torch.cuda.memory_stats().get(
                   "segment.all.allocated", 0) - segments}
        # The trial's tensors dropped, then its pool (a MemPool's segments
        # return to the device once it is gone and the cache is emptied).
        for p in params:
            p.grad = None
        del out
        loop.update(optimizer=None, pool=None)
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return row

    loop["forward_peak"] = []  # measured in the first step of the first row
    rows = [measure(0, None, "default")]
    peak = rows[0]["peak_allocated"] * MIB
    sizes = [int(peak * fraction) // (2 * MIB) * (2 * MIB)
             for fraction in (0.0,) + FRACTIONS]
    forward_peak = loop["forward_peak"][0]
    sizes.append(forward_peak // (2 * MIB) * (2 * MIB))
    rows[0]["forward_peak"] = forward_peak / MIB
    for pool in POOLS:
        for optimizer in OPTIMIZERS:
            for size in sizes:
                rows.append(measure(size, optimizer, pool))
    CompiledFxGraph.__call__ = original
    print(json.dumps({"name": f"{model_name}.training.{config}",
                      "rows": rows}), flush=True)


def main():
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
        return
    out, models, configs = sys.argv[1:4]
    suite.run_tool_workers(__file__, carry, out, [
        [model, config] for model in models.split(",")
        for config in configs.split(",")], parallel=True)


if __name__ == "__main__":
    main()
