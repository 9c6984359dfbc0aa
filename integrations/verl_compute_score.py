"""verl's custom reward function, scored by `cudal1 serve` (integrations/README.md).

Per sample (verl's naive reward manager):
    compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs) -> float
Per batch (reward_manager: batch), submitted as one /evaluate/batch and awaited together:
    compute_score(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=..., **reward_kwargs) -> list

ground_truth names the task: a task id string ("level1/23_silu"), a KernelBench reference source
(any string with a newline), or a dict {"task_id": ..., "reference_code": ...} (either key, or its
JSON text). Without it, extra_info's task_id / reference_code are used.

reward_kwargs (custom_reward_function.reward_kwargs): url, token (else $CUDAL1_SERVE_URL,
$CUDAL1_SERVE_TOKEN), timing, timeout_s, poll_s, failed_reward, return_dict.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

# verl loads this file by path, not as a package member: its sibling is importable only so.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cudal1_client import Client, extract_code, reward_of  # noqa: E402

_clients: Dict[Tuple[Optional[str], Optional[str]], Client] = {}


def client_for(url: Optional[str] = None, token: Optional[str] = None) -> Client:
    key = (url, token)
    if key not in _clients:
        _clients[key] = Client(url=url, token=token)
    return _clients[key]


def task_of(ground_truth: Any, extra_info: Any = None) -> Tuple[Optional[str], Optional[str]]:
    """(task_id, reference_code) named by a sample's ground truth, else by its extra_info."""
    gt = ground_truth
    if isinstance(gt, bytes):
        gt = gt.decode()
    if isinstance(gt, str) and gt.lstrip().startswith("{"):
        try:
            gt = json.loads(gt)
        except ValueError:
            pass
    if isinstance(gt, str) and gt.strip():
        return (None, gt) if "\n" in gt.strip() else (gt.strip(), None)
    if hasattr(gt, "get"):
        if gt.get("task_id") or gt.get("reference_code"):
            return gt.get("task_id") or None, gt.get("reference_code") or None
    if extra_info is not None and hasattr(extra_info, "get") and (extra_info.get("task_id") or extra_info.get("reference_code")):
        return extra_info.get("task_id") or None, extra_info.get("reference_code") or None
    raise ValueError(f"no task in ground_truth {ground_truth!r}: give a task id, a reference source or "
                     "{'task_id': ..., 'reference_code': ...}")


def _details(answer: Optional[dict], score: float) -> dict:
    # Numbers only: verl averages reward_extra_info fields into metrics.
    answer = answer or {}
    return {"score": score, "correct": float(bool(answer.get("correct"))),
            "accepted": float(bool(answer.get("accepted"))), "speedup": float(answer.get("speedup") or 0.0),
            "no_code": float(not answer)}


def compute_score_batch(data_sources=None, solution_strs=(), ground_truths=None, extra_infos=None,
                        url=None, token=None, timing=True, timeout_s=3600.0, poll_s=2.0,
                        failed_reward=0.0, return_dict=False, **_ignored) -> List[Any]:
    """An answer without a closed code block scores 0.0 here, unsent: the service's /reward does
    the same. A service that cannot be reached raises: silent zero rewards would train on noise."""
    n = len(solution_strs)
    ground_truths = ground_truths if ground_truths is not None else [None] * n
    extra_infos = extra_infos if extra_infos is not None else [None] * n
    requests, where = [], []
    for i in range(n):
        code = extract_code(solution_strs[i])
        if code is not None:
            task_id, reference = task_of(ground_truths[i], extra_infos[i])
            requests.append({"task_id": task_id, "kernel_code": code, "reference_code": reference, "timing": timing})
            where.append(i)
    answers: List[Optional[dict]] = [None] * n
    for i, answer in zip(where, client_for(url, token).evaluate_many(requests, timeout_s, poll_s)):
        answers[i] = answer
    scores = [reward_of(a, failed_reward) if a is not None else 0.0 for a in answers]
    return [_details(a, s) for a, s in zip(answers, scores)] if return_dict else scores


def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, *,
                  data_sources=None, solution_strs=None, ground_truths=None, extra_infos=None, **reward_kwargs):
    if solution_strs is not None:
        return compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **reward_kwargs)
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **reward_kwargs)[0]
