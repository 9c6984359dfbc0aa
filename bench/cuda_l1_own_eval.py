#!/usr/bin/env python3
"""bench/cuda_l1_own_eval.py PAIRS EVAL_CUDA OUT_DIR [--deadline S] [--row-timeout S]

Runs CUDA-L1's own released evaluator (its eval_cuda.py, passed by path and never part of this
project) over a throughput set, the way CUDA-L1 runs it: one row after the other, each in a fresh
Python process, through `eval_pipeline(...)` with the arguments its `eval()` uses (vanilla setup:
10 correctness trials, 7 timing trials of 10 calls, GPU 0, max_time 1800). The reference file is
both the warm-up and the original model, as in `eval()`.

PAIRS is bench/throughput.sh's pairs.jsonl ({"id", "task", "candidate"} per line). One line per
row goes to OUT_DIR/results_cuda-l1.jsonl: its wall time, CUDA-L1's outcome (ok with its mean
score, or the step that failed and its message). Rows already there are skipped, and no row starts
once the script has run --deadline seconds, so the serial run spreads over several device calls;
OUT_DIR/summary_cuda-l1.json is written once every row has a line: evaluations per hour from the
sum of the rows' walls."""
import argparse
import json
import os
import subprocess
import sys
import time

# CUDA-L1's eval() arguments, vanilla setup (its README's way to score one row).
PIPELINE_ARGS = dict(num_correct_trials=10, num_perf_trials=10, global_n_trials=7, gpu_index=0,
                     verbose=False, max_time=1800, original_eval_setup="vanilla")

DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import eval_cuda
a = json.load(open(sys.argv[2]))
eval_cuda.eval_pipeline(**a)
"""


def outcome(log_path: str) -> dict:
    """CUDA-L1's verdict, read from the log its eval_pipeline writes (its last `done` line)."""
    last = None
    try:
        for line in open(log_path, errors="replace"):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("done"):
                last = entry
    except OSError:
        pass
    if last is None:
        return {"verdict": "no_result", "error": "eval_pipeline wrote no final line"}
    if not last.get("error") and last.get("score") is not None:
        return {"verdict": "ok", "speedup": last["score"], "scores": last.get("scores", [])}
    msg = str(last.get("error_msg", ""))
    if "compil" in msg or "compile" in msg:
        verdict = "compile_or_load_failed"
    elif last.get("info", "").startswith("stage2"):
        verdict = "lazy_output"
    elif "fail to inference" in msg:
        verdict = "timing_failed"
    else:
        verdict = "incorrect"
    return {"verdict": verdict, "error": msg[:300]}


def run_row(pair: dict, eval_dir: str, row_dir: str, timeout: float) -> dict:
    os.makedirs(row_dir, exist_ok=True)
    ref = open(pair["task"]).read()
    args = dict(PIPELINE_ARGS, warmup_src=ref, original_model_src=ref,
                custom_model_src=open(pair["candidate"]).read(), log_path=os.path.join(row_dir, "log.json"))
    with open(os.path.join(row_dir, "args.json"), "w") as f:
        json.dump(args, f)
    start = time.monotonic()
    with open(os.path.join(row_dir, "output.txt"), "w") as out:
        try:
            rc = subprocess.run([sys.executable, "-c", DRIVER, eval_dir, os.path.join(row_dir, "args.json")],
                                cwd=row_dir, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
    wall = time.monotonic() - start
    result = {"id": pair["id"], "wall_s": round(wall, 2), "returncode": rc}
    result.update(outcome(args["log_path"]) if rc is not None else {"verdict": "timeout", "error": f"over {timeout:.0f} s"})
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pairs")
    p.add_argument("eval_cuda")
    p.add_argument("out_dir")
    p.add_argument("--deadline", type=float, default=float("inf"), help="start no row after this many seconds")
    p.add_argument("--row-timeout", type=float, default=900, help="a row still running after this is killed")
    a = p.parse_args()
    start = time.monotonic()
    pairs = [json.loads(line) for line in open(a.pairs) if line.strip()]
    results_path = os.path.join(a.out_dir, "results_cuda-l1.jsonl")
    done = set()
    if os.path.exists(results_path):
        done = {json.loads(line)["id"] for line in open(results_path) if line.strip()}
    eval_dir = os.path.dirname(os.path.abspath(a.eval_cuda))
    for i, pair in enumerate(pairs):
        if pair["id"] in done:
            continue
        if not os.path.isfile(a.eval_cuda):
            print(f"cuda_l1_own_eval: {a.eval_cuda} is not a file; pass the path of CUDA-L1's eval_cuda.py", file=sys.stderr)
            return 2
        if time.monotonic() - start >= a.deadline:
            print(f"cuda-l1: deadline reached with {len(pairs) - len(done)} rows left; run again with the same "
                  "OUT_DIR to go on", file=sys.stderr)
            return 0
        row_dir = os.path.join(a.out_dir, "cuda_l1_own", pair["id"].replace("/", "_").replace(":", "_"))
        result = run_row(pair, eval_dir, row_dir, a.row_timeout)
        with open(results_path, "a") as f:
            f.write(json.dumps(result) + "\n")
        done.add(pair["id"])
        print(f"cuda-l1 [{len(done)}/{len(pairs)}] {pair['id']}: {result['verdict']} "
              f"{result.get('speedup', '')} in {result['wall_s']:.1f} s", file=sys.stderr, flush=True)
    walls = [json.loads(line)["wall_s"] for line in open(results_path) if line.strip()]
    summary = {"mode": "cuda-l1", "evaluations": len(walls), "wall_s": sum(walls),
               "evaluations_per_hour": 3600 * len(walls) / sum(walls) if sum(walls) else 0.0, "resumable": True}
    with open(os.path.join(a.out_dir, "summary_cuda-l1.json"), "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
