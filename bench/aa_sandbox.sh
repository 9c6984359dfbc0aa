#!/usr/bin/env bash
# bench/aa_sandbox.sh CUDAL1 DEVICE OUT_DIR REPEATS TASK... — the A/A figure (the task's own Model
# as the candidate) under each way the workers can be confined: bubblewrap (the default where it
# is installed) and the fallback (seccomp and a dropped uid, no namespaces; CUDAL1_SANDBOX=fallback).
# A bias that follows the confinement shows here; one that does not lies in the workers' own code
# (bench/aa_probe.py times that part in one process). Prints one line per evaluation and a table.
set -uo pipefail
if [ $# -lt 5 ]; then
  echo "usage: $0 CUDAL1 DEVICE OUT_DIR REPEATS TASK... (for example: $0 build/cudal1 cuda /tmp/aas 3 tasks/level1/15_sum_dim.py)" >&2
  exit 2
fi
cli=$1 device=$2 out=$3 repeats=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rows=$out/aa_sandbox.jsonl
: >"$rows"
python3 "$here/aa_candidates.py" "$out/candidates" "$@" --device "$device" >"$out/candidates.jsonl" || exit 1
for task in "$@"; do
  cand=$out/candidates/$(basename "$task" .py)/identity.py
  for i in $(seq 1 "$repeats"); do
    for mode in bwrap fallback; do
      env_mode=; [ $mode = fallback ] && env_mode=fallback
      CUDAL1_SANDBOX=$env_mode "$cli" eval --task "$task" --candidate "$cand" --device "$device" --json --no-store \
        >"$out/result.json" 2>"$out/result.log"
      python3 - "$task" "$mode" "$out/result.json" >>"$rows" <<'PY'
import json, sys
task, mode, path = sys.argv[1:]
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print(json.dumps({"task": task, "sandbox": mode, "note": f"no result: {e}"}))
    sys.exit()
s = r.get("statistics", {})
print(json.dumps({"task": task, "sandbox": mode, "status": r.get("status"), "raw": s.get("raw_speedup"),
                  "sandbox_kind": r.get("provenance", {}).get("sandbox"),
                  "candidate_ms": r.get("runtime_ms", {}).get("candidate"), "eager_ms": r.get("runtime_ms", {}).get("eager"),
                  "wall_over_claimed": s.get("wall_over_claimed"), "batch_overhead": s.get("batch_overhead")}))
PY
      tail -1 "$rows" >&2
    done
  done
done
python3 - "$rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
# Besides the A/A figure: each side's wall clock over its claimed time per call, and each side's
# empty batch (the harness alone), whose difference is what the candidate's worker costs a call.
def med(v):
    return statistics.median(v) if v else float("nan")
print(f"{'task':<30} {'sandbox':<9} {'runs':>4} {'A/A':>6} {'wall/claim c':>12} {'r':>6} "
      f"{'empty c ms':>10} {'r ms':>6}  each A/A")
for task in dict.fromkeys(r["task"] for r in rows):
    for mode in ("bwrap", "fallback"):
        mine = [r for r in rows if r["task"] == task and r["sandbox"] == mode and r.get("raw")]
        if not mine:
            continue
        woc = [r.get("wall_over_claimed") or {} for r in mine]
        bo = [r.get("batch_overhead") or {} for r in mine]
        print(f"{'/'.join(task.split('/')[-2:]):<30} {mode:<9} {len(mine):>4} {med([r['raw'] for r in mine]):>6.3f} "
              f"{med([w['candidate'] for w in woc if 'candidate' in w]):>12.2f} "
              f"{med([w['reference'] for w in woc if 'reference' in w]):>6.2f} "
              f"{med([b['candidate_measured_ms'] for b in bo if 'candidate_measured_ms' in b]):>10.1f} "
              f"{med([b['reference_ms'] for b in bo if 'reference_ms' in b]):>6.1f}  "
              + " ".join(f"{r['raw']:.3f}" for r in mine))
PY
