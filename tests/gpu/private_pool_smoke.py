"""A GPU check of the hook's private pool as it ships (install(training=
True), private_pool "auto"), in the two ways torch.compile runs a training
step: a classifier MLP (width 2048, 6 layers, batch 256, 10 classes: its
caller's outputs are 10 KiB of logits, so "auto" puts its graphs in the
private pool) trained with Adam for three steps, compiled

  default      torch.compile's default mode: the forward's request asks for
               the private pool and a reservation, both graphs' code enter
               the pool, the reservation lands there (torch.cuda.MemPool's
               segments), the optimizer's state does not, and the
               backward compiles right after the forward, before it runs
               (install() sets AOTAutograd's
               force_non_lazy_backward_lowering, uninstall() puts it back),
               so that its plan can size the forward's reservation for
               the step (stats()' "step_reservations");
  cudagraphs   mode="reduce-overhead" (cudagraph trees, their own pool): no
               graph asks for the private pool and the step runs (it failed
               with "storage data ptrs are not allocated in pool" before
               _cudagraphs kept these graphs out of it: docs/gpu.md).

Each worker compares its three losses with the same model's unhooked
compile in the same mode, from the same weights and data: within a
relative 1e-5 (the same kernels; the plan moves only where buffers
live). Prints one
JSON line per worker with "problems" (empty where every check holds);
the driver exits 1 where any worker has a problem or did not report.

    CARRY=DIR python3 DIR/gpu/private_pool_smoke.py OUT

DIR is a folder client/python/examples/stage_device.sh made (PYTHONPATH
as gpu/run_suite.sh sets it); OUT gets the server's log and results.jsonl.
"""
import copy
import json
import os
import subprocess
import sys

carry = os.environ["CARRY"]
sys.path.insert(0, os.path.join(carry, "gpu"))
import suite  # noqa: E402

MODES = ("default", "cudagraphs")
STEPS = 3


def worker(mode, target):
    import torch
    import memplan.inductor as hook
    torch._inductor.config.fx_graph_cache = False
    torch.manual_seed(0)
    layers = []
    for _ in range(5):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    base = torch.nn.Sequential(*layers, torch.nn.Linear(2048, 10)).cuda()
    data = torch.randn(256, 2048, device="cuda")
    labels = torch.randint(0, 10, (256,), device="cuda")
    compile_mode = "reduce-overhead" if mode == "cudagraphs" else None

    def train(hooked):
        model = copy.deepcopy(base)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        torch._dynamo.reset()
        if hooked:
            hook.install(target, training=True, timeout=60.0)
            hook.reset_stats()
        # Read as the graphs compile, at the first call.
        torch._inductor.config.memory_planning = hooked
        step = torch.compile(model, mode=compile_mode)
        losses = []
        early = {}
        try:
            for _ in range(STEPS):
                optimizer.zero_grad(set_to_none=True)
                out = step(data)
                if hooked and not early:
                    # install(training=True) has AOTAutograd compile the
                    # backward right after the forward (before it runs).
                    early["graphs_after_first_forward"] = len(
                        hook.stats()["graphs"])
                    early["non_lazy_backward"] = bool(
                        torch._functorch.config.
                        force_non_lazy_backward_lowering)
                loss = torch.nn.functional.cross_entropy(out, labels)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            torch.cuda.synchronize()
            stats = hook.stats() if hooked else None
        finally:
            if hooked:
                hook.uninstall()
                torch._inductor.config.memory_planning = False
                early["non_lazy_after_uninstall"] = bool(
                    torch._functorch.config.force_non_lazy_backward_lowering)
        if stats is not None:
            stats["early"] = early
        state = [t for s in optimizer.state.values() for t in s.values()
                 if isinstance(t, torch.Tensor) and t.is_cuda]
        return losses, stats, state

    problems = []
    row = {"mode": mode, "device": torch.cuda.get_device_name()}
    try:
        plain, _, _ = train(False)
        hooked, stats, state = train(True)
    except Exception as error:  # the check's answer, not a crash
        row["problems"] = [f"{type(error).__name__}: {error}"]
        print(json.dumps(row), flush=True)
        return
    graphs = stats["graphs"]
    row.update(losses=hooked, unhooked_losses=plain,
               service_plans=stats["service_plans"],
               fallbacks=stats["fallbacks"],
               private=[(g["phase"], g["request"].options.private_pool)
                        for g in graphs if "request" in g],
               reservations=[g.get("segment_reservations") for g in graphs],
               step_reservations=[g.get("step_reservations")
                                  for g in graphs],
               **stats["early"])
    row["max_relative_difference"] = max(
        abs(a - b) / max(abs(b), 1e-30) for a, b in zip(hooked, plain))
    if row["max_relative_difference"] > 1e-5:
        problems.append("losses differ from the unhooked compile's")
    if stats["fallbacks"] or stats["service_plans"] != 2:
        problems.append("not every graph planned by the service")
    want_private = mode == "default"
    if row["non_lazy_after_uninstall"]:
        problems.append("uninstall() left the backward lowering non-lazy")
    if want_private and (row["graphs_after_first_forward"] != 2
                         or not row["non_lazy_backward"]):
        problems.append("the backward did not compile with its forward")
    if any(private != want_private for _, private in row["private"]):
        problems.append(f"private_pool should be {want_private} on every "
                        "training graph")
    if want_private:
        pool = hook._private_pools.get(torch.cuda.current_device())
        snapshot = [s for s in torch.cuda.memory_snapshot()
                    if pool is not None and
                    tuple(s.get("segment_pool_id", ())) == tuple(pool.id)]
        row["private_segments"] = sorted(s["total_size"] for s in snapshot)
        if not snapshot:
            problems.append("no segment in the hook's private pool")
        pool_ptrs = [(s["address"], s["address"] + s["total_size"])
                     for s in snapshot]
        if any(lo <= t.data_ptr() < hi for t in state
               for lo, hi in pool_ptrs):
            problems.append("the optimizer's state is in the private pool")
        reserved = [size for r in row["reservations"] if r
                    for _, size in r]
        if not reserved:
            problems.append("the forward reserved nothing")
    row["problems"] = problems
    print(json.dumps(row), flush=True)


def main():
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "results.jsonl")
    server = suite.Server(os.path.join(carry, "bin/memplan-server"),
                          os.path.join(carry, "lib"),
                          os.path.join(out, "server.log"))
    env = dict(os.environ, CARRY=carry)
    rows = []
    try:
        for mode in MODES:
            done = subprocess.run(
                [sys.executable, __file__, "--worker", mode, server.target],
                env=env, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines()
                     if line.startswith("{")]
            row = json.loads(lines[-1]) if lines else {
                "mode": mode, "problems": [
                    f"no report (exit {done.returncode}): "
                    f"{done.stderr[-2000:]}"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.stop()
    with open(results, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    sys.exit(1 if any(row["problems"] for row in rows) else 0)


if __name__ == "__main__":
    main()
