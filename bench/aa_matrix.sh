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
  python3 "$here/aa_row.py" "$record" "$result" >>"$rows"
done <"$out/candidates.jsonl"

python3 "$here/aa_table.py" "$rows"
