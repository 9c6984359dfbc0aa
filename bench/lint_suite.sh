#!/usr/bin/env bash
# bench/lint_suite.sh CUDAL1 JSONL DEVICE [SHARDS] [OUT_DIR] — `cudal1 lint-task` over every row
# of a CUDA-L1 JSON-lines file, in SHARDS concurrent shards (each its own worker and store), then
# one table: degenerate tasks at 1e-2 and 1e-4, and those that could not be linted, with why.
# Per-task progress lines (stderr of each shard) are the record, so a run cut short (LINT_DEADLINE
# seconds, default none) still counts what it finished and names what it did not reach.
set -uo pipefail
bin=$1 jsonl=$2 device=$3 shards=${4:-8} out=${5:-$(mktemp -d)}
timeout_s=${LINT_TIMEOUT:-150}
rows=${LINT_DB_DIR:-$(mktemp -d)}  # (LINT_DB_DIR: reuse an earlier run's stores, finished rows come from them)
# the split file and the shards' stores stay out of OUT_DIR: only the record goes there
mkdir -p "$out"
total=$(grep -c . "$jsonl")
per=$(( (total + shards - 1) / shards ))
split -l "$per" -d -a 2 "$jsonl" "$rows/shard_"
for f in "$rows"/shard_*; do
  n=$(basename "$f")
  ${LINT_DEADLINE:+timeout "$LINT_DEADLINE"} "$bin" lint-task --jsonl "$f" --device "$device" --atol-rtol 1e-2,1e-4 --timeout "$timeout_s" \
    --db "$rows/$n.db" --json >"$out/$n.json" 2>"$out/$n.progress" &
done
wait
python3 - "$out" "$total" "$jsonl" <<'PY'
import glob, re, sys
out, total = sys.argv[1], int(sys.argv[2])
line = re.compile(r"^\[\d+/\d+\] (\S+): (.*) \(([\d.]+) s\)$")
rows = {}
for f in sorted(glob.glob(out + "/shard_*.progress")):
    for l in open(f, errors="replace"):
        m = line.match(l.strip())
        if m: rows[m.group(1)] = (m.group(2), float(m.group(3)))
degenerate = {"1e-2": [], "1e-4": []}
errors = []
for name, (what, _) in sorted(rows.items()):
    if what.startswith("error:"):
        errors.append((name, what[7:]))
        continue
    for part in what.split("; "):
        tol, verdict = part.split(" ", 1)
        if verdict.startswith("DEGENERATE"): degenerate[tol].append(f"{name} {verdict[10:].strip()}")
print(f"lint over {len(rows)}/{total} rows ({sum(t for _, t in rows.values()):.0f} task-seconds)")
for tol, names in degenerate.items():
    print(f"degenerate at {tol}: {len(names)}")
    for n in names: print("  " + n)
import json
names = []
for l in open(sys.argv[3]):
    if l.strip():
        r = json.loads(l); names.append(f"level{r['level_id']}/task{r['task_id']}")
missing = [n for n in names if n not in rows]
print(f"not reached before the deadline: {len(missing)} {' '.join(missing)}")
print(f"could not be linted: {len(errors)}")
for n, why in errors: print(f"  {n}: {why[:150]}")
PY
