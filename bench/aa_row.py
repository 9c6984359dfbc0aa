#!/usr/bin/env python3
"""bench/aa_row.py RECORD_JSON RESULT_PATH: one row of the A/A matrix (bench/aa_matrix.sh) from a
candidate record and its evaluation's JSON; also run by hand over the results of a run whose rows
were lost."""
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
