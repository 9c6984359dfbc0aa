"""bench/guard_cost.py — what the guard costs one call of the harness on this machine's CPU: a 64x64
identity through calls.Runner (the cache flush left out), plain, with the guard's per-call check,
and with the check and the audit hook it wakes. Best of 5 rounds of 300 calls each.
Run from the repository root with a Python that has torch (Debian's /usr/bin/python3 here)."""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "runner", "py"))
import torch  # noqa: E402

import calls  # noqa: E402
import guard  # noqa: E402
import timing  # noqa: E402

timer = timing.Timer("cpu")
timer.flush = lambda: None
runner = calls.Runner(torch.device("cpu"), timer)
model = torch.nn.Identity()
values = [torch.randn(64, 64)]


def best_ms(n=300, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        for i in range(10):
            runner.call(model, runner.inputs(values, i, i), [16384], 64)
        start = time.perf_counter()
        for i in range(n):
            runner.call(model, runner.inputs(values, i, i), [16384], 64)
        best = min(best, (time.perf_counter() - start) / n * 1e3)
    return best


plain = best_ms()
guard.snapshot()
timer.watch = guard.watch()
checked = best_ms()
with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
    guard.install(f.name)
    hooked = best_ms()
print(f"plain {plain:.3f} ms/call, +check {checked:.3f}, +check+hook {hooked:.3f}")
