#!/usr/bin/env bash
# bench/trainer_stages.sh CUDAL1 OUT SCRATCH — the trainer's three stages on a GPU: a small model made from scratch
# (random initialisation) goes through CUDA-L1's three stages on a few bundled tasks, and the same
# measurement after each stage shows whether its answers get more correct and faster:
#   data    the built-in rewrite policy's accepted answers on the tasks (what SFT learns from)
#   init    `train init`: random weights, the bundled Qwen-style tokenizer fixture
#   sft     `train sft --full` on the store's accepted answers, each faster one also under a
#           contrastive prompt (TR_SFT_CONTRASTIVE copies; 0 keeps CUDA-L1's first-round set)
#   selfsup `train selfsup --full`: rounds of sample, evaluate, learn from the correct ones, under
#           first-round and (TR_SELFSUP_SHARE of the rounds, with contrastive SFT) contrastive prompts
#   crl     `train crl --full`: rounds of GRPO on contrastive prompts, KL to the SFT+selfsup start
# After init, sft, selfsup and crl the model answers every task TR_GROUP times (one loop round,
# `optimize --policy model`, the same seed and prompts each time), once with first-round prompts
# and once with contrastive ones: its correct rate and mean raw reward (eager speedup when
# accepted, 0 on failure) are the stage's figures. Then the same
# training step timed in C++ (`train bench-step`) and in plain PyTorch (bench/train_step_torch.py).
# CUDAL1 must be a build with the trainer (scripts/build_gpu_trainer.sh); libtorch comes from the
# python3's torch. TR_DEVICE=cpu with TR_TASKS naming small files tries the chain on a CPU. TR_DEADLINE (seconds) bounds the stages; each stage resumes if run again.
# TR_ROUNDS sets both RL stages' rounds; TR_SELFSUP_ROUNDS and TR_CRL_ROUNDS each one's.
set -uo pipefail
bin=$1 out=$2 scratch=$3
mkdir -p "$out" "$scratch"
export LD_LIBRARY_PATH="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")'):${LD_LIBRARY_PATH:-}"
tasks=${TR_TASKS:-level1/23_silu level1/24_softplus level1/28_log_softmax}
dev=${TR_DEVICE:-cuda} lanes=${TR_LANES:-6} group=${TR_GROUP:-8} temp=${TR_TEMPERATURE:-0.7} new=${TR_MAX_NEW_TOKENS:-2560}
end=$((SECONDS + ${TR_DEADLINE:-100000}))
left() { echo $((end - SECONDS > 1 ? end - SECONDS : 1)); }
export CUDAL1_DB=$scratch/trainer.db
m=$scratch/models
log=$scratch/trainer_stages.log
: >"$log"
step() { echo "== $* (at ${SECONDS}s)" >>"$log"; timeout "$(left)" "$@" >>"$log" 2>&1; local rc=$?; echo "exit $rc" >>"$log"; return $rc; }

# The figures of a stage: one round of every task answered by MODEL with the same seed, twice:
# eval_NAME with first-round prompts (what stages 1 and 2 train on), and eval_contrastive_NAME with
# stage 3's contrastive prompts, each showing TR_EXEMPLARS of the data run's files and their
# speedups. Each runs on its own copy of the store as it was after the data run: every stage is
# shown the same files, and no measurement adds rows to the store the stages train from (stage 3
# shows each file with its newest speedup, which a measurement would otherwise have replaced).
ask_round() {  # RUN_NAME MODEL_DIR EXEMPLARS; a round that finished (its summary.json) is not repeated
  [ -f "$scratch/$1/summary.json" ] && return 0
  step "$bin" optimize --policy model --model "$2" --model-device "$dev" --model-dtype float32 $tasks --rounds 1 --group "$group" --exemplars "$3" \
    --temperature "$temp" --max-new-tokens "$new" --lanes "$lanes" --device "$dev" --seed 11 --run "$scratch/$1" --name "$1"
}
measure() {  # NAME MODEL_DIR
  CUDAL1_DB=$scratch/eval_$1.db ask_round "eval_$1" "$2" 0
  [ "${TR_EXEMPLARS:-2}" -gt 0 ] && CUDAL1_DB=$scratch/eval_contrastive_$1.db ask_round "eval_contrastive_$1" "$2" "${TR_EXEMPLARS:-2}"
}

[ -f "$m/init/config.json" ] || step "$bin" train init --out "$m/init" --tokenizer tests/fixtures/tokenizer/qwen \
  --arch qwen2 --hidden "${TR_HIDDEN:-384}" --layers "${TR_LAYERS:-6}" --heads "${TR_HEADS:-6}" --kv-heads 2 --max-positions 8192 --seed 1
# The training step, C++ against PyTorch in Python, on the same model, batch and dtype
# (TR_STEP_BENCH=0 leaves it out, to give a short lease's time to the stages).
bench_args="--batch ${TR_BENCH_BATCH:-8} --seq ${TR_BENCH_SEQ:-2048} --steps 20 --warmup 5"
if [ "${TR_STEP_BENCH:-1}" = 1 ]; then
  step "$bin" train bench-step --model "$m/init" --full $bench_args -d "$dev" --dtype "${TR_BENCH_DTYPE:-bfloat16}" --json
  grep -h '^{' "$log" | tail -1 >"$scratch/step_cpp.json"
  step python3 bench/train_step_torch.py --model "$m/init" --full $bench_args --device "$dev" --dtype "${TR_BENCH_DTYPE:-bfloat16}" --json
  grep -h '^{' "$log" | tail -1 >"$scratch/step_torch.json"
fi

# TR_DATA_ROUNDS=2 adds answers that were shown contrastive prompts (earlier files with their
# speedups), and TR_PER_TASK=4 lets SFT take them beside the first round's: a model that has only
# seen first-round prompts meets contrastive ones for the first time in crl.
step "$bin" optimize --policy builtin $tasks --rounds "${TR_DATA_ROUNDS:-1}" --group 3 --lanes "$lanes" --device "$dev" --run "$scratch/data" --name data
# The store as the data run left it, for the contrastive measurements (each starts from a copy).
# Each copy takes the store's key with it (scripts/copy_store.sh): a copy without it would show no
# earlier file (its contrastive rounds would be first-round ones).
[ -f "$scratch/data.db" ] || scripts/copy_store.sh "$CUDAL1_DB" "$scratch/data.db"
for copy in $(printf 'eval_%s eval_contrastive_%s ' init init sft sft selfsup selfsup crl crl); do
  [ -f "$scratch/$copy.db" ] || [ ! -f "$scratch/data.db" ] || scripts/copy_store.sh "$scratch/data.db" "$scratch/$copy.db"
done
measure init "$m/init"
# SFT leaves out answers longer than the stages after it sample ($new tokens): the data run's
# answers to contrastive prompts run to twice the first round's length, and a model taught them
# had most of its contrastive answers cut at the limit.
# Its --json summary (examples, those left out) is kept apart: the log is started afresh each call.
if [ ! -d "$scratch/sft/model" ]; then
  step "$bin" train sft --model "$m/init" --out "$scratch/sft" --full --run data --per-task "${TR_PER_TASK:-2}" -d "$dev" --dtype float32 \
    --epochs "${TR_SFT_EPOCHS:-40}" --batch 3 --lr "${TR_SFT_LR:-1e-3}" --warmup 10 --max-tokens 8192 --max-answer-tokens "$new" \
    --contrastive "${TR_SFT_CONTRASTIVE:-2}" --exemplars "${TR_EXEMPLARS:-2}" $(printf -- '--task %s ' $tasks) --json &&
    grep -h '^{.*"answer_too_long"' "$log" | tail -1 >"$scratch/sft_summary.json"
fi
measure sft "$scratch/sft/model"
# Stage 2 asks both kinds of prompt SFT taught (TR_SELFSUP_SHARE of each task's rounds contrastive):
# trained on first-round prompts alone, the model forgot the contrastive ones stage 3 asks.
# TR_LOSS_AGG: how both RL stages turn per-token terms into a loss (`train selfsup --loss-agg`).
loss_agg=${TR_LOSS_AGG:-seq-mean-token-mean}
[ "${TR_SFT_CONTRASTIVE:-2}" -gt 0 ] && selfsup_share=${TR_SELFSUP_SHARE:-0.5} || selfsup_share=0
[ -d "$scratch/selfsup/model" ] || step "$bin" train selfsup --model "$scratch/sft/model" --out "$scratch/selfsup" --full $tasks \
  -d "$dev" --dtype float32 --rounds "${TR_SELFSUP_ROUNDS:-${TR_ROUNDS:-3}}" --group "$group" --temperature "$temp" --max-new-tokens "$new" --lr "${TR_RL_LR:-2e-4}" \
  --exemplars "${TR_EXEMPLARS:-2}" --exemplar-share "$selfsup_share" --loss-agg "$loss_agg" --micro-batch 4 --lanes "$lanes" --seed 21
measure selfsup "$scratch/selfsup/model"
[ -d "$scratch/crl/model" ] || step "$bin" train crl --model "$scratch/selfsup/model" --out "$scratch/crl" --full $tasks \
  -d "$dev" --dtype float32 --rounds "${TR_CRL_ROUNDS:-${TR_ROUNDS:-3}}" --group "$group" --temperature "$temp" --max-new-tokens "$new" --lr "${TR_RL_LR:-2e-4}" \
  --loss-agg "$loss_agg" --micro-batch 4 --lanes "$lanes" --seed 31
measure crl "$scratch/crl/model"

done_stages=$(for d in sft selfsup crl; do [ -f "$scratch/$d/train_log.jsonl" ] && echo "$scratch/$d"; done)
[ -n "$done_stages" ] && "$bin" train report $done_stages --out "$scratch/train_report.html" >>"$log" 2>&1
python3 bench/trainer_summary.py "$scratch" "$scratch/step_cpp.json" "$scratch/step_torch.json"
# One file back (a device call returns only a few): logs, measurements, the report.
tar -czf "$out/trainer_files.tgz" -C "$scratch" --ignore-failed-read trainer_stages.log step_cpp.json step_torch.json sft_summary.json \
  train_report.html $(cd "$scratch" && ls -d */train_log.jsonl eval_*/summary.json eval_*/samples.jsonl \
  */loop/samples.jsonl data/samples.jsonl sft/*.jsonl 2>/dev/null)
