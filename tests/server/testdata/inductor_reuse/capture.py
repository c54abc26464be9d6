# Captures Inductor's own buffer-reuse decisions (torch 2.11,
# PythonWrapperCodegen.memory_plan_reuse) for real models, with the wrapper
# lines they were made from as memplan events and Inductor's per-node peak
# estimate (EfficientPeakEstimate's input) as scheduler_node_bytes. Run
# where torch and torchvision are (a CUDA GPU for all but the last model):
#   OUT=dir python3 capture.py
# writes dir/cases.json, a list of {name, request (a PlanMemoryRequest in
# protobuf's JSON mapping), expected ({reuse_decisions: [...]})}.
# torch_2_11_cases.json beside this file came from a minified copy of this
# script run with torch 2.11.0+cu130 and torchvision 0.26 on an H200.
import json
import os

import torch
import torchvision
import torch._inductor.codegen.wrapper as W
import torch._inductor.memory as memory
from torch._inductor import config, ir
from torch._inductor.utils import get_dtype_size, sympy_str
from torch._inductor.virtualized import V

OUT = os.environ["OUT"]
config.force_disable_caches = True
cases, name, estimate = [], [None], [None]

# EfficientPeakEstimate calls estimate_peak_memory just before
# memory_plan_reuse: keep its result (peak, bytes per scheduler node).
estimate_peak_memory = memory.estimate_peak_memory


def recording_estimate(*args):
    estimate[0] = estimate_peak_memory(*args)
    return estimate[0]


memory.estimate_peak_memory = recording_estimate
KIND = "EVENT_KIND_"


def event(line, i):
    if isinstance(line, (W.AllocateLine, W.FreeIfNotReusedLine)):
        node, allocates = line.node, isinstance(line, W.AllocateLine)
        e = {"kind": KIND + ("ALLOCATE" if allocates else "FREE_IF_NOT_REUSED"),
             "name": node.get_name(), "scheduler_node": line.scheduler_node_index}
        # A FREE Inductor never pushes gets no size, so memplan does not
        # push it either.
        if allocates or not (isinstance(node.layout, ir.MultiOutputLayout)
                             or node.get_inputs_that_alias_output()):
            storage = V.graph.get_allocation_storage_size(node)
            item = get_dtype_size(node.get_dtype())
            sizes = V.graph.sizevars
            e.update(size_bytes=int(sizes.size_hint(storage, fallback=0)) * item,
                     symbolic_size=sympy_str(sizes.simplify(storage * item)),
                     device=str(node.get_device()), dtype=str(node.get_dtype()))
        return e
    if isinstance(line, W.ReuseLine):
        return {"kind": KIND + "REUSE", "name": line.node.get_name(),
                "reused_as": line.reused_as.get_name()}
    if isinstance(line, W.EnterSubgraphLine):
        return {"kind": KIND + "ENTER_SUBGRAPH"}
    if isinstance(line, W.ExitSubgraphLine):
        return {"kind": KIND + "EXIT_SUBGRAPH"}
    if isinstance(line, W.MemoryPlanningLine):  # another one: a no-op here
        return {"kind": KIND + "FREE_IF_NOT_REUSED", "name": "__%d" % i}
    return {"kind": KIND + "OTHER"}


memory_plan_reuse = W.PythonWrapperCodegen.memory_plan_reuse


def recording_memory_plan_reuse(self):
    before = list(self.lines)
    events = [event(line, i) for i, line in enumerate(before)]
    outputs = list(V.graph._get_output_names(self.get_graph_outputs()))
    memory_plan_reuse(self)
    decisions = []
    for i, (old, new) in enumerate(zip(before, self.lines)):
        if isinstance(old, W.AllocateLine) and isinstance(new, W.ReuseLine):
            frees = [j for j, x in enumerate(before)
                     if isinstance(x, W.FreeIfNotReusedLine) and x.is_reused
                     and x.node is new.node]
            decisions.append({"buffer": new.reused_as.get_name(),
                              "reused": new.node.get_name(),
                              "allocation_event": i, "free_event": frees[-1]})
    cases.append({"name": "%s_%d" % (name[0], len(cases)), "request": {
        "events": events, "output_names": outputs,
        "removed_buffers": sorted(V.graph.removed_buffers),
        "scheduler_node_bytes": estimate[0][1] if estimate[0] else [],
        "options": {"strategy": "STRATEGY_REUSE"}},
        "expected": {"reuse_decisions": decisions}})


W.PythonWrapperCodegen.memory_plan_reuse = recording_memory_plan_reuse


def run(graph, fn, *args, dynamic=None):
    name[0] = graph
    torch._dynamo.reset()
    torch.compile(fn, dynamic=dynamic)(*args)


cuda, randn, models = "cuda", torch.randn, torchvision.models
model = models.resnet18().to(cuda).eval()
with torch.no_grad():
    run("resnet18_infer", model, randn(2, 3, 64, 64, device=cuda))
train = models.resnet18().to(cuda)
run("resnet18_train", lambda x: train(x).sum().backward(),
    randn(2, 3, 64, 64, device=cuda))
run("mlp_dynamic", lambda x, w: ((x @ w).relu() @ w.t()).softmax(-1),
    randn(8, 64, device=cuda), randn(64, 128, device=cuda), dynamic=True)
model = models.mobilenet_v3_small().eval()
with torch.no_grad():
    run("mobilenet_cpu", model, randn(1, 3, 64, 64))
json.dump(cases, open(OUT + "/cases.json", "w"))
print([(c["name"], len(c["request"]["events"]),
        len(c["expected"]["reuse_decisions"])) for c in cases])
