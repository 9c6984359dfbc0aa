"""bench/optimize_summary.py SUMMARY_JSON — one line per level and overall from a `cudal1 optimize`
run's summary.json: tasks, correct rate (tasks with an accepted answer; "accepted": the share of
all answers accepted), geometric-mean speedup of
each task's best file against eager and against each baseline measured (tasks without a figure
left out, and counted), answers tried, caught hacks, and every flag raised."""
import json, math, sys

s = json.load(open(sys.argv[1]))
tasks = s.get("tasks", [])
groups = {}
for t in tasks:
    groups.setdefault(t["task"].split("/")[0] if "/" in t["task"] else "other", []).append(t)
groups["all"] = tasks
baselines = sorted({k for t in tasks for k in (t.get("best_speedups") or {})} - {"eager"})
print(f"policy {s.get('policy')} on {s.get('device')}, {len(tasks)} tasks")
head = f"{'group':<8} {'tasks':>5} {'correct':>8} {'answers':>7} {'accepted':>8} {'hacks':>5} {'geomean eager':>13}"
print(head + "".join(f" {('geomean ' + b)[:24]:>24}" for b in baselines))
def geo(vals):
    vals = [v for v in vals if isinstance(v, (int, float)) and v > 0]
    return (math.exp(sum(map(math.log, vals)) / len(vals)), len(vals)) if vals else (float("nan"), 0)
for name, ts in groups.items():
    correct = sum(1 for t in ts if t.get("best_speedup"))
    g, n = geo([t.get("best_speedup") for t in ts])
    line = f"{name:<8} {len(ts):>5} {correct / max(1, len(ts)):>8.0%} {sum(t.get('tried', 0) for t in ts):>7} {sum(t.get('correct', 0) for t in ts) / max(1, sum(t.get('tried', 0) for t in ts)):>8.0%} {sum(t.get('hacks', 0) for t in ts):>5} {g:>9.2f}x/{n:<3}"
    for b in baselines:
        gb, nb = geo([(t.get("best_speedups") or {}).get(b) for t in ts])
        line += f" {gb:>19.2f}x/{nb:<3}"
    print(line)
flags = {}
for t in tasks:
    for k, v in (t.get("flags") or {}).items():
        flags[k] = flags.get(k, 0) + v
print("flags raised (answers): " + (", ".join(f"{k} {v}" for k, v in sorted(flags.items(), key=lambda kv: -kv[1])) or "none"))
