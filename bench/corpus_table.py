#!/usr/bin/env python3
"""bench/corpus_table.py LOG.jsonl [LOG2.jsonl ...] — the red-team corpus by hack family.

Reads the lines the corpus test writes when CUDAL1_CORPUS_LOG is set (evaluator_test.cpp) and
prints, per family: cases (CPU / CUDA), how many hacks were caught (not accepted, with the
expected status and flags), and false positives (honest or robustness cases not given their
expected verdict). A case logged twice (CPU corpus rerun on CUDA) counts once per device.
"""
import collections
import json
import sys


def main(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                rows[(r["case"], r["device"], r.get("run_device", r["device"]))] = r
    fam = collections.OrderedDict()
    for (case, device, _), r in sorted(rows.items(), key=lambda kv: (kv[1]["family"], kv[0])):
        got_flags = {f["id"] for f in r["flags"]}
        right = (r["accepted"] == r["expected_accepted"] and r["status"] in r["expected_statuses"]
                 and all(f in got_flags for f in r["expected_flags"])
                 and not (r.get("max_speedup") and r["accepted"] and r.get("speedup", 0) > r["max_speedup"]))
        s = fam.setdefault(r["family"], {"cpu": 0, "cuda": 0, "caught": 0, "missed": [], "fp": [], "honest": 0})
        s[device] += 1
        hack = r["family"] not in ("honest", "robustness")
        if hack:
            if right:  # the expected verdict and flags (a warn-only family may stay accepted)
                s["caught"] += 1
            else:
                s["missed"].append(case)
        else:
            s["honest"] += 1
            if not right:
                s["fp"].append(case)
    print(f"{'family':<22} {'cases':>5} {'cpu':>4} {'cuda':>4} {'caught':>7} {'false pos.':>10}  notes")
    tot = collections.Counter()
    for name, s in fam.items():
        n = s["cpu"] + s["cuda"]
        hack = name not in ("honest", "robustness")
        caught = f"{s['caught']}/{n}" if hack else "-"
        fp = "-" if hack else f"{len(s['fp'])}/{n}"
        notes = ("missed: " + ", ".join(s["missed"])) if s["missed"] else ("wrong: " + ", ".join(s["fp"]) if s["fp"] else "")
        print(f"{name:<22} {n:>5} {s['cpu']:>4} {s['cuda']:>4} {caught:>7} {fp:>10}  {notes}")
        tot["hack" if hack else "other"] += n
        tot["caught"] += s["caught"] if hack else 0
        tot["fp"] += len(s["fp"])
    print(f"\nhack cases {tot['hack']}, caught {tot['caught']}; honest and robustness cases {tot['other']}, "
          f"wrong verdicts {tot['fp']}")
    return 0 if tot["caught"] == tot["hack"] and tot["fp"] == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
