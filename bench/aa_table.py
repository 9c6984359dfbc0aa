#!/usr/bin/env python3
"""bench/aa_table.py ROWS_JSONL: the A/A matrix's table (bench/aa_matrix.sh)."""
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
