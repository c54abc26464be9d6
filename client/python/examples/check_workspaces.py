"""Checks memplan.workspaces on a GPU (no server needed):

    PYTHONPATH=CARRY/python python3 check_workspaces.py

1. A cuDNN convolution backward's workspace, as the probe measures it from
   the allocator's memory history, is the most bytes its call holds beyond
   its outputs as torch.cuda.max_memory_allocated shows them in a direct
   call (up to the allocator's rounding).
2. The probe leaves no history recording behind, and a recording the
   user started stays on with its entries (the probe then counts the bytes
   the call freed instead, an upper bound).
Prints one line per check and exits non-zero on a failure.
"""

import sys

import torch

from memplan import workspaces


class Node:
    """An extern kernel's IR node, as WorkspaceProbe reads it."""

    class Input:
        def __init__(self, tensor):
            self.tensor = tensor

        def get_size(self):
            return list(self.tensor.shape)

        def get_stride(self):
            return list(self.tensor.stride())

        def get_dtype(self):
            return self.tensor.dtype

        def get_device(self):
            return self.tensor.device

    def __init__(self, op, inputs, constants):
        self.op_overload = op
        self.inputs = [Node.Input(t) for t in inputs]
        self.constant_args = constants
        self.kwargs = {}

    def get_device(self):
        return self.inputs[0].get_device()


class Graph:
    class SizeVars:
        def size_hint(self, expr, fallback=None):
            return int(expr)

        def size_hints(self, exprs, fallback=None):
            return tuple(int(e) for e in exprs)

    sizevars = SizeVars()


def direct_workspace(op, inputs, constants):
    """The bytes the call held beyond what it returns, from the peak."""
    op(*inputs, *constants)  # warm up, as the probe does
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    outputs = op(*inputs, *constants)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    held = torch.cuda.memory_allocated() - base
    del outputs
    return peak - held


def main():
    failures = 0
    op = torch.ops.aten.convolution_backward.default
    x = torch.zeros(16, 64, 56, 56, device="cuda").to(
        memory_format=torch.channels_last)
    w = torch.zeros(64, 64, 3, 3, device="cuda").to(
        memory_format=torch.channels_last)
    grad = torch.zeros(16, 64, 56, 56, device="cuda").to(
        memory_format=torch.channels_last)
    constants = ([0], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                 [True, True, False])
    node = Node(op, [grad, x, w], constants)

    first = workspaces.WorkspaceProbe(Graph())
    probed = first(node)
    direct = direct_workspace(op, [grad, x, w], constants)
    ok = probed > 0 and abs(probed - direct) <= 512 * 4
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: convolution_backward workspace "
          f"probed {probed} B, direct {direct} B (method "
          f"{first.method})")

    traces = torch.cuda.memory._snapshot().get("device_traces", [])
    ok = not any(traces)
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: no history left behind "
          f"({sum(len(t) for t in traces)} entries)")

    # A user's recording: the probe counts freed bytes and leaves it on.
    workspaces._cache.clear()
    torch.cuda.memory._record_memory_history(max_entries=1000)
    keep = torch.zeros(1024, device="cuda")
    probe = workspaces.WorkspaceProbe(Graph())
    freed = probe(node)
    traces = torch.cuda.memory._snapshot().get("device_traces", [])
    torch.cuda.memory._record_memory_history(enabled=None)
    ok = probe.method == "freed" and freed >= probed and any(traces)
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: under a user's recording: method "
          f"{probe.method}, {freed} B (>= {probed}), the user's trace kept "
          f"({sum(len(t) for t in traces)} entries)")
    del keep
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
