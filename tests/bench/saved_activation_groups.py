#!/usr/bin/env python3
"""How far sharing pools among a training forward's saved activations could
cut allocator calls at no cost in memory, counted on a GPU suite capture.

Each activation a training forward saves is one of its outputs: the forward
allocates it, and its backward frees it (`del` of the backward's graph
input) at the input's last use. A pool is freed when its last buffer is, so
two saved activations can share one pool at no cost in the backward only
where the backward frees them with nothing allocated in between (after the
same kernel, typically: a convolution's input and the batch norm statistics
its backward reads). This program reads the backward graphs' requests of a
capture (tests/gpu/suite.py --out DIR writes captured.jsonl.gz; committed
ones are in tests/server/testdata/whole_graph/): each carries its forward's
request, the plan the forward ran with (ForwardGraph.plan) and which
forward output each backward input is (ForwardGraph.input_sources). Per
training model (its forward graphs summed) it prints:

  - the forward plan's pools, and those holding an output (today: one per
    saved activation that the forward's code allocates from a pool);
  - the output pools there would be if every output pool whose buffers the
    backward frees in one "free cluster" (a run of the backward's input
    frees with no allocation, reuse or extern allocation between them)
    shared one pool with the others of that cluster; an output pool whose
    buffers are freed in different clusters, or never in the backward,
    keeps its own.

That is an upper bound on what the grouping can save at no cost in the
backward, with the backward's frees known exactly (the hook reads them
from the backward's FX graph: memplan.release_groups). It ignores the
forward's side, where a shared pool is allocated at its first buffer's
allocation: that cost can only lower the saving. Only the standard
library is needed:

  python3 tests/bench/saved_activation_groups.py CAPTURE.jsonl.gz

With --replan TARGET (a memplan-server's HOST:PORT; the memplan Python
package on PYTHONPATH, e.g. build/client/python), each forward is planned
again by the service as captured and with those groups as its
PlanMemoryRequest.release_groups, and its backward from each forward
plan: per model, the forward's pools and predicted peak, and the
backward's, without and with the groups.
"""

import argparse
import collections
import gzip
import json

# Event kinds after which a following input free is no longer free of cost
# if held back: each allocates bytes (or hands a storage on).
ALLOCATING = ("EVENT_KIND_ALLOCATE", "EVENT_KIND_EXTERN_ALLOCATE",
              "EVENT_KIND_MULTI_OUTPUT", "EVENT_KIND_REUSE")


def allocation_events(request):
    """Buffer name -> the event index of the ALLOCATE that created its
    storage (a buffer that reuses another's storage, by Inductor's reuse
    pass, maps to that buffer's allocation)."""
    event_of = {}
    for index, event in enumerate(request.get("events", [])):
        kind = event.get("kind")
        if kind == "EVENT_KIND_ALLOCATE":
            event_of[event["name"]] = index
        elif kind == "EVENT_KIND_REUSE" and event.get("name") in event_of:
            event_of[event["reused_as"]] = event_of[event["name"]]
    return event_of


def free_clusters(backward, sources):
    """Forward output name -> the index of the backward's free cluster that
    frees it (runs of FREE_INPUT events with no allocating event between)."""
    cluster_of = {}
    cluster = -1
    open_run = False
    for event in backward.get("events", []):
        kind = event.get("kind")
        if kind == "EVENT_KIND_FREE_INPUT" and event.get("name") in sources:
            if not open_run:
                cluster += 1
                open_run = True
            cluster_of[sources[event["name"]]] = cluster
        elif kind in ALLOCATING:
            open_run = False
    return cluster_of


def output_pools(backward):
    """(forward plan's pools, its pools holding an output, the output pools
    after grouping by free cluster) for one backward request."""
    forward = backward["forward"]
    request, plan = forward["request"], forward["plan"]
    sources = {s["input"]: s["forward_output"]
               for s in forward.get("input_sources", [])}
    event_of = allocation_events(request)
    pool_of = {int(a["allocation_event"]): a["pool"]
               for a in plan.get("assignments", [])}
    members = collections.defaultdict(list)
    for name in request.get("output_names", []):
        event = event_of.get(name)
        if event in pool_of:
            members[pool_of[event]].append(name)
    cluster_of = free_clusters(backward, sources)
    clusters, alone = set(), 0
    for names in members.values():
        freed_in = {cluster_of.get(name) for name in names}
        if len(freed_in) == 1 and None not in freed_in:
            clusters.add(freed_in.pop())
        else:
            alone += 1
    return len(set(pool_of.values())), len(members), len(clusters) + alone


def free_run_groups(backward):
    """The forward's output names of each free run of the backward (two or
    more each), in the backward's order: the oracle release groups."""
    forward = backward["forward"]
    sources = {s["input"]: s["forward_output"]
               for s in forward.get("input_sources", [])}
    outputs = set(forward["request"].get("output_names", []))
    runs = collections.defaultdict(list)
    for name, run in free_clusters(backward, sources).items():
        if name in outputs:
            runs[run].append(name)
    return [runs[run] for run in sorted(runs) if len(runs[run]) > 1]


def replan(capture, target):
    """Prints the --replan table (see the module's doc)."""
    from google.protobuf import json_format
    from memplan import MemplanClient, pb
    client = MemplanClient(target, timeout=120.0)
    print("| model | forward pools: captured / with groups | forward "
          "predicted peak MiB | backward pools | backward predicted peak "
          "MiB |")
    print("| --- | --- | --- | --- | --- |")
    with gzip.open(capture, "rt") as lines:
        for line in lines:
            graph = json.loads(line)
            request = graph.get("request") or {}
            if graph.get("phase") != "backward" or \
                    "plan" not in request.get("forward", {}):
                continue
            backward = json_format.ParseDict(request, pb.PlanMemoryRequest())
            forwards = [pb.PlanMemoryRequest(), pb.PlanMemoryRequest()]
            for forward in forwards:
                forward.CopyFrom(backward.forward.request)
            for names in free_run_groups(request):
                forwards[1].release_groups.add(outputs=names)
            row = []
            for forward in forwards:
                plan = client.plan(forward)
                step = pb.PlanMemoryRequest()
                step.CopyFrom(backward)
                step.forward.request.CopyFrom(forward)
                step.forward.plan.Clear()
                step.forward.plan.pools.extend(plan.pools)
                step.forward.plan.assignments.extend(plan.assignments)
                step.forward.plan.segment_reservations.extend(
                    plan.segment_reservations)
                row.append((plan, client.plan(step)))
            (f0, b0), (f1, b1) = row

            def mib(value):
                return f"{value / 2**20:.1f}"
            print(f"| {graph['model']} | {len(f0.pools)} / {len(f1.pools)} | "
                  f"{mib(f0.stats.predicted_peak_bytes)} / "
                  f"{mib(f1.stats.predicted_peak_bytes)} | "
                  f"{len(b0.pools)} / {len(b1.pools)} | "
                  f"{mib(b0.stats.predicted_peak_bytes)} / "
                  f"{mib(b1.stats.predicted_peak_bytes)} |")
    client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("capture", help="a suite's captured.jsonl.gz")
    parser.add_argument("--replan", metavar="TARGET",
                        help="a memplan-server to plan the forwards again "
                        "with the groups (see the doc)")
    args = parser.parse_args()
    if args.replan:
        replan(args.capture, args.replan)
        return
    rows = collections.OrderedDict()
    with gzip.open(args.capture, "rt") as lines:
        for line in lines:
            graph = json.loads(line)
            if graph.get("phase") != "backward":
                continue
            forward = (graph.get("request") or {}).get("forward")
            if not forward or "plan" not in forward:
                continue
            counts = output_pools(graph["request"])
            row = rows.setdefault(graph["model"], [0, 0, 0, 0])
            row[0] += 1
            for i, count in enumerate(counts):
                row[i + 1] += count
    print("| model | forward graphs | forward pools | pools holding an "
          "output | output pools grouped by the backward's free clusters "
          "(ratio) |")
    print("| --- | --- | --- | --- | --- |")
    for model, (graphs, pools, outputs, grouped) in rows.items():
        ratio = grouped / outputs if outputs else 1.0
        print(f"| {model} | {graphs} | {pools} | {outputs} | {grouped} "
              f"({ratio:.3f}) |")


if __name__ == "__main__":
    main()
