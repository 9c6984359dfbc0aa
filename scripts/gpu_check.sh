#!/usr/bin/env bash
# scripts/gpu_check.sh [OUT_DIR] — everything that needs a GPU: build (or use the static build
# carried in build-static/), run every GPU test, run the GPU benchmarks, and print a short table
# last. Logs and the results store go to OUT_DIR ($OUT, else build/gpu-out).
# STAGES picks what runs (default "tests bench tasks"; "cuda-corpus" runs only the CUDA-only fixtures, "gpu-unit"
# only the timing and CUDA graph tests; "builds",
# "throughput", "baselines", "audit" (BENCH_JSONL) and "enrich" (ENRICH_JSONL) measure the queue, the baselines and CUDA-L1's
# kernels; "cluster" runs a worker against a Redis on the machine (.redis/, scripts/fetch_redis.sh);
# "aa-sandbox" the A/A figure under each confinement; "aa" the A/A matrix (AA_TASKS: each task's Model as a candidate, plainly and through
# each baseline's transformation, beside that baseline); "trainer" the trainer's three stages; "optimize"
# runs the loop with the built-in policy over the suite (and a replay run with REPLAY_JSONL); "lint" lints
# every row of LINT_JSONL; "solutions" is long: every bundled task's
# solutions through the evaluator, long, so it runs on its own; SOLUTION_LEVELS="1" or "2 3"
# splits it to fit a 10-minute device call).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-${OUT:-$root/build/gpu-out}}
mkdir -p "$out"

# Binaries carried compressed (scripts/pack_for_device.sh): unpacked where missing or older.
for z in build-static/*.xz build-gpu-trainer/*.xz; do
  [ -f "$z" ] || continue
  [ -x "${z%.xz}" ] && [ "${z%.xz}" -nt "$z" ] && continue
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$z" "${z%.xz}" &&
    chmod +x "${z%.xz}"
done

# Debian's clang, carried as .deb files (scripts/fetch_clang.sh): unpacked once into .clang-root,
# run through a wrapper that finds its own libraries; the build service's fast path compiles the
# TUs that include torch with it (docs/builds.md). CUDAL1_CLANG=off keeps g++.
if [ -z "${CUDAL1_CLANG:-}" ] && { compgen -G ".clang/*.deb" >/dev/null || [ -x .clang-root/clang++ ]; }; then
  if [ ! -x .clang-root/clang++ ]; then
    mkdir -p .clang-root
    for f in .clang/*.deb; do  # dpkg-deb where the image has it, else binutils' ar (g++ needs binutils)
      if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" .clang-root; else ar p "$f" data.tar.xz | tar -xJ -C .clang-root; fi ||
        echo "gpu_check: could not unpack $f" >&2
    done
    real=$(ls .clang-root/usr/lib/llvm-*/bin/clang++ 2>/dev/null | head -1)
    printf '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH=$here/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/%s" "$@"\n' \
      "${real#.clang-root/}" >.clang-root/clang++
    chmod +x .clang-root/clang++
  fi
  if .clang-root/clang++ --version >/dev/null 2>&1; then
    export CUDAL1_CLANG=$root/.clang-root/clang++
  else
    echo "gpu_check: the carried clang does not run here; builds use g++:" >&2
    .clang-root/clang++ --version 2>&1 | tail -3 >&2
  fi
fi

# Debian's bubblewrap, carried as a .deb (scripts/fetch_bwrap.sh): the sandbox every worker that
# runs code from outside starts in (docs/defences.md). Without it the sandbox falls back, and
# says so in every result's provenance.
if [ -z "${CUDAL1_BWRAP:-}" ] && ! command -v bwrap >/dev/null && compgen -G ".bwrap/*.deb" >/dev/null; then
  if [ ! -x .bwrap-root/usr/bin/bwrap ]; then
    mkdir -p .bwrap-root
    for f in .bwrap/*.deb; do
      if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" .bwrap-root; else ar p "$f" data.tar.xz | tar -xJ -C .bwrap-root; fi ||
        echo "gpu_check: could not unpack $f" >&2
    done
  fi
  [ -x .bwrap-root/usr/bin/bwrap ] && export CUDAL1_BWRAP=$root/.bwrap-root/usr/bin/bwrap
fi

# A carried build serves when it has what the stages run: the GPU tests' binary only for the
# stages that run them (a call's carry is limited, so the others may leave it behind).
bin=
for d in build-static build; do
  [ -x "$d/cudal1" ] || continue
  if [ -x "$d/cudal1_gpu_tests" ] || [[ ! " ${STAGES:-tests} " =~ \ (tests|cuda-corpus|gpu-unit)\  ]]; then bin=$d; break; fi
done
if [ -z "$bin" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j "$(nproc)" || exit 1
  bin=build
fi

export CUDAL1_PY_DIR=$root/src/runner/py CUDAL1_FIXTURES_DIR=$root/tests/fixtures
# Bulky outputs (caches, generated files, the store) stay in the scratch; only summaries go to
# $out, which comes back: the device brings back 8 files at most, and any beyond are dropped
# without a choice of which, so a stage writes few files there and only when it runs.
scratch=${GPU_SCRATCH:-/tmp/cudal1-gpu}
mkdir -p "$scratch"
export CUDAL1_CACHE=${CUDAL1_CACHE:-/tmp/cudal1-cache} CUDAL1_DB=${CUDAL1_DB:-$scratch/results.db}
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # build for the card in use only
export MAX_JOBS=${MAX_JOBS:-4}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "host compilers: $(c++ --version | head -1); clang: $([ -n "${CUDAL1_CLANG:-}" ] && "$CUDAL1_CLANG" --version | head -1 || echo none)"
  echo "sandbox: $(bash scripts/sandbox_probe.sh "${CUDAL1_BWRAP:-}" | grep -c '^yes') checks pass, $(bash scripts/sandbox_probe.sh "${CUDAL1_BWRAP:-}" | grep '^no' | tr '\n' ';')"
} | tee "$out/gpu.txt"

# One bundled candidate through the whole sandbox on the GPU (about 10 s) before any stage: a
# sandbox rule that stops the CUDA driver (it once refused the Unix sockets cuInit opens) then
# costs this check, not a call's worth of evaluations that all fail. PREFLIGHT=0 skips it.
if [ "${PREFLIGHT:-1}" != 0 ]; then
  t0=$SECONDS
  pre=$(timeout 180 "$bin/cudal1" eval --task tests/fixtures/tasks/scale_add.py \
    --candidate tests/fixtures/candidates/ok_scale_add_alpha.py --device cuda --no-timing --no-store --json 2>&1)
  if grep -q '"accepted":true' <<<"$pre"; then
    echo "cuda in the sandbox: a bundled candidate accepted in $((SECONDS - t0)) s" | tee -a "$out/gpu.txt"
  else
    { echo "cuda in the sandbox: a bundled candidate was not accepted; no stage runs:"; tail -c 1500 <<<"$pre"; } |
      tee -a "$out/gpu.txt"
    exit 1
  fi
fi

stages=${STAGES:-tests bench tasks}
has() { [[ " $stages " == *" $1 "* ]]; }
# Seconds left until DEADLINE seconds after this script started (unpacking and the sandbox's
# checks included), at least 30: a deadline planned against a call's limit holds whatever came first.
until_deadline() { local left=$(($1 - SECONDS)); echo $((left > 30 ? left : 30)); }
# The grace after DEADLINE ($1), GRACE ($2) at most; with CALL_LIMIT (the device call's limit, in
# seconds) no more than leaves 25 s before it for the reports and the store's last copy: a grace
# that outlived the call lost the store's last minute and the stage's own output.
grace_after() {
  local grace=$2
  if [ -n "${CALL_LIMIT:-}" ]; then
    local room=$((CALL_LIMIT - $1 - 25))
    grace=$((room < grace ? room : grace))
  fi
  echo $((grace > 10 ? grace : 10))
}
# The queue's own limit (`--finish-within`) for a stage stopped at DEADLINE ($1) with GRACE ($2):
# the time left until the kill after the grace, less 30 s for the stage's report. No evaluation
# starts that the run times so far say would end after it, so the kill cuts fewer in hand.
finish_within() { local left=$(($(until_deadline "$1") + $(grace_after "$1" "$2") - 30)); echo $((left > 30 ? left : 30)); }
verdict_secs=0

if has tests || has cuda-corpus || has gpu-unit; then
  : >"$out/gpu_tests.log"
  export CUDAL1_CORPUS_LOG=$out/corpus.jsonl  # one line per case: bench/corpus_table.py reads it
  : >"$CUDAL1_CORPUS_LOG"
fi
# Verdicts on CUDA, in shards: they judge verdicts, not speed, so shards share the GPU.
# $1: a gtest filter.
corpus() {
  local shards=${SHARDS:-4} start=$SECONDS
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin/cudal1_gpu_tests" --gtest_filter="$1" \
      >"$out/shard_$i.log" 2>&1 &
  done
  wait
  cat "$out"/shard_*.log >>"$out/gpu_tests.log" && rm -f "$out"/shard_*.log
  verdict_secs=$((verdict_secs + SECONDS - start))
}

# 1a. Only the CUDA-only fixtures (stage cuda-corpus), when time is short.
if has cuda-corpus; then
  # CUDA_CORPUS="name ..." narrows it to those fixtures (a re-check of a few cases in a short call).
  names=$(for f in ${CUDA_CORPUS:-tests/fixtures/cuda/*.py}; do printf 'Corpus/*/%s:' "$(basename "$f" .py)"; done)
  corpus "${names%:}"
fi

# 1. Verdicts on CUDA for the whole corpus.
has tests && corpus 'Corpus/*'

# 2. Timing checks with the GPU to themselves; the CUDA graph versions of tasks (cudal1 enrich).
# (Stage gpu-unit runs only these.)
if has tests || has gpu-unit; then
  "$bin/cudal1_gpu_tests" --gtest_filter='Timing.*:GraphTaskEval.*' >>"$out/gpu_tests.log" 2>&1
fi

# 3. Benchmark: honest candidates, three fresh evaluations each.
has bench && bench/eval_repeat.sh "$bin/cudal1" cuda 3 >"$out/bench.txt" 2>&1

# 4. The task suite: eager time and speed-of-light fraction of every task on this GPU.
has tasks && "$bin/cudal1" tasks list --device cuda --eager >"$out/tasks_sol.txt" 2>&1

# 4b. Degenerate-task lint over a CUDA-L1 file (stage lint; LINT_JSONL names it, carried in).
has lint && bench/lint_suite.sh "$bin/cudal1" "${LINT_JSONL:?set LINT_JSONL}" cuda "${LINT_SHARDS:-10}" "$out/lint" >"$out/lint.txt" 2>&1

# 4c. The build service's two paths on the CUDA fixtures that build (stage builds).
if has builds; then
  DEVICE=cuda ARCH=$TORCH_CUDA_ARCH_LIST bench/build_paths.sh "$bin/cudal1" "$scratch/builds" \
    $(grep -l load_inline tests/fixtures/cuda/*.py | head -n "${BUILD_LIMIT:-4}") \
    >"$out/builds.txt" 2>&1 < /dev/null
fi

# 4d. Throughput: the queue against the stock way (stage throughput; THROUGHPUT_MODES splits it
# over two calls with the same OUT, N_CUDA_L1 rows from CUDA_L1_JSONL; "queue queue-freeze stock"
# adds the queue with freezing).
# THROUGHPUT_RESTORE: an earlier call's throughput_files.tgz (from a machine since given back) to go
# on from: the pairs, the stock way's and CUDA-L1's own evaluator's rows so far.
if has throughput && [ -n "${THROUGHPUT_RESTORE:-}" ] && [ ! -d "$scratch/throughput" ]; then
  mkdir -p "$scratch/throughput" && tar -xzf "$THROUGHPUT_RESTORE" -C "$scratch/throughput"
fi
has throughput && MODES=${THROUGHPUT_MODES:-queue stock} bench/throughput.sh "$bin/cudal1" "${N_CUDA_L1:-6}" "$scratch/throughput" \
  >"$out/throughput.txt" 2>&1
# Its result lines (each module's build path and notes, each phase) come back in one file: a call
# brings back only so many files.
has throughput && tar -czf "$out/throughput_files.tgz" -C "$scratch/throughput" --exclude='cache_*' --exclude=cuda_l1 \
  --exclude='results.db*' --exclude=output.txt --exclude=args.json . 2>/dev/null

# 4e. Baselines of a few bundled tasks, eager against itself included (stage baselines).
has baselines && "$bin/cudal1" baselines --device cuda --control $(ls tasks/level1/*.py | head -n "${N_BASELINES:-4}") \
  >"$out/baselines.txt" 2>&1

# 4e''. Stage aa-sandbox: the A/A figure under bubblewrap and under the fallback confinement
# (bench/aa_sandbox.sh), to tell whether the candidate side's per-call bias follows the sandbox.
if has aa-sandbox; then
  bench/aa_sandbox.sh "$bin/cudal1" cuda "$scratch/aa_sandbox" "${AA_SANDBOX_REPEATS:-2}" \
    ${AA_SANDBOX_TASKS:-tasks/level1/15_sum_dim.py tasks/level1/23_silu.py} >"$out/aa_sandbox.txt" 2>/dev/null
  cp "$scratch/aa_sandbox/aa_sandbox.jsonl" "$out/" 2>/dev/null
fi

# 4e'. The A/A matrix (stage aa): each task's own Model evaluated as a candidate, plainly and
# through each baseline's transformation, beside the baseline itself (bench/aa_matrix.sh). The
# default tasks are one of each kind: elementwise (level1/23_silu), reduction (level1/15_sum_dim),
# norm (level1/21_rms_norm), matmul (level1/01_matmul_square), conv (level1/09_conv2d) and a
# level-3 model (level3/02_resnet_basic_block).
if has aa; then
  aa_tasks=${AA_TASKS:-tasks/level1/23_silu.py tasks/level1/15_sum_dim.py tasks/level1/21_rms_norm.py tasks/level1/01_matmul_square.py tasks/level1/09_conv2d.py tasks/level3/02_resnet_basic_block.py}
  # Rows are written under $out as they come, so a call cut short still brings back those done;
  # the candidates and each evaluation's files stay outside it (too many files to bring back).
  mkdir -p "$out/aa"
  AA_ROWS="$out/aa/aa_matrix.jsonl" bench/aa_matrix.sh "$bin/cudal1" cuda "${TMPDIR:-/tmp}/cudal1-aa" $aa_tasks \
    >"$out/aa.txt" 2>"$out/aa_progress.txt"
fi

# 4e''. Scale-out (stage cluster): a Redis on this machine (Debian's redis-server, carried as .deb
# files in .redis/ by scripts/fetch_redis.sh and unpacked here), one `cudal1 worker` on the GPU, and
# `cudal1 batch --redis` over CLUSTER_N fixture candidates through it (docs/scale-out.md).
if has cluster; then
  rx=${TMPDIR:-/tmp}/cudal1-redis-root
  if [ ! -x "$rx/usr/bin/redis-server" ]; then
    mkdir -p "$rx"
    for f in .redis/*.deb; do
      if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" "$rx"; else ar p "$f" data.tar.xz | tar -xJ -C "$rx"; fi
    done
  fi
  rdata=$(mktemp -d) rport=${CLUSTER_PORT:-16379}
  LD_LIBRARY_PATH=$rx/usr/lib/x86_64-linux-gnu "$rx/usr/bin/redis-server" --port "$rport" --bind 127.0.0.1 \
    --dir "$rdata" --appendonly yes --appendfsync always --save "" --daemonize yes --logfile "$rdata/redis.log"
  sleep 1
  pairs=$rdata/pairs.txt
  n=${CLUSTER_N:-24}
  for kind in "ok $((n / 2))" "incorrect $((n / 4))" "rejected $((n - n / 2 - n / 4))"; do
    set -- $kind
    for f in tests/fixtures/candidates/"$1"_*.py; do
      grep -q load_inline "$f" && continue
      echo "tests/fixtures/tasks/$(sed -n 's/^# task: //p' "$f" | head -1) $f"
    done | head -n "$2"
  done >"$pairs"
  "$bin/cudal1" worker --redis "redis://127.0.0.1:$rport" --device "${CLUSTER_DEVICE:-cuda}" --lanes "${CLUSTER_LANES:-2}" --no-store \
    --name gpu-worker >"$out/cluster_worker.txt" 2>&1 &
  wpid=$!
  { echo "== cluster: one worker (${CLUSTER_DEVICE:-cuda}, ${CLUSTER_LANES:-2} lanes) against redis-server on this machine"
    timeout "${CLUSTER_DEADLINE:-300}" "$bin/cudal1" batch --redis "redis://127.0.0.1:$rport" --pairs "$pairs" \
      --no-store --out "$out/cluster_batch.jsonl" 2>"$out/cluster_progress.txt"
    "$bin/cudal1" workers --redis "redis://127.0.0.1:$rport"; } >"$out/cluster.txt" 2>&1
  kill -TERM "$wpid"; wait "$wpid"
  LD_LIBRARY_PATH=$rx/usr/lib/x86_64-linux-gnu "$rx/usr/bin/redis-cli" -p "$rport" shutdown nosave >/dev/null 2>&1
fi

# 4g. CUDA graph versions of a CUDA-L1 file's tasks, each verified (stage enrich; ENRICH_JSONL,
# ENRICH_LIMIT; resumable: run again with the same OUT to go on). Runs after 4f, or beside it.
# ENRICH_DEADLINE (seconds) stops it gently, as BENCH_DEADLINE does (ENRICH_GRACE, default 150,
# cut to fit CALL_LIMIT when set); the tally then counts what was verified so far. Its folder
# comes back as enrich.tgz, copied every minute meanwhile: the store, the generated files, its
# enrich.jsonl (which the next machine takes as ENRICH_LINES_FROM: verdicts carried without the
# store) and its logs (progress.txt, table.txt, tally.txt); the device returns 8 files at most.
# ENRICH_BESIDE=1 with both stages runs it beside the audit, in one call: its checks take the
# device's shared turn, which the audit's timing waits out (core/timing_turn.h), so the figures
# stay the audit's own. Each process's lanes then share half the device's memory budget (a
# budget holds only where a process has several lanes on the device).
run_enrich() {
  local snapshots dir=$scratch/enrich
  # ENRICH_RESTORE: an earlier call's enrich.tgz (from a machine since given back) to go on from.
  # The store lives in the output folder, its key beside it, so the tarball holds both.
  [ -n "${ENRICH_RESTORE:-}" ] && [ ! -d "$dir" ] && mkdir -p "$dir" && tar -xzf "$ENRICH_RESTORE" -C "$dir"
  mkdir -p "$dir"
  scripts/snapshot_store.sh "$dir" "$out/enrich.tgz" 60 &
  snapshots=$!
  ${ENRICH_DEADLINE:+timeout -s INT -k "$(grace_after "$ENRICH_DEADLINE" "${ENRICH_GRACE:-150}")" "$(until_deadline "$ENRICH_DEADLINE")"} "$bin/cudal1" enrich --jsonl "$ENRICH_JSONL" \
    --out "$dir" --device cuda --lanes "${ENRICH_LANES:-6}" --db "$dir/enrich.db" \
    ${ENRICH_DEADLINE:+--finish-within "$(finish_within "$ENRICH_DEADLINE" "${ENRICH_GRACE:-150}")"} \
    ${ENRICH_LIMIT:+--limit "$ENRICH_LIMIT"} ${ENRICH_LINES_FROM:+--lines-from "$ENRICH_LINES_FROM"} --error-first-lines \
    >"$dir/table.txt" 2>"$dir/progress.txt"  # its enrich.jsonl is committed, as bench_rows.json
  python3 bench/enrich_tally.py "$dir/enrich.jsonl" >"$dir/tally.txt" 2>&1
  kill "$snapshots" 2>/dev/null; wait "$snapshots" 2>/dev/null
  scripts/snapshot_store.sh "$dir" "$out/enrich.tgz"
}

if has audit; then : "${BENCH_JSONL:?stage audit scores the CUDA-L1 file BENCH_JSONL names}"; fi
if has enrich; then : "${ENRICH_JSONL:?stage enrich writes the CUDA graph versions of the tasks of the CUDA-L1 file ENRICH_JSONL names}"; fi
# Who holds the device's memory while the audit and enrich run: a line every 15 s, appended to
# gpu.txt (the device returns 8 files at most).
background=()
stop_background() { local p; for p in "${background[@]}"; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; }
trap stop_background EXIT
if has audit || has enrich; then
  scripts/gpu_memory_log.sh "$out/gpu.txt" 15 &
  memlog=$!
  background+=("$memlog")
fi
enrich_job=
if has audit && has enrich && [ "${ENRICH_BESIDE:-0}" = 1 ]; then
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)
  if [ -z "${CUDAL1_DEVICE_MEMORY_GB:-}" ] && [[ "$total_mib" =~ ^[0-9]+$ ]] && [ "$total_mib" -gt 0 ]; then
    export CUDAL1_DEVICE_MEMORY_GB=$((total_mib * 9 / 10 / 2 / 1024))
  fi
  run_enrich &
  enrich_job=$!
  background+=("$enrich_job")
fi

# 4f. A CUDA-L1 file scored (stage audit: the file BENCH_JSONL names; BENCH_LIMIT rows, BENCH_LANES
# lanes), with its HTML report. Resumable across machines: its store (results, baselines, the seal's
# key) comes back as bench_state.tgz, and BENCH_RESTORE=that file puts it back on a fresh machine.
# BENCH_DEADLINE (seconds after this script started) stops the run gently: no evaluation starts after it (nor
# earlier, one that the run times so far say would outlive the grace: --finish-within), those in hand finish
# (BENCH_GRACE seconds at most, default 150) and are kept, and the report covers what was scored
# (written from the store when the grace ran out). BENCH_ROWS_FROM: a bench JSON of rows scored on
# earlier machines (`cudal1 bench --stored-only --json` over a returned store), taken as they are;
# BENCH_ROWS_PROTOCOL (e.g. cudal1-eval/8) also takes its rows of that earlier protocol version.
if has audit; then
  mkdir -p "$scratch/bench_state"
  [ -n "${BENCH_RESTORE:-}" ] && [ ! -f "$scratch/bench_state/results.db" ] && tar -xzf "$BENCH_RESTORE" -C "$scratch/bench_state"
  # A copy of the store every minute meanwhile: a call cut by its time limit still returns it.
  scripts/snapshot_store.sh "$scratch/bench_state" "$out/bench_state.tgz" 60 &
  snapshots=$!
  ${BENCH_DEADLINE:+timeout -s INT -k "$(grace_after "$BENCH_DEADLINE" "${BENCH_GRACE:-150}")" "$(until_deadline "$BENCH_DEADLINE")"} "$bin/cudal1" bench --jsonl "$BENCH_JSONL" --limit "${BENCH_LIMIT:-20}" \
    ${BENCH_ROWS_FROM:+--rows-from "$BENCH_ROWS_FROM"} ${BENCH_ROWS_PROTOCOL:+--rows-from-protocol "$BENCH_ROWS_PROTOCOL"} --device cuda --lanes "${BENCH_LANES:-1}" --db "$scratch/bench_state/results.db" --work "$scratch/bench_work" \
    ${BENCH_DEADLINE:+--finish-within "$(finish_within "$BENCH_DEADLINE" "${BENCH_GRACE:-150}")"} \
    --html "$out/bench.html" --markdown "$out/bench.md" >"$out/bench_cuda_l1.txt" 2>"$out/bench_progress.txt"
  rc=$?
  echo "bench exit $rc" >>"$out/bench_cuda_l1.txt"
  # The store as the run left it, before the fallback report below (its speed-of-light figures
  # start Python on the GPU): a call whose limit cuts that report still returns every row. (The
  # bench's own report, written before it exits, is covered by the copy of each minute.)
  kill "$snapshots" 2>/dev/null; wait "$snapshots" 2>/dev/null
  scripts/snapshot_store.sh "$scratch/bench_state" "$out/bench_state.tgz"
  # Killed after its grace (an evaluation in hand outlasted it): the store keeps every finished
  # row, so the report is written from it.
  if [ "$rc" -ne 0 ] || [ ! -s "$out/bench.md" ]; then
    "$bin/cudal1" bench --jsonl "$BENCH_JSONL" --limit "${BENCH_LIMIT:-20}" --device cuda --stored-only \
      ${BENCH_ROWS_FROM:+--rows-from "$BENCH_ROWS_FROM"} ${BENCH_ROWS_PROTOCOL:+--rows-from-protocol "$BENCH_ROWS_PROTOCOL"} \
      --db "$scratch/bench_state/results.db" --work "$scratch/bench_work" --html "$out/bench.html" --markdown "$out/bench.md" \
      >>"$out/bench_cuda_l1.txt" 2>>"$out/bench_progress.txt"
    echo "report from the store: exit $?" >>"$out/bench_cuda_l1.txt"
    scripts/snapshot_store.sh "$scratch/bench_state" "$out/bench_state.tgz"  # with the ceilings that report measured
  fi
  # Every verdict so far (this store's and those carried in) as the bench JSON, which the next
  # machine takes as BENCH_ROWS_FROM: the store goes with this one. It is committed to the
  # repository, so each error keeps its first line, not the kernel's code it may quote.
  "$bin/cudal1" bench --jsonl "$BENCH_JSONL" --limit "${BENCH_LIMIT:-20}" --device cuda --stored-only --no-sol \
    ${BENCH_ROWS_FROM:+--rows-from "$BENCH_ROWS_FROM"} ${BENCH_ROWS_PROTOCOL:+--rows-from-protocol "$BENCH_ROWS_PROTOCOL"} --db "$scratch/bench_state/results.db" --work "$scratch/bench_work" \
    --json --error-first-lines >"$out/bench_rows.json" 2>>"$out/bench_progress.txt" || echo "bench_rows.json: exit $?" >>"$out/bench_cuda_l1.txt"
fi

if [ -n "$enrich_job" ]; then wait "$enrich_job"; elif has enrich; then run_enrich; fi
[ -n "${memlog:-}" ] && { kill "$memlog" 2>/dev/null; wait "$memlog" 2>/dev/null; }
background=()

# 4h. The optimisation loop (stage optimize): the built-in policy over the whole bundled suite with
# every baseline (OPT_ROUNDS rounds of OPT_GROUP, resumable: the run folder stays in the scratch),
# then a replay run feeding REPLAY_LIMIT tasks of REPLAY_JSONL (a CUDA-L1 file) their own
# kernels; one of its contrastive prompts and the exemplars it showed are printed.
if has optimize; then
  # OPT_DEADLINE (seconds) stops it early; run again with the same scratch (or OPT_RESTORE, a
  # tarball of an earlier call's run folder and store) to go on where it stopped.
  # The store lives in $out, which every call starts empty: put back the one the last call left
  # in the scratch (a warm machine), else the tarball's (a fresh one).
  if [ -n "${OPT_RESTORE:-}" ] && [ ! -d "$scratch/opt_builtin" ]; then
    tar -xzf "$OPT_RESTORE" -C "$scratch"
  fi
  [ -f "$scratch/opt_results.db" ] && scripts/copy_store.sh "$scratch/opt_results.db" "$CUDAL1_DB"
  # OPT_CHUNK=N: the suite's tasks N at a time, in level order, each chunk a whole invocation
  # (a round's answers land in the store when the round ends): a deadline then loses at most one
  # chunk's round. The last invocation over all tasks only gathers the summary.
  if [ "${OPT_BUILTIN:-1}" = 1 ]; then
    opt_end=$((SECONDS + ${OPT_DEADLINE:-100000}))
    opt() { timeout $((opt_end - SECONDS > 1 ? opt_end - SECONDS : 1)) "$bin/cudal1" optimize "$@" --policy builtin --rounds "${OPT_ROUNDS:-2}" \
      --group "${OPT_GROUP:-4}" --lanes "${OPT_LANES:-4}" $opt_baselines --device cuda --run "$scratch/opt_builtin" --name builtin; }
    # OPT_BASELINES=compile (a list): those baselines only, a task's first evaluation then
    # compiles once instead of twice; default every one.
    opt_baselines=--baselines
    [ -n "${OPT_BASELINES:-}" ] && opt_baselines="--baseline $OPT_BASELINES"
    : >"$out/optimize_builtin.txt"
    if [ -n "${OPT_CHUNK:-}" ]; then
      ls tasks/level1/*.py tasks/level2/*.py tasks/level3/*.py | sed 's|^tasks/||; s|\.py$||' | xargs -n "$OPT_CHUNK" echo >"$scratch/opt_chunks.txt"
      finished=()
      while read -r chunk && [ $SECONDS -lt $opt_end ]; do
        opt $chunk >/dev/null 2>>"$out/optimize_progress.txt"
        rc=$?
        echo "chunk of $(echo $chunk | wc -w) tasks: exit status $rc at ${SECONDS}s" >>"$out/optimize_builtin.txt"
        [ $rc = 0 ] && finished+=($chunk)
      done <"$scratch/opt_chunks.txt"
      # The summary of the finished chunks: their rounds are all in the store, nothing runs again.
      [ ${#finished[@]} -gt 0 ] && opt_end=$((SECONDS + 300)) && opt "${finished[@]}" >>"$out/optimize_builtin.txt" 2>>"$out/optimize_progress.txt"
    else
      opt --all >>"$out/optimize_builtin.txt" 2>>"$out/optimize_progress.txt"
    fi
    echo "optimize exit status $?; last progress: $(tr '\r' '\n' <"$out/optimize_progress.txt" | grep . | tail -1)" >>"$out/optimize_builtin.txt"
    [ -s "$scratch/opt_builtin/summary.json" ] && python3 bench/optimize_summary.py "$scratch/opt_builtin/summary.json" >>"$out/optimize_builtin.txt" 2>&1
    scripts/copy_store.sh "$CUDAL1_DB" "$scratch/opt_results.db" &&
      tar -czf "$out/opt_builtin.tgz" -C "$scratch" opt_builtin opt_results.db opt_results.db.key
  fi
  if [ -n "${REPLAY_JSONL:-}" ]; then
    mkdir -p "$scratch/replay_tasks"
    python3 - "$REPLAY_JSONL" "$scratch/replay_tasks" "${REPLAY_LIMIT:-10}" <<'PY'
import json, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(src)]
for r in [r for r in rows if r.get("custom_code")][:n]:
    open(f"{dst}/level{r['level_id']}_task{r['task_id']}.py", "w").write(r["ref_code"])
PY
    ${REPLAY_DEADLINE:+timeout "$REPLAY_DEADLINE"} "$bin/cudal1" optimize "$scratch"/replay_tasks/*.py --policy replay --replay "$REPLAY_JSONL" --rounds 3 --group 1 \
      --patience 3 --lanes "${OPT_LANES:-4}" --device cuda --run "$scratch/opt_replay" >"$out/optimize_replay.txt" 2>/dev/null
    python3 - "$scratch/opt_replay/samples.jsonl" <<'PY' >>"$out/optimize_replay.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    print(f"{r['task']} round {r['round']}: {r['label']} -> {r['verdict']['status']} {r['verdict']['speedup']}; exemplars shown: "
          + (", ".join(f"{e['label'] or e['candidate_hash'][:8]} {e['speedup']:.2f}x" for e in r["exemplars"]) or "none"))
shown = [r for r in rows if r["exemplars"]]
if shown:
    print("\n--- a contrastive prompt it built (" + shown[0]["task"] + ", round " + str(shown[0]["round"]) + ") ---")
    print(shown[0]["prompt"][:6000])
PY
  fi
fi

# 4i. Issue 8: a model from scratch through the trainer's three stages, measured after each, and
# the training step against PyTorch in Python (stage trainer; TRAINER_BIN: a build with the
# trainer, scripts/build_gpu_trainer.sh's by default; TR_* settings in bench/trainer_stages.sh).
if has trainer; then
  bench/trainer_stages.sh "${TRAINER_BIN:-build-gpu-trainer/cudal1}" "$out" "$scratch/trainer" >"$out/trainer.txt" 2>&1
fi

# 5. Every bundled solution through the evaluator.
has solutions && bench/suite_solutions.sh "$bin/cudal1" cuda "${SOLUTION_LEVELS:-1 2 3}" >"$out/solutions.txt" 2>&1

echo
if has tests || has cuda-corpus || has gpu-unit; then
  passed=$(grep -c '^\[       OK \]' "$out/gpu_tests.log")
  failed=$(grep -c '^\[  FAILED  \] [A-Z].*(' "$out/gpu_tests.log")
  echo "GPU tests: $passed passed, $failed failed (verdict shards ${verdict_secs}s)"
  grep '^\[  FAILED  \] [A-Z].*(' "$out/gpu_tests.log" | sort -u
  echo
fi
if [ -s "${CUDAL1_CORPUS_LOG:-}" ]; then python3 bench/corpus_table.py "$CUDAL1_CORPUS_LOG"; echo; fi
enrich_tally=; has enrich && enrich_tally=$scratch/enrich/tally.txt  # the scratch outlives a call: not an earlier one's
for f in tasks_sol.txt solutions.txt bench.txt lint.txt builds.txt baselines.txt aa.txt aa_sandbox.txt cluster.txt bench_cuda_l1.txt throughput.txt $enrich_tally optimize_builtin.txt optimize_replay.txt trainer.txt; do
  [[ "$f" == /* ]] || f=$out/$f
  [ -s "$f" ] && { cat "$f"; echo; }
done
