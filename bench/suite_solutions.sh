#!/usr/bin/env bash
# bench/suite_solutions.sh CLI DEVICE [LEVELS] — every bundled task's solutions (the plain
# PyTorch one and, where there is one, the hand-written CUDA one) through `cudal1 eval`; one
# summary line per candidate: task, candidate kind, verdict, speedup. Needs a GPU for the
# full-size tasks (on a CPU they take hours).
set -uo pipefail
cli=${1:-build/cudal1}
device=${2:-cuda}
levels=${3:-"1 2 3"}
root=$(cd "$(dirname "$0")/.." && pwd)
printf '%-42s %-7s %-13s %-14s %8s\n' task kind verdict status speedup
for level in $levels; do
  for task in "$root"/tasks/level"$level"/*.py; do
    name=$(basename "$task")
    for kind in plain cuda; do
      sol="$root/tasks/solutions/level$level/$name"
      [ "$kind" = cuda ] && sol="$root/tasks/solutions/cuda/level$level/$name"
      [ -f "$sol" ] || continue
      [ "$kind" = cuda ] && [ "$device" = cpu ] && continue
      "$cli" eval --task "$task" --candidate "$sol" --device "$device" --json --force 2>/dev/null |
        python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)
except ValueError:
    print("%-42s %-7s %-13s %-14s %8s" % (sys.argv[1], sys.argv[2], "tool-error", "-", "-")); sys.exit()
s = r["speedup"].get("eager")
print("%-42s %-7s %-13s %-14s %8s" % (sys.argv[1], sys.argv[2], "accepted" if r["accepted"] else "NOT accepted",
      r["status"], "%.2fx" % s if s else "-"))' "level$level/${name%.py}" "$kind"
    done
  done
done
