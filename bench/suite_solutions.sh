#!/usr/bin/env bash
# bench/suite_solutions.sh CLI DEVICE [LEVELS] — every bundled task's solutions (the plain
# PyTorch one and, where there is one, the hand-written CUDA one) through `cudal1 eval`; one
# summary line per candidate: task, candidate kind, verdict, speedup. KINDS="cuda" runs only
# the hand-written CUDA solutions. Needs a GPU for the
# full-size tasks (on a CPU they take hours).
set -uo pipefail
cli=${1:-build/cudal1}
device=${2:-cuda}
levels=${3:-"1 2 3"}
root=$(cd "$(dirname "$0")/.." && pwd)

# The CUDA solutions' load_inline builds dominate (about a minute each on the H200 machine) and
# are kept per candidate content, so build them all first, side by side and untimed; the timed
# pass below then finds every build done and has the GPU to itself.
if [ "$device" != cpu ]; then
  for level in $levels; do ls "$root"/tasks/solutions/cuda/level"$level"/*.py 2>/dev/null; done |
    xargs -r -P "${PREBUILD_JOBS:-6}" -I{} sh -c \
      'l=$(basename "$(dirname "$1")"); "$2" eval --task "$3/tasks/$l/$(basename "$1")" --candidate "$1" \
         --device "$4" --no-timing --no-store >/dev/null 2>&1' _ {} "$cli" "$root" "$device"
fi

printf '%-42s %-7s %-13s %-14s %8s\n' task kind verdict status speedup
for level in $levels; do
  for task in "$root"/tasks/level"$level"/*.py; do
    name=$(basename "$task")
    for kind in ${KINDS:-plain cuda}; do
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
