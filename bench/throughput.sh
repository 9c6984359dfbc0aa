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
# Mode "queue-freeze" is the queue with CUDAL1_FREEZE_LANES=1 (a timing lane stops the others'
# processes instead of waiting for their stages): MODES="queue queue-freeze stock" compares both.
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

# Every task's lint first, so neither of cudal1's paths pays for it (CUDA-L1's own evaluator
# has no lint: mode cuda-l1 alone needs no cudal1 binary, CLI may be "-").
cudal1_modes=' (queue|queue-freeze|stock) '
[[ " ${MODES:-queue stock} " =~ $cudal1_modes ]] && python3 -c 'import json,sys; [print(json.loads(l)["task"]) for l in open(sys.argv[1])]' "$out/pairs.jsonl" | sort -u |
  head -n "${LIMIT:-1000000}" | xargs -n 1 -P "${LINT_PARALLEL:-4}" "$cli" lint-task --device "$device" >/dev/null 2>&1

sample_gpu() {  # $1: file; one utilisation sample every 200 ms until killed
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 >"$1" 2>/dev/null
}
# STOCK_DEADLINE=S: the stock way one candidate per `cudal1 batch --stock` (a fresh process per
# candidate either way), starting none once the script has run S seconds, so its serial run spreads over several
# device calls with one OUT_DIR; the next call goes on with the candidates left. Its wall time is
# the sum of the candidates' batch walls, its summary written once every candidate has one.
run_stock_resumable() {
  local id line
  touch "$out/results_stock.jsonl" "$out/walls_stock.jsonl"
  while IFS= read -r line; do
    id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$line")
    grep -qF "\"id\": \"$id\"" "$out/walls_stock.jsonl" && continue
    if [ $SECONDS -ge "$STOCK_DEADLINE" ]; then
      echo "stock: deadline reached; run MODES=stock again with the same OUT_DIR to go on" >&2
      return 0
    fi
    printf '%s\n' "$line" >"$out/pair_stock_one.jsonl"
    sample_gpu "$out/gpu_stock.part" & sampler=$!
    "$cli" batch --pairs "$out/pair_stock_one.jsonl" --stock --device "$device" --out "$out/results_stock.jsonl" \
      --json >"$out/summary_stock_one.json" 2>>"$out/log_stock.txt"
    kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
    [ -f "$out/gpu_stock.part" ] && cat "$out/gpu_stock.part" >>"$out/gpu_stock.txt"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[2])); print(json.dumps({"id": sys.argv[1], "wall_s": s["wall_s"]}))' \
      "$id" "$out/summary_stock_one.json" >>"$out/walls_stock.jsonl" || return 1
  done < <(head -n "${LIMIT:-1000000}" "$out/pairs.jsonl")
  python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
walls = [json.loads(l)["wall_s"] for l in open(f"{out}/walls_stock.jsonl")]
results = [json.loads(l) for l in open(f"{out}/results_stock.jsonl")]
loads = sorted((r.get("result") or {}).get("phase_seconds", {}).get("candidate", 0.0) for r in results if r.get("result"))
wall = sum(walls)
json.dump({"mode": "stock", "evaluations": len(walls), "wall_s": wall, "evaluations_per_hour": 3600 * len(walls) / wall,
           "load_s_median": statistics.median(loads) if loads else 0.0, "resumable": True}, open(f"{out}/summary_stock.json", "w"))
PY
}

for mode in ${MODES:-queue stock}; do
  case $mode in
    stock) flag=--stock freeze=0 ;;
    queue) flag="--lanes ${LANES:-1}" freeze=0 ;;
    queue-freeze) flag="--lanes ${LANES:-1}" freeze=1 ;;
    cuda-l1)  # CUDA-L1's own evaluator, serially, one fresh process per row; CUDA_L1_DEADLINE as STOCK_DEADLINE
      python3 "$root/bench/cuda_l1_own_eval.py" "$out/pairs.jsonl" "${CUDA_L1_EVAL:?set CUDA_L1_EVAL to the path of eval_cuda.py}" \
        "$out" --deadline $(( ${CUDA_L1_DEADLINE:-1000000} - SECONDS )) 2>>"$out/log_cuda-l1.txt"
      continue ;;
    *) echo "throughput.sh: MODES holds \"$mode\"; the modes are queue, queue-freeze, stock and cuda-l1" >&2; exit 2 ;;
  esac
  # Each path starts with no build cache: a build it needs is a cache miss.
  export CUDAL1_CACHE=$out/cache_$mode
  # The queue's precompiled headers are built once per machine, torch and compiler, then serve
  # every later build: made here, outside the timed run, by building fixtures that are not in the
  # set (WARM_PCH= skips it): one clang compiles, and one only g++ does, which starts g++'s header
  # (a main.cpp clang refuses compiles against it, and its error decides). Every module of the set
  # is still a cache miss.
  warm=${WARM_PCH-$root/tests/fixtures/cuda/ok_scale_add_float4_cuda.py $root/tests/fixtures/build/gxx_only_scale_add_cuda.py}
  if [ $mode != stock ] && [ -n "$warm" ] && [ "$device" != cpu ] && [ ! -s "$out/warmup.txt" ]; then
    t0=$SECONDS
    for f in $warm; do "$cli" build "$f" --device "$device" >/dev/null 2>&1; done
    echo "toolchain warm-up before the queue's run (precompiled headers): $((SECONDS - t0)) s" >"$out/warmup.txt"
  fi
  if [ $mode = stock ] && [ -n "${STOCK_DEADLINE:-}" ]; then
    run_stock_resumable
    continue
  fi
  sample_gpu "$out/gpu_$mode.txt" & sampler=$!
  CUDAL1_FREEZE_LANES=$freeze "$cli" batch --pairs "$out/pairs.jsonl" ${LIMIT:+--limit "$LIMIT"} $flag --device "$device" --out "$out/results_$mode.jsonl" --json >"$out/summary_$mode.json" 2>"$out/log_$mode.txt"
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
done

have_queue=; { [ -s "$out/summary_queue.json" ] || [ -s "$out/summary_queue-freeze.json" ]; } && have_queue=1
have_stock=; [ -s "$out/summary_stock.json" ] && have_stock=1
have_l1=; [ -s "$out/summary_cuda-l1.json" ] && have_l1=1
[ -n "$have_queue$have_stock" ] && [ -n "$have_queue" -a -n "$have_stock" -o -n "$have_l1" ] ||
  { echo "one path so far: run the others with MODES and the same OUT_DIR"; exit 0; }
[ -s "$out/warmup.txt" ] && cat "$out/warmup.txt"
[ -n "$have_queue" ] && [ -n "$have_stock" ] && python3 - "$out" "${LANES:-1}" <<'PY'
import json, os, statistics, sys
out, lanes_per_device = sys.argv[1], int(sys.argv[2])
modes = [m for m in ("queue", "queue-freeze", "stock") if os.path.exists(f"{out}/summary_{m}.json")]
queues = [m for m in modes if m != "stock"]
rows, verdicts, speed = {}, {}, {}
for mode in modes:
    s = json.load(open(f"{out}/summary_{mode}.json"))
    samples = [int(x) for x in open(f"{out}/gpu_{mode}.txt").read().split() if x.strip().isdigit()] \
        if os.path.exists(f"{out}/gpu_{mode}.txt") else []
    idle = sum(1 for x in samples if x == 0) / len(samples) if samples else float("nan")
    results = [json.loads(l) for l in open(f"{out}/results_{mode}.jsonl")]
    verdicts[mode] = {}
    for r in results:
        res = r.get("result")
        verdicts[mode][r["id"]] = (res["status"], res["accepted"]) if res else ("error", False)
        e = ((res or {}).get("speedup") or {}).get("eager")
        if e:
            speed.setdefault(r["id"], {})[mode] = e
    # Build time on a cache miss: the build service's per-module compile time (queue); the
    # candidate's load, which is its in-process build, for candidates that built (stock).
    if "builds" in s:
        b = s["builds"]
        build = (b["compile_s_median"], b["compile_s_p90"], b["compiled"])
    else:
        loads = []
        for r in results:
            res = r.get("result") or {}
            if "load_inline" in open(res.get("candidate", {}).get("path", "/dev/null"), errors="replace").read():
                loads.append(res.get("phase_seconds", {}).get("candidate", 0.0))
        loads.sort()
        pick = lambda q: loads[min(len(loads) - 1, int(q * (len(loads) - 1) + 0.5))] if loads else float("nan")
        build = (pick(0.5), pick(0.9), len(loads))
    rows[mode] = (s["evaluations"], s["wall_s"], s["evaluations_per_hour"], build, s["load_s_median"], idle)
    # Where each path's lane time went: the median seconds of each evaluation phase.
    phases = {}
    for r in results:
        for k, v in ((r.get("result") or {}).get("phase_seconds") or {}).items():
            phases.setdefault(k, []).append(v)
    rows[mode] += (", ".join(f"{k} {statistics.median(v):.1f}" for k, v in sorted(phases.items())),)
print(f"{'path':<12} {'evals':>5} {'wall s':>8} {'evals/hour':>10} {'builds':>6} {'build median s':>14} {'build p90 s':>11} {'load median s':>13} {'GPU idle':>8}")
for m in modes:
    n, w, e, (bmed, bp90, bn), lmed, idle, _ = rows[m]
    print(f"{m:<12} {n:>5} {w:>8.1f} {e:>10.0f} {bn:>6} {bmed:>14.1f} {bp90:>11.1f} {lmed:>13.1f} {100*idle:>7.1f}%")
for m in modes:
    print(f"{m} phases (median s): {rows[m][6]}")
# A queue's wall on a set no larger than its lanes is one evaluation's latency under the whole
# set's load, not a rate; the rate shows once every lane has finished one (docs/throughput.md).
for m in queues:
    results = [json.loads(l) for l in open(f"{out}/results_{m}.jsonl")]
    done = sorted(r["finished_s"] for r in results if "finished_s" in r)
    if not done:
        continue
    lanes = lanes_per_device * len({r["device"] for r in results})
    line = f"{m} results came back at (s): first {done[0]:.1f}, median {statistics.median(done):.1f}, last {done[-1]:.1f}; "
    if len(done) > lanes and done[-1] > done[lanes - 1]:
        rate = 3600 * (len(done) - lanes) / (done[-1] - done[lanes - 1])
        line += f"{rate:.0f} evaluations/hour after the first {lanes} results, as many as lanes ({rate / rows['stock'][2]:.1f}x the stock way's)"
    else:
        line += f"a set of {len(done)} on {lanes} lanes shows latency only, no rate"
    print(line)
# Each queue mode against the stock way: the same candidates' speedups (lanes sharing a GPU must
# not move them), evaluations an hour, and whether every verdict agrees.
st = verdicts["stock"]
for m in queues:
    both = [(k, v[m], v["stock"]) for k, v in speed.items() if m in v and "stock" in v]
    if both:
        print(f"speedup vs eager, {m} / stock: " + ", ".join(f"{k.split('/')[-1]} {q:.2f}/{s:.2f}" for k, q, s in both))
        ratios = sorted(q / s for _, q, s in both)
        print(f"  {m} over stock, per candidate: median {statistics.median(ratios):.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}")
    q = verdicts[m]
    differ = [k for k in q if q[k] != st.get(k)]
    print(f"{m}: {rows[m][2] / rows['stock'][2]:.1f}x the stock way's evaluations/hour; verdicts differ on {len(differ)} of {len(q)}"
          + (": " + ", ".join(f"{k} {q[k]} vs {st.get(k)}" for k in differ) if differ else ""))
PY
# CUDA-L1's own evaluator beside cudal1's ways: its rate, and each candidate's verdict and speedup
# side by side (cudal1's status and eager speedup; CUDA-L1's outcome and mean score).
[ -n "$have_l1" ] && python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
ways = [m for m in ("queue-freeze", "queue", "stock", "cuda-l1") if os.path.exists(f"{out}/summary_{m}.json")]
print(f"{'way':<13} {'evals':>5} {'wall s':>8} {'evals/hour':>10}")
for m in ways:
    s = json.load(open(f"{out}/summary_{m}.json"))
    print(f"{m:<13} {s['evaluations']:>5} {s['wall_s']:>8.1f} {s['evaluations_per_hour']:>10.0f}")
def cudal1_way(mode):
    got = {}
    for l in open(f"{out}/results_{mode}.jsonl"):
        r = json.loads(l)
        res = r.get("result") or {}
        flags = [f["id"] for f in res.get("flags", []) if f.get("severity") == "block"]
        got[r["id"]] = (res.get("status", "error") + (f" ({', '.join(flags)})" if flags else ""),
                        (res.get("speedup") or {}).get("eager"), bool(res.get("accepted")))
    return got
table = {m: cudal1_way(m) for m in ways if m != "cuda-l1"}
table["cuda-l1"] = {}
for l in open(f"{out}/results_cuda-l1.jsonl"):
    r = json.loads(l)
    table["cuda-l1"][r["id"]] = (r["verdict"], r.get("speedup"), r["verdict"] == "ok")
ids = [json.loads(l)["id"] for l in open(f"{out}/pairs.jsonl")]
print("\n| candidate | " + " | ".join(ways) + " |\n|---|" + "---|" * len(ways))
disagree = {m: [] for m in ways if m != "cuda-l1"}
for i in ids:
    cells = []
    for m in ways:
        v = table[m].get(i)
        cells.append("-" if v is None else v[0] + (f" {v[1]:.2f}x" if v[1] else ""))
    print(f"| {i} | " + " | ".join(cells) + " |")
    l1 = table["cuda-l1"].get(i)
    for m in disagree:
        mine = table[m].get(i)
        if l1 and mine and l1[2] != mine[2]:
            disagree[m].append(i)
for m, ids_ in disagree.items():
    print(f"{m} and CUDA-L1's own evaluator accept differently on {len(ids_)} of {len(table[m])}" + (": " + ", ".join(ids_) if ids_ else ""))
PY
