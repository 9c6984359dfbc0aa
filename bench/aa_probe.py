#!/usr/bin/env python3
"""bench/aa_probe.py TASK [--device cuda] [--calls N] [--rounds R]: which of the candidate worker's
per-call differences costs time. In one process, the task's Model is timed with the workers' own
timer (src/runner/py/timing.py) under each condition, rounds interleaved:
  plain   — as the reference's worker times it;
  poison  — the allocator poisoned with the outputs' sizes before each call (the candidate's worker);
  guard   — after the guard's snapshot and audit hook (the candidate's worker), plain and poisoned.
The guard cannot be removed once installed, so its rounds come last. Prints each condition's
median device ms a call and its ratio to plain; an A/A gap that none of them shows lies outside
the process (the sandbox, the order of the two processes on the device)."""
import argparse
import importlib.util
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "src", "runner", "py"))

import torch  # noqa: E402

import calls  # noqa: E402
import guard  # noqa: E402
from timing import Timer  # noqa: E402


def load_task(path):
    spec = importlib.util.spec_from_file_location("aa_probe_task", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def time_round(timer, runner, model, buffers, sizes, n, poison):
    dev = []
    for i in range(n):
        if poison:
            runner.poison(sizes)
        d, _, _, out = timer.call(model, buffers[i % len(buffers)])
        del out
        dev.append(d)
    return statistics.median(dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("task")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    device = torch.device(a.device)
    task = load_task(a.task)
    torch.manual_seed(0)
    model = task.Model(*task.get_init_inputs()).to(device)
    buffers = [[t.to(device) if isinstance(t, torch.Tensor) else t for t in task.get_inputs()] for _ in range(4)]
    timer = Timer(device)
    runner = calls.Runner(device, timer)
    out = model(*buffers[0])
    outs = out if isinstance(out, (tuple, list)) else [out]
    sizes = [o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor)]
    for _ in range(3):  # warm-up, as the workers do
        time_round(timer, runner, model, buffers, sizes, 20, False)
    medians = {}
    conditions = [("plain", False), ("poison", True)]
    for r in range(a.rounds):
        for name, poison in conditions if r % 2 == 0 else reversed(conditions):
            medians.setdefault(name, []).append(time_round(timer, runner, model, buffers, sizes, a.calls, poison))
    guard.snapshot()
    guard.install(os.path.abspath(a.task))
    timer.watch = guard.watch()
    for r in range(a.rounds):
        for name, poison in conditions if r % 2 == 0 else reversed(conditions):
            medians.setdefault("guard+" + name, []).append(
                time_round(timer, runner, model, buffers, sizes, a.calls, poison))
    base = statistics.median(medians["plain"])
    print(f"{os.path.basename(a.task)} on {a.device}: {a.rounds} rounds of {a.calls} calls")
    print(f"{'condition':<14} {'ms/call':>9} {'ratio':>7}  rounds")
    for name, values in medians.items():
        m = statistics.median(values)
        print(f"{name:<14} {m:9.4f} {base / m:7.3f}  " + " ".join(f"{v:.4f}" for v in values))


if __name__ == "__main__":
    main()
