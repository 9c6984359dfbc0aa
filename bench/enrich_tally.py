#!/usr/bin/env python3
"""bench/enrich_tally.py OUT/enrich.jsonl — what `cudal1 enrich` has decided so far, also for a
run cut short: how many tasks have a verified CUDA Graph version, the reasons for the rest
(most common first, with the tasks), and the blocking flags seen."""
import collections
import json
import sys

rows = {}
for line in open(sys.argv[1], errors="replace"):
    if line.strip():
        r = json.loads(line)
        rows[r["task"]] = r  # a later line for the same task (a resumed run) decides
verified = [t for t, r in rows.items() if r.get("generated")]
reasons = collections.defaultdict(list)
for t, r in rows.items():
    if not r.get("generated"):
        reasons[r.get("reason", "?")].append(t)
print(f"{len(verified)} of {len(rows)} decided tasks have a verified CUDA Graph version")
for why, tasks in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
    print(f"  {len(tasks):3d}  {why}: {' '.join(sorted(tasks)[:12])}{' ...' if len(tasks) > 12 else ''}")
details = collections.Counter()
for r in rows.values():
    if not r.get("generated") and r.get("detail"):
        details[r["detail"].strip().splitlines()[-1][:160]] += 1
if details:
    print("most common details:")
    for d, n in details.most_common(8):
        print(f"  {n:3d}  {d}")
