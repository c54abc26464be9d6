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
backward, with the backward's frees known exactly, which a forward's
planner does not have (AOTAutograd compiles the backward after the
forward's code is generated). It ignores the forward's side, where a
shared pool is allocated at its first buffer's allocation: that cost can
only lower the saving. Only the standard library is needed:

  python3 tests/bench/saved_activation_groups.py CAPTURE.jsonl.gz
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("capture", help="a suite's captured.jsonl.gz")
    args = parser.parse_args()
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
