"""GRPO on the bundled KernelBench-style tasks with rewards from `cudal1 serve`.

    CUDAL1_SERVE_URL=http://gpu-host:8080 CUDAL1_SERVE_TOKEN=... \
        python integrations/examples/trl_grpo_cudal1.py --model Qwen/Qwen2.5-Coder-7B-Instruct

Needs trl, transformers and datasets (not installed with cudal1). The prompt follows
prompts/first_round.md in short; `cudal1 optimize` builds the full one.
"""
import argparse
import pathlib
import sys

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "integrations"))
from trl_reward import cudal1_reward  # noqa: E402

ANSWER_FORMAT = (ROOT / "prompts" / "answer_format.md").read_text()


def rows(levels):
    for level in levels:
        for task in sorted((ROOT / "tasks" / level).glob("*.py")):
            prompt = ("Write a faster version of this PyTorch module for an NVIDIA GPU, with the same "
                      f"outputs.\n\n## Reference\n```python\n{task.read_text()}```\n\n{ANSWER_FORMAT}")
            # task_id reaches cudal1_reward as a keyword list, one entry per completion.
            yield {"prompt": [{"role": "user", "content": prompt}], "task_id": f"{level}/{task.stem}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--levels", nargs="+", default=["level1"])
    ap.add_argument("--out", default="grpo-cudal1")
    args = ap.parse_args()
    config = GRPOConfig(output_dir=args.out, num_generations=8, max_completion_length=4096,
                        per_device_train_batch_size=8, learning_rate=1e-6, logging_steps=1)
    trainer = GRPOTrainer(model=args.model, reward_funcs=[cudal1_reward], args=config,
                          train_dataset=Dataset.from_list(list(rows(args.levels))))
    trainer.train()


if __name__ == "__main__":
    main()
