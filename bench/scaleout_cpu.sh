#!/usr/bin/env bash
# bench/scaleout_cpu.sh [CUDAL1] [OUT_DIR] — evaluations per hour through a Redis cluster with 1, 2
# and 3 CPU workers (one lane each) on this machine, over the same set: the thirty fixtures of
# tests/fixtures/cluster/thirty.txt (REPEAT times each, default 1). A warm-up pass comes first, so
# no count pays for cold caches. Prints a table (workers | wall s | evaluations/hour | ratio to one
# worker) and writes the rows to OUT_DIR/scaleout.jsonl. The workers share this machine's cores:
# the ratios say how far one host's cores carry more workers, not how hosts add up.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$here/build/cudal1}
out=${2:-$here/build/scaleout}
repeat=${REPEAT:-1}
mkdir -p "$out"
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$data" --appendonly yes --appendfsync always --save "" \
  --daemonize yes --logfile "$data/redis.log"
url=redis://127.0.0.1:$port
workers=()
cleanup() {
  for p in "${workers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$data"
}
trap cleanup EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

fixtures=$here/tests/fixtures
pairs=$data/pairs.txt
for r in $(seq "$repeat"); do
  grep -v '^#' "$fixtures/cluster/thirty.txt" | while read -r name; do
    f=$fixtures/candidates/$name.py
    echo "$fixtures/tasks/$(sed -n 's/^# task: //p' "$f" | head -1) $f"
  done
done >"$pairs"
# A copy of each candidate per repeat: a batch names its jobs by candidate path, one job each.
if [ "$repeat" -gt 1 ]; then
  awk -v d="$data" '{ n[$2]++; c = d "/r" n[$2] "_" gensub(/.*\//, "", 1, $2); system("cp " $2 " " c); print $1, c }' \
    "$pairs" >"$pairs.x" && mv "$pairs.x" "$pairs"
fi

start_workers() {
  for i in $(seq "$1"); do
    "$cli" worker --redis "$url" --device cpu --lanes 1 --no-store --name "bench-w$i" \
      --files-dir "$data/files-w$i" >"$out/worker$i.log" 2>&1 &
    workers+=($!)
  done
}
stop_workers() {
  for p in "${workers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${workers[@]}"; do wait "$p" 2>/dev/null || true; done
  workers=()
}

start_workers 1
head -n 3 "$pairs" >"$data/warm.txt"
"$cli" batch --redis "$url" --pairs "$data/warm.txt" --no-store --json >/dev/null 2>"$out/warmup.log"
stop_workers

: >"$out/scaleout.jsonl"
for w in 1 2 3; do
  start_workers "$w"
  "$cli" batch --redis "$url" --pairs "$pairs" --no-store --in-flight 8 --json 2>"$out/batch$w.log" |
    python3 -c 'import json, sys; j = json.load(sys.stdin); print(json.dumps({"workers": int(sys.argv[1]), "evaluations": j["evaluations"], "wall_s": j["wall_s"], "evaluations_per_hour": j["evaluations_per_hour"], "statuses": j["statuses"]}))' \
      "$w" >>"$out/scaleout.jsonl"
  stop_workers
done

python3 - "$out/scaleout.jsonl" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = rows[0]["evaluations_per_hour"]
print(f"cluster throughput on this machine ({sys.argv[2]} cores), {rows[0]['evaluations']} evaluations per run")
print(f"{'workers':>7}  {'wall s':>7}  {'evaluations/hour':>16}  {'ratio':>6}  statuses")
for r in rows:
    print(f"{r['workers']:>7}  {r['wall_s']:>7.1f}  {r['evaluations_per_hour']:>16.0f}  {r['evaluations_per_hour'] / base:>5.2f}x  "
          + ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())))
PY
