#!/usr/bin/env python3
"""bench/forward_capture_count.py CUDA_L1_JSONL — for every row whose custom_code calls load_inline:
how many calls the build service's capture records (import and ModelNew's constructor, on this
machine's device, src/runner/py/inline_build.py), and how many a capture that also ran `forward`
on get_inputs() (CPU tensors) would record. Says whether capturing forward would serve more
candidates. Each row in its own process, 60 s at most. Prints one line per row, then the counts."""
import json
import multiprocessing as mp
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "runner", "py"))


def count(job):
    i, ref, cand = job
    import torch
    import torch.utils.cpp_extension as ce
    import inline_build
    import loading
    d = tempfile.mkdtemp(prefix=f"capture{i}_")
    open(f"{d}/task.py", "w").write(ref)
    open(f"{d}/cand.py", "w").write(cand)
    signal.alarm(60)
    try:
        captured = inline_build.capture(f"{d}/cand.py", loading.load_module, f"{d}/task.py")
        now = len([c for c in captured["calls"] if "spec" in c])
        calls, saved = [], ce.load_inline
        ce.load_inline = lambda *a, **k: calls.append(1) or inline_build._Pending("recorded")
        try:
            task = loading.load_module(f"{d}/task.py", "forward_task")
            torch.manual_seed(0)
            model = loading.load_module(f"{d}/cand.py", "forward_cand").ModelNew(*task.get_init_inputs())
            model(*task.get_inputs())
        except BaseException:  # a recorded module's function, .cuda() without a GPU, anything
            pass
        finally:
            ce.load_inline = saved
        return i, now, len(calls)
    except BaseException as e:
        return i, -1, str(e)[:80]


if __name__ == "__main__":
    rows = [json.loads(line) for line in open(sys.argv[1])]
    jobs = [(i, r["ref_code"], r["custom_code"]) for i, r in enumerate(rows) if "load_inline" in (r.get("custom_code") or "")]
    with mp.get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        results = list(pool.imap_unordered(count, jobs))
    for r in sorted(results):
        print(*r)
    print(f"{len(results)} rows with load_inline; {sum(1 for r in results if r[1] >= 1)} with a call captured; "
          f"{sum(1 for r in results if isinstance(r[2], int) and r[2] > r[1])} gain a call when forward runs; "
          f"{sum(1 for r in results if r[1] == -1)} failed")
