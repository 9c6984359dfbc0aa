"""A TRL reward function (GRPOTrainer, RLOOTrainer) scored by `cudal1 serve` (integrations/README.md).

    from trl_reward import cudal1_reward          # $CUDAL1_SERVE_URL, $CUDAL1_SERVE_TOKEN
    GRPOTrainer(..., reward_funcs=[cudal1_reward], train_dataset=ds)   # ds has a task_id column

TRL passes the dataset's other columns as keyword lists, one entry per completion: task_id, and
reference_code for tasks outside the service's bundled suite. All completions of a step go as one
/evaluate/batch and the call returns when every one is judged.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cudal1_client import Client, extract_code, reward_of  # noqa: E402


def completion_text(completion: Any) -> str:
    """A completion as text: TRL gives a string, or for conversational data a list of messages."""
    if isinstance(completion, str):
        return completion
    messages = [m for m in completion if isinstance(m, dict)]
    replies = [m for m in messages if m.get("role", "assistant") == "assistant"] or messages
    content = replies[-1].get("content", "") if replies else ""
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def make_cudal1_reward(url: Optional[str] = None, token: Optional[str] = None, timing: bool = True,
                       timeout_s: float = 3600.0, poll_s: float = 2.0, failed_reward: float = 0.0,
                       client: Optional[Client] = None) -> Callable[..., List[float]]:
    """A reward function bound to one service. An answer without a closed code block scores 0.0
    unsent, as /reward does; a service that cannot be reached raises."""
    service = client or Client(url=url, token=token)

    def cudal1_reward(prompts=None, completions=(), task_id=None, reference_code=None, **kwargs) -> List[float]:
        n = len(completions)
        task_id = task_id if task_id is not None else [None] * n
        reference_code = reference_code if reference_code is not None else [None] * n
        requests, where = [], []
        for i, completion in enumerate(completions):
            code = extract_code(completion_text(completion))
            if code is not None:
                requests.append({"task_id": task_id[i], "kernel_code": code,
                                 "reference_code": reference_code[i], "timing": timing})
                where.append(i)
        rewards = [0.0] * n
        for i, answer in zip(where, service.evaluate_many(requests, timeout_s, poll_s)):
            rewards[i] = reward_of(answer, failed_reward)
        return rewards

    return cudal1_reward


_default: Optional[Callable[..., List[float]]] = None


def cudal1_reward(prompts=None, completions=(), task_id=None, **kwargs) -> List[float]:
    """The reward function on a client from the environment, made on first use so that setting
    CUDAL1_SERVE_URL after the import still counts."""
    global _default
    if _default is None:
        _default = make_cudal1_reward()
    return _default(prompts, completions, task_id, **kwargs)
