#!/usr/bin/env bash
# bench/throughput.sh CUDAL1 [N_CUDA_L1] [OUT_DIR] — evaluation throughput, side by side in one
# run on one machine: the same mixed candidate set through (a) `cudal1 batch` (queue, prebuilt
# and cached builds, prepared processes) and (b) `cudal1 batch --stock` (one evaluation after the
# other, each building its own load_inline extensions in a fresh process, as KernelBench and
# CUDA-L1 do). The set: every bundled task's solutions (plain PyTorch and CUDA) and the first
# N_CUDA_L1 (default 12) rows of $CUDA_L1_JSONL with a custom_code. Prints evaluations per hour,
# median and p90 candidate load time (builds included), the share of time the GPU sat idle
# (nvidia-smi samples with no kernel running) and whether the two paths agree on every verdict.
# N_PLAIN / N_CUDA cap the bundled solutions taken; LANES: the queue's lanes per GPU (their checks
# overlap, their timing takes turns: core/device_gate.h); MODES="stock" then MODES="queue" with one
# OUT_DIR runs the paths in two calls (the pairs file is reused), the table comes after both.
set -uo pipefail
cli=$1 n_l1=${2:-12} out=${3:-$(mktemp -d)}
device=${DEVICE:-cuda}  # DEVICE=cpu LIMIT=4: a smoke test of the script itself on a machine without a GPU
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export CUDAL1_DB=$out/results.db
# The pairs file is kept from an earlier call (MODES split over two); the CUDA-L1 rows' files are
# written every time, since a later call may run on a fresh machine that has only the pairs file.
python3 - "$root" "$out" "$n_l1" "${CUDA_L1_JSONL:-}" "${N_PLAIN:-1000}" "${N_CUDA:-1000}" <<'PY' >"$out/pairs.new"
import json, os, sys
root, out, n, src = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
limit = {"plain": int(sys.argv[5]), "cuda": int(sys.argv[6])}
seen = {"plain": 0, "cuda": 0}
for level in ("level1", "level2", "level3"):
    for name in sorted(os.listdir(f"{root}/tasks/{level}")):
        for kind, sub in (("plain", f"solutions/{level}"), ("cuda", f"solutions/cuda/{level}")):
            cand = f"{root}/tasks/{sub}/{name}"
            if os.path.exists(cand) and seen[kind] < limit[kind]:
                seen[kind] += 1
                print(json.dumps({"id": f"{level}/{name[:-3]}:{kind}", "task": f"{root}/tasks/{level}/{name}", "candidate": cand}))
taken = 0
for line in open(src) if src else []:
    r = json.loads(line)
    if taken >= n or not r.get("custom_code"):
        continue
    d = f"{out}/cuda_l1/level{r['level_id']}_task{r['task_id']}"
    os.makedirs(d, exist_ok=True)
    open(f"{d}/task.py", "w").write(r["ref_code"])
    open(f"{d}/candidate.py", "w").write(r["custom_code"])
    print(json.dumps({"id": f"cuda-l1/level{r['level_id']}/task{r['task_id']}", "task": f"{d}/task.py", "candidate": f"{d}/candidate.py"}))
    taken += 1
PY
if [ -s "$out/pairs.jsonl" ]; then rm -f "$out/pairs.new"; else mv "$out/pairs.new" "$out/pairs.jsonl"; fi
echo "$(wc -l <"$out/pairs.jsonl") candidates" >&2

# Every task's lint first, so neither path pays for it.
python3 -c 'import json,sys; [print(json.loads(l)["task"]) for l in open(sys.argv[1])]' "$out/pairs.jsonl" | sort -u |
  head -n "${LIMIT:-1000000}" | xargs -n 1 -P "${LINT_PARALLEL:-4}" "$cli" lint-task --device "$device" >/dev/null 2>&1

sample_gpu() {  # $1: file; one utilisation sample every 200 ms until killed
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 >"$1" 2>/dev/null
}
for mode in ${MODES:-queue stock}; do
  flag="--lanes ${LANES:-1}"; [ $mode = stock ] && flag=--stock
  # Each path starts with no build cache: a build it needs is a cache miss.
  export CUDAL1_CACHE=$out/cache_$mode
  # The queue's precompiled headers are built once per machine, torch and compiler, then serve
  # every later build: made here, outside the timed run, by building a fixture that is not in the
  # set (WARM_PCH= skips it). Every module of the set is still a cache miss.
  warm=${WARM_PCH-$root/tests/fixtures/cuda/ok_scale_add_float4_cuda.py}
  if [ $mode = queue ] && [ -n "$warm" ] && [ "$device" != cpu ] && [ ! -s "$out/warmup.txt" ]; then
    t0=$SECONDS
    "$cli" build "$warm" --device "$device" >/dev/null 2>&1
    echo "toolchain warm-up before the queue's run (precompiled headers): $((SECONDS - t0)) s" >"$out/warmup.txt"
  fi
  sample_gpu "$out/gpu_$mode.txt" & sampler=$!
  "$cli" batch --pairs "$out/pairs.jsonl" ${LIMIT:+--limit "$LIMIT"} $flag --device "$device" --out "$out/results_$mode.jsonl" --json >"$out/summary_$mode.json" 2>"$out/log_$mode.txt"
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
done

[ -s "$out/summary_queue.json" ] && [ -s "$out/summary_stock.json" ] || { echo "one path so far: run the other with MODES and the same OUT_DIR"; exit 0; }
[ -s "$out/warmup.txt" ] && cat "$out/warmup.txt"
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows, verdicts = [], {}
for mode in ("queue", "stock"):
    s = json.load(open(f"{out}/summary_{mode}.json"))
    samples = [int(x) for x in open(f"{out}/gpu_{mode}.txt").read().split() if x.strip().isdigit()]
    idle = sum(1 for x in samples if x == 0) / len(samples) if samples else float("nan")
    verdicts[mode] = {}
    for l in open(f"{out}/results_{mode}.jsonl"):
        r = json.loads(l)
        res = r.get("result")
        verdicts[mode][r["id"]] = (res["status"], res["accepted"]) if res else ("error", False)
    # Build time on a cache miss: the build service's per-module compile time (queue); the
    # candidate's load, which is its in-process build, for candidates that built (stock).
    if "builds" in s:
        b = s["builds"]
        build = (b["compile_s_median"], b["compile_s_p90"], b["compiled"])
    else:
        loads = []
        for l in open(f"{out}/results_{mode}.jsonl"):
            res = json.loads(l).get("result") or {}
            if "load_inline" in open(res.get("candidate", {}).get("path", "/dev/null"), errors="replace").read():
                loads.append(res.get("phase_seconds", {}).get("candidate", 0.0))
        loads.sort()
        pick = lambda q: loads[min(len(loads) - 1, int(q * (len(loads) - 1) + 0.5))] if loads else float("nan")
        build = (pick(0.5), pick(0.9), len(loads))
    rows.append((mode, s["evaluations"], s["wall_s"], s["evaluations_per_hour"], build, s["load_s_median"], idle))
print(f"{'path':<7} {'evals':>5} {'wall s':>8} {'evals/hour':>10} {'builds':>6} {'build median s':>14} {'build p90 s':>11} {'load median s':>13} {'GPU idle':>8}")
for m, n, w, e, (bmed, bp90, bn), lmed, idle in rows:
    print(f"{m:<7} {n:>5} {w:>8.1f} {e:>10.0f} {bn:>6} {bmed:>14.1f} {bp90:>11.1f} {lmed:>13.1f} {100*idle:>7.1f}%")
# Where each path's lane time went: the median seconds of each evaluation phase.
for mode in ("queue", "stock"):
    phases = {}
    for l in open(f"{out}/results_{mode}.jsonl"):
        for k, v in ((json.loads(l).get("result") or {}).get("phase_seconds") or {}).items():
            phases.setdefault(k, []).append(v)
    print(f"{mode} phases (median s): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in sorted(phases.items())))
# The two paths' speedups for the same candidates: lanes sharing a GPU must not move them.
speed = {}
for mode in ("queue", "stock"):
    for l in open(f"{out}/results_{mode}.jsonl"):
        r = json.loads(l); res = r.get("result") or {}
        e = (res.get("speedup") or {}).get("eager")
        if e: speed.setdefault(r["id"], {})[mode] = e
both = [(k, v["queue"], v["stock"]) for k, v in speed.items() if len(v) == 2]
if both:
    print("speedup vs eager, queue / stock: " + ", ".join(f"{k.split('/')[-1]} {q:.2f}/{s:.2f}" for k, q, s in both))
q, s = verdicts["queue"], verdicts["stock"]
differ = [k for k in q if q[k] != s.get(k)]
print(f"speedup of evaluations/hour: {rows[0][3] / rows[1][3]:.1f}x; verdicts differ on {len(differ)} of {len(q)}"
      + (": " + ", ".join(f"{k} {q[k]} vs {s.get(k)}" for k in differ) if differ else ""))
PY
