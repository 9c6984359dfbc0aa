#!/usr/bin/env bash
# bench/aa_matrix.sh CUDAL1 DEVICE OUT_DIR TASK... — the A/A matrix: each task's own Model, plainly
# and through each baseline's transformation (bench/aa_candidates.py), evaluated as a candidate
# with --baselines. A transformation's candidate should score, against eager, what its baseline
# scores: the gap between the two is how differently the evaluator times a candidate and a
# baseline (docs/evaluation.md, "Parity").
# Prints a table (task | transformation | baseline's speedup over eager | candidate's | gap %) and
# writes the rows to OUT_DIR/aa_matrix.jsonl, each evaluation's JSON to OUT_DIR/results/. Off CUDA
# only the identity applies. Identity's baseline is eager itself (1.00x).
set -uo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 CUDAL1 DEVICE OUT_DIR TASK... (for example: $0 build/cudal1 cuda /tmp/aa tasks/level1/23_silu.py)" >&2
  exit 2
fi
cli=$1 device=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/results"
rows=${AA_ROWS:-$out/aa_matrix.jsonl}  # AA_ROWS: the rows elsewhere (a folder that must stay small)
: >"$rows"

python3 "$here/aa_candidates.py" "$out/candidates" "$@" --device "$device" >"$out/candidates.jsonl" || exit 1

# One evaluation per candidate file; skipped transformations become rows saying why.
while read -r record; do
  file=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("file", ""))' "$record")
  result=
  if [ -n "$file" ]; then
    task=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["task"])' "$record")
    result=$out/results/$(basename "$(dirname "$file")")_$(basename "$file" .py).json
    echo "aa_matrix: $(basename "$task") $(basename "$file" .py)" >&2
    "$cli" eval --task "$task" --candidate "$file" --device "$device" --baselines --json --force \
      >"$result" 2>"${result%.json}.log"
  fi
  python3 - "$record" "$result" >>"$rows" <<'PY'
import json, sys
record, path = json.loads(sys.argv[1]), sys.argv[2]
row = {"task": record["task"], "transformation": record["transformation"]}
if "skipped" in record:
    print(json.dumps(dict(row, note=record["skipped"])))
    sys.exit()
try:
    result = json.load(open(path))
except (OSError, ValueError) as e:
    print(json.dumps(dict(row, note=f"no result: {e}")))
    sys.exit()
stats = result.get("statistics", {})
row.update(status=result.get("status"), accepted=result.get("accepted"),
           candidate=result.get("speedup", {}).get("eager"), candidate_raw=stats.get("raw_speedup"),
           flags=sorted({f.get("id", "?") for f in result.get("flags", []) if f.get("severity") == "block"}))
if record["transformation"] == "identity":
    row["baseline"] = 1.0
else:
    figure = stats.get("baselines", {}).get("figures", {}).get(record["transformation"], {})
    if figure.get("ratio"):
        row["baseline"] = 1.0 / figure["ratio"]  # the figure is baseline ms / eager ms
        row["copied_calls"] = figure.get("copied_calls", 0)
    else:
        row["note"] = "baseline unavailable: " + str(figure.get("unavailable", stats.get("baselines", {}).get("error", "?")))
if row.get("baseline") and row.get("candidate_raw"):
    row["gap_percent"] = 100.0 * (row["candidate_raw"] / row["baseline"] - 1.0)
if not row.get("accepted") and "note" not in row:
    row["note"] = f"{row.get('status')}: {result.get('error', '')}"[:200]
print(json.dumps(row))
PY
done <"$out/candidates.jsonl"

python3 - "$rows" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
fmt = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
print(f"{'task':<34} {'transformation':<24} {'baseline':>9} {'candidate':>10} {'gap %':>7}  note")
for r in rows:
    task = "/".join(r["task"].split("/")[-2:])
    print(f"{task:<34} {r['transformation']:<24} {fmt(r.get('baseline'), '.2f'):>9} {fmt(r.get('candidate_raw'), '.2f'):>10} "
          f"{fmt(r.get('gap_percent'), '+.0f'):>7}  {r.get('note', '')}")
gaps = [abs(r["gap_percent"]) for r in rows if "gap_percent" in r]
if gaps:
    print(f"\n{len(gaps)} pairs; largest gap {max(gaps):.0f}%, median {sorted(gaps)[len(gaps) // 2]:.0f}% "
          "(baseline and candidate: speedup over eager; candidate: the raw bucket median)")
PY
