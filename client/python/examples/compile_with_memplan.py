"""Compiles a torchvision model with torch.compile, its memory planned by
memplan-server through memplan.inductor, and checks the result.

    PYTHONPATH=build/client/python python3 \\
        client/python/examples/compile_with_memplan.py \\
        --server build/server/memplan-server --model resnet18 --device cuda

Needs torch, torchvision and grpcio (a machine with a GPU: gpu_run.sh). It
  1. starts memplan-server on a free port;
  2. runs the model eagerly (eval, no_grad) on a fixed random batch;
  3. compiles it with torch._inductor.config.memory_planning on and the hook
     installed, and checks that the compiled model's outputs match eager on
     that batch and on a second one;
  4. proves that the plans came from the service: the hook planned every
     graph through it (stats: service_plans > 0, fallbacks = 0); the
     generated wrapper code creates the service's pools at the service's
     sizes and takes every buffer group from its pool at the service's
     offset; the server returns each plan again by its graph hash
     (GetPlan); with events, the same graph sent as Inductor's own buffer
     groups gets the same plan (so the service derived Inductor's groups and
     live ranges from the wrapper lines), and Inductor created and freed
     each pool at the events the service named;
  5. stops the server and compiles again: the hook warns and Inductor plans
     the memory itself; outputs still match; and compares the pool bytes;
  6. (--dynamic) compiles with dynamic shapes: symbolic buffer sizes, which
     the service answers only with symbolic pool sizes and offsets; without
     them the hook falls back, with a warning.
Prints "RESULT: PASS" and exits 0 when every check holds, else exits 1.
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import time
import warnings

import memplan
import memplan.inductor


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True,
                        help="path of the memplan-server binary")
    parser.add_argument("--server-libs", default="",
                        help="LD_LIBRARY_PATH for memplan-server only")
    parser.add_argument("--model", default="resnet18",
                        help="a torchvision.models constructor")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--pool-mode", default="intermediates")
    parser.add_argument("--send", default="events",
                        choices=["events", "buffers"])
    parser.add_argument("--dynamic", action="store_true",
                        help="also compile with dynamic shapes")
    return parser.parse_args()


class Server:
    """memplan-server as a child process on 127.0.0.1:<free port>."""

    def __init__(self, binary, libs):
        env = dict(os.environ)
        if libs:
            env["LD_LIBRARY_PATH"] = libs
        self.process = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0"], env=env, text=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        self.target = None
        for line in self.process.stderr:
            print("  server:", line.rstrip())
            match = re.search(r"listening on (\S+)", line)
            if match:
                self.target = match.group(1)
                break
        if self.target is None:
            raise SystemExit("memplan-server did not start")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.process.stderr:
            print("  server:", line.rstrip())

    def stop(self):
        self.process.terminate()
        print("  server exit status:", self.process.wait(timeout=30))


class Checks:
    def __init__(self):
        self.failed = []

    def check(self, ok, what):
        print(f"  [{'ok' if ok else 'FAILED'}] {what}")
        if not ok:
            self.failed.append(what)


def compare(checks, torch, actual, expected, what):
    actual = actual if isinstance(actual, (tuple, list)) else [actual]
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    worst = max(float((a.float() - e.float()).abs().max())
                for a, e in zip(actual, expected))
    try:
        # Inductor's kernels reassociate floating point sums: allow for it.
        torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-3)
        ok = True
    except AssertionError as error:
        print(error)
        ok = False
    checks.check(ok, f"{what} matches eager (max abs diff {worst:.3g}, "
                     f"rtol=atol=1e-3)")


def print_fallback_warnings(caught):
    """Prints the hook's warnings among `caught`, and returns them."""
    ours = [w for w in caught
            if issubclass(w.category, memplan.inductor.MemplanFallbackWarning)]
    for warning in ours:
        print(f"  warning: {warning.message}")
    return ours


def print_records(records):
    for i, record in enumerate(records):
        pools = ", ".join(f"{name} {size} B" for name, _, size in
                          record["pools"])
        if record["source"] == "service":
            print(f"  graph {i}: from the service ({record['input']}), "
                  f"graph_hash {record['graph_hash']}, "
                  f"{record['buffer_groups']} buffer groups, planner "
                  f"{record['planner']}, cache {record['cache']}")
            print(f"    pools: {pools}")
            print(f"    total_pool_bytes {record['total_pool_bytes']}, "
                  f"lower_bound_bytes {record['lower_bound_bytes']}, "
                  f"peak_bytes {record['peak_bytes']}, usage_agrees "
                  f"{record['usage_agrees']}")
        else:
            print(f"  graph {i}: Inductor's own planner "
                  f"({record['reason']}), {record['buffer_groups']} buffer "
                  f"groups")
            print(f"    pools: {pools}; total {record['total_pool_bytes']} B")


def pool_dtypes(code):
    """pool -> (elements, dtype name) of each pool the wrapper code creates:
    `pool1 = empty_strided_cuda((BYTES, ), (1, ), torch.uint8)`, or the
    hook's pool typed as most of its buffers, `pool1 =
    empty_strided_cuda((ELEMENTS, ), (1, ), torch.float32)`."""
    return {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(
        r"\b(pool\d+) = \w+\(\((\d+), \), \(1, \), torch\.(\w+)\)", code)}


def pool_views(code):
    """(pool, offset in bytes) of every buffer the wrapper code takes from a
    pool: `alloc_from_pool(pool1, OFFSET, ...)`, or the hook's
    `reinterpret_tensor(pool1_float32, size, stride, ELEMENTS)` of the
    pool's view in a dtype or `reinterpret_tensor(pool1, ...)` of the pool
    in its own (offsets that are not integers are skipped). A buffer that
    takes a dead buffer's view over (`buf8 = buf5; del buf5  # reuse`) has
    that buffer's pool and offset, already in the set."""
    import torch
    typed = {pool: dtype for pool, (_, dtype) in pool_dtypes(code).items()}
    views = set()
    for line in code.splitlines():
        if re.match(r"\s*pool\d+_\w+ = ", line):
            continue  # a pool's view in a dtype: no buffer
        match = re.search(r"alloc_from_pool\((pool\d+), (\d+), ", line)
        if match:
            views.add((match.group(1), int(match.group(2))))
        match = re.search(r"reinterpret_tensor\((pool\d+)(?:_(\w+))?, ",
                          line)
        last = line.rstrip().rstrip(")").rsplit(", ", 1)[-1]
        if match and last.isdigit():
            dtype = match.group(2) or typed.get(match.group(1), "uint8")
            itemsize = getattr(torch, dtype).itemsize
            views.add((match.group(1), int(last) * itemsize))
    return views


def check_code(checks, code, record):
    """The wrapper code creates the service's pools (in bytes, or in
    elements of the dtype the hook typed it as) and takes every group from
    its pool at the service's offset; a pool that holds one group at
    offset 0 may instead be that group's own allocation (the hook's
    codegen), and is then never created."""
    import torch
    assignments = record["response"].assignments
    views = pool_views(code)
    created = {pool: elements * getattr(torch, dtype).itemsize
               for pool, (elements, dtype) in pool_dtypes(code).items()}
    for name, _, size in record["pools"]:
        alone = [a.offset for a in assignments if a.pool == name] == [0]
        checks.check(created.get(name) == size or (
            alone and not re.search(rf"\b{name} = ", code)),
            f"wrapper creates {name} with {size} bytes"
            + (" (or allocates its one buffer itself)" if alone else ""))
    missing = [f"{a.pool}+{a.offset}" for a in assignments
               if (a.pool, a.offset) not in views
               and re.search(rf"\b{a.pool} = ", code)]
    checks.check(not missing,
                 f"wrapper takes all {len(assignments)} buffer groups at "
                 f"the service's pool and offset"
                 + (f" (missing {missing})" if missing else ""))


def check_service_records(checks, client, records):
    for record in records:
        response = record["response"]
        again = client.get_plan(record["graph_hash"])
        checks.check(
            [(a.pool, a.offset) for a in again.assignments]
            == [(a.pool, a.offset) for a in response.assignments],
            f"GetPlan({record['graph_hash']}) returns the plan "
            f"(cache {memplan.pb.CacheStatus.Name(again.cache)})")
        if record["input"] != "events":
            continue
        # The events' buffer groups and live ranges are Inductor's own: both
        # requests planned by strategy inductor (live ranges and sizes only;
        # auto may plan the events' whole graph, which the buffers do not
        # describe, with another planner) give one plan.
        plans = []
        for request in (record["request"], record["buffers_request"]):
            copy = type(request)()
            copy.CopyFrom(request)
            copy.options.strategy = memplan.pb.STRATEGY_INDUCTOR
            plans.append(client.plan(copy))
        checks.check(
            [(a.pool, a.offset) for a in plans[0].assignments]
            == [(a.pool, a.offset) for a in plans[1].assignments]
            and [(p.name, p.size_bytes) for p in plans[0].pools]
            == [(p.name, p.size_bytes) for p in plans[1].pools],
            "Inductor's own buffer groups, sent as buffers, get the plan the "
            "events got (strategy inductor)")
        checks.check(record["usage_agrees"] is True,
                     "Inductor creates and frees every pool at the service's "
                     "first_allocation_event / last_free_event")


def compile_dynamic(checks, torch, args, server, model, x):
    """Compiles with dynamic shapes and checks two batch sizes."""
    memplan.inductor.install(server.target, strategy=args.strategy,
                             pool_mode=args.pool_mode, timeout=30.0,
                             send=args.send)
    memplan.inductor.reset_stats()
    torch._dynamo.reset()
    small = x[: max(2, args.batch // 2)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", memplan.inductor.MemplanFallbackWarning)
        with torch.no_grad():
            dynamic = torch.compile(model, dynamic=True)
            outputs = dynamic(x), dynamic(small)
            expected = model(x), model(small)
    compare(checks, torch, outputs[0], expected[0], "dynamic-shape output")
    compare(checks, torch, outputs[1], expected[1],
            f"dynamic-shape output at batch {small.shape[0]}")
    print_fallback_warnings(caught)
    stats = memplan.inductor.stats()
    print_records(stats["graphs"])
    print(f"  service_plans {stats['service_plans']}, fallbacks "
          f"{stats['fallbacks']} (symbolic sizes: the service's plan is used "
          f"only with symbolic pool sizes and offsets)")


def main():
    args = parse_args()
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config
    import torchvision
    from torch._inductor.utils import run_and_get_code
    import grpc
    import google.protobuf

    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"grpcio {grpc.__version__}, protobuf {google.protobuf.__version__}, "
          f"python {sys.version.split()[0]}")
    if args.device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name()}")
    checks = Checks()
    inductor_config.memory_planning = True
    inductor_config.memory_pool = args.pool_mode
    if hasattr(inductor_config, "force_disable_caches"):
        inductor_config.force_disable_caches = True  # plan every compile anew

    print(f"\n== 1. memplan-server ({args.server})")
    server = Server(args.server, args.server_libs)
    client = memplan.MemplanClient(server.target, timeout=30.0)
    print(f"  health: {client.health()}")

    print(f"\n== 2. eager {args.model}, batch {args.batch}, {args.device}")
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None)
    model = model.eval().to(args.device)
    x = torch.randn(args.batch, 3, 224, 224, device=args.device)
    x2 = torch.randn(args.batch, 3, 224, 224, device=args.device)
    with torch.no_grad():
        expected, expected2 = model(x), model(x2)

    print(f"\n== 3. torch.compile with the hook (strategy {args.strategy}, "
          f"pool mode {args.pool_mode}, send {args.send})")
    memplan.inductor.install(server.target, strategy=args.strategy,
                             pool_mode=args.pool_mode, timeout=30.0,
                             send=args.send)
    memplan.inductor.reset_stats()
    torch._dynamo.reset()
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", memplan.inductor.MemplanFallbackWarning)
        with torch.no_grad():
            compiled = torch.compile(model)
            actual, codes = run_and_get_code(compiled, x)
            actual2 = compiled(x2)
    print(f"  compiled and ran in {time.monotonic() - start:.1f} s")
    compare(checks, torch, actual, expected, "compiled output (batch 1)")
    compare(checks, torch, actual2, expected2, "compiled output (batch 2)")
    print_fallback_warnings(caught)
    stats = memplan.inductor.stats()
    print_records(stats["graphs"])
    service_records = [r for r in stats["graphs"] if r["source"] == "service"]
    checks.check(stats["service_plans"] > 0 and stats["fallbacks"] == 0,
                 f"every graph planned by the service (service_plans "
                 f"{stats['service_plans']}, fallbacks {stats['fallbacks']})")
    code = "\n".join(codes)
    print(f"  wrapper code: {len(codes)} module(s), "
          f"{code.count('alloc_from_pool(')} alloc_from_pool and "
          f"{code.count('reinterpret_tensor(pool')} pool view calls")
    for record in service_records:
        check_code(checks, code, record)
    check_service_records(checks, client, service_records)

    print("\n== 4. the server stops: the hook falls back to Inductor's planner")
    server.stop()
    memplan.inductor.reset_stats()
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", memplan.inductor.MemplanFallbackWarning)
        with torch.no_grad():
            fallback_out = torch.compile(model)(x)
    compare(checks, torch, fallback_out, expected, "output without the service")
    fallbacks = print_fallback_warnings(caught)
    stats = memplan.inductor.stats()
    print_records(stats["graphs"])
    checks.check(stats["fallbacks"] > 0 and stats["service_plans"] == 0
                 and len(fallbacks) == stats["fallbacks"],
                 f"every graph fell back with a warning (fallbacks "
                 f"{stats['fallbacks']}, warnings {len(fallbacks)})")
    for service, own in zip(service_records, stats["graphs"]):
        print(f"  pool bytes: service {service['total_pool_bytes']} "
              f"(planner {service['planner']}), Inductor's own "
              f"{own['total_pool_bytes']}, live-bytes lower bound "
              f"{service['lower_bound_bytes']}")

    if args.dynamic:
        print("\n== 5. dynamic shapes (a server again)")
        server = Server(args.server, args.server_libs)
        try:
            compile_dynamic(checks, torch, args, server, model, x)
        except Exception as error:  # report it; the other checks stand
            checks.check(False, f"dynamic-shape compile raised "
                                f"{type(error).__name__}: {error}")
        finally:
            server.stop()

    memplan.inductor.uninstall()
    client.close()
    if checks.failed:
        print(f"\nRESULT: FAIL ({len(checks.failed)} checks failed)")
        return 1
    print("\nRESULT: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
