"""A client for `cudal1 serve` (docs/serve.md), standard library only: trainer machines often
cannot install requests or httpx.

    from cudal1_client import Client
    c = Client()                      # $CUDAL1_SERVE_URL, $CUDAL1_SERVE_TOKEN
    c.reward("level1/23_silu", kernel_code)   # -> 1.37, 0.0 or -1.0
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import socket
import time
import urllib.error
import urllib.request
from typing import Callable, Dict, List, Optional, Sequence

DEFAULT_URL = "http://127.0.0.1:8080"


class Cudal1Error(Exception):
    """An answer the client will not retry: 400, 401, 404, 413, or retries spent.
    status is the HTTP status, or None when no answer came at all."""

    def __init__(self, status: Optional[int], message: str):
        super().__init__(f"cudal1 serve: {status if status is not None else 'no answer'}: {message}")
        self.status = status
        self.message = message


class Cudal1Timeout(Cudal1Error):
    """Jobs still queued or running when the wait ran out; job_ids says which."""

    def __init__(self, job_ids: Sequence[str], waited_s: float):
        super().__init__(None, f"{len(job_ids)} job(s) unfinished after {waited_s:.0f}s: {', '.join(job_ids[:5])}")
        self.job_ids = list(job_ids)


def evaluate_body(task_id: Optional[str], kernel_code: str, reference_code: Optional[str] = None,
                  timing: bool = True, baselines: Optional[bool] = None) -> dict:
    """One /evaluate body. A task given only by its reference still needs a task_id; one named
    after the reference's content keeps it stable across samples of the same task."""
    if not task_id:
        if not reference_code:
            raise ValueError("a task_id or a reference_code is needed")
        task_id = "custom/" + hashlib.sha256(reference_code.encode()).hexdigest()[:16]
    body = {"task_id": task_id, "kernel_code": kernel_code, "timing": bool(timing)}
    if reference_code:
        body["reference_code"] = reference_code
    if baselines is not None:
        body["baselines"] = bool(baselines)
    return body


class Client:
    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, request_timeout_s: float = 120.0,
                 retries: int = 8, backoff_s: float = 0.5, max_backoff_s: float = 30.0, max_batch: int = 128,
                 sleep: Callable[[float], None] = time.sleep):
        self.url = (url or os.environ.get("CUDAL1_SERVE_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("CUDAL1_SERVE_TOKEN")
        self.request_timeout_s = request_timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # Below --max-queue and --max-body-mb: a batch that can never fit gets 400.
        self.max_batch = max_batch
        self.sleep = sleep

    # --- transport ---

    def _request(self, method: str, path: str, body: Optional[dict] = None):
        """(status, parsed JSON) of a 2xx answer; retries connection errors, 429 and 5xx."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        last = ""
        for attempt in range(self.retries + 1):
            wait = min(self.max_backoff_s, self.backoff_s * 2 ** attempt)
            wait *= 0.5 + random.random() / 2  # many trainer workers must not retry in step
            req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.request_timeout_s) as res:
                    return res.status, _json(res.read())
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                message = _message(text) or e.reason
                if e.code == 429:
                    retry_after = _seconds(e.headers.get("Retry-After"))
                    wait = retry_after if retry_after is not None else wait
                elif e.code < 500:
                    raise Cudal1Error(e.code, message) from None
                last = f"{e.code}: {message}"
            except (urllib.error.URLError, ConnectionError, socket.timeout) as e:
                last = str(getattr(e, "reason", e))
            if attempt < self.retries:
                self.sleep(wait)
        raise Cudal1Error(None, f"{method} {path} failed {self.retries + 1} times; last: {last}")

    # --- the API ---

    def healthz(self) -> dict:
        return self._request("GET", "/healthz")[1]

    def submit(self, task_id: Optional[str], kernel_code: str, reference_code: Optional[str] = None,
               timing: bool = True, baselines: Optional[bool] = None) -> str:
        return self._request("POST", "/evaluate", evaluate_body(task_id, kernel_code, reference_code, timing, baselines))[1]["job_id"]

    def submit_batch(self, requests: Sequence[dict]) -> List[str]:
        """Each request: the keyword arguments of submit(). One transaction per max_batch requests."""
        bodies = [evaluate_body(r.get("task_id"), r["kernel_code"], r.get("reference_code"), r.get("timing", True),
                                r.get("baselines")) for r in requests]
        ids: List[str] = []
        for i in range(0, len(bodies), self.max_batch):
            ids += self._request("POST", "/evaluate/batch", {"requests": bodies[i:i + self.max_batch]})[1]["job_ids"]
        return ids

    def status(self, job_id: str) -> dict:
        return self._request("GET", f"/status/{job_id}")[1]

    def result(self, job_id: str, wait: bool = True, timeout_s: float = 3600.0, poll_s: float = 2.0) -> dict:
        """The /results answer once done or failed; with wait=False, whatever it says now."""
        return self.results([job_id], wait, timeout_s, poll_s)[0]

    def results(self, job_ids: Sequence[str], wait: bool = True, timeout_s: float = 3600.0,
                poll_s: float = 2.0) -> List[dict]:
        found: Dict[str, dict] = {}
        start = time.monotonic()
        while True:
            for job_id in job_ids:
                if job_id not in found:
                    code, answer = self._request("GET", f"/results/{job_id}")
                    if code != 202 or not wait:
                        found[job_id] = answer
            pending = [j for j in job_ids if j not in found]
            if not pending:
                return [found[j] for j in job_ids]
            if time.monotonic() - start >= timeout_s:
                raise Cudal1Timeout(pending, time.monotonic() - start)
            self.sleep(poll_s)

    def evaluate(self, task_id: Optional[str], kernel_code: str, reference_code: Optional[str] = None,
                 timing: bool = True, timeout_s: float = 3600.0, poll_s: float = 2.0) -> dict:
        return self.result(self.submit(task_id, kernel_code, reference_code, timing), True, timeout_s, poll_s)

    def evaluate_many(self, requests: Sequence[dict], timeout_s: float = 3600.0, poll_s: float = 2.0) -> List[dict]:
        return self.results(self.submit_batch(requests), True, timeout_s, poll_s) if requests else []

    def reward(self, task_id: Optional[str], kernel_code: str, reference_code: Optional[str] = None,
               timing: bool = True, timeout_s: float = 3600.0, poll_s: float = 2.0, failed_reward: float = 0.0) -> float:
        return reward_of(self.evaluate(task_id, kernel_code, reference_code, timing, timeout_s, poll_s), failed_reward)


def reward_of(answer: dict, failed_reward: float = 0.0) -> float:
    """The raw reward of a /results answer. A failed job (the service could not evaluate it) gets
    failed_reward, like any other failure."""
    if answer.get("status") != "done" or answer.get("reward") is None:
        return float(failed_reward)
    return float(answer["reward"])


def _json(raw: bytes):
    return json.loads(raw) if raw.strip() else {}


def _message(text: str) -> str:
    try:
        answer = json.loads(text)
        if isinstance(answer, dict):
            return str(answer.get("error") or answer.get("message") or text)
    except ValueError:
        pass
    return text.strip()


def _seconds(value: Optional[str]) -> Optional[float]:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the service sends seconds; back off as usual


# --- the candidate file in a model's answer ---

_FENCE = re.compile(r"^\s*(`{3,})\s*([\w+-]*)")


def _blocks(lines: Sequence[str]):
    """(language, body) of each closed fenced block. As CommonMark reads them: only a line of at
    least as many backticks alone closes a block, so a ```` block may quote ``` lines."""
    blocks, open_n, lang, body = [], 0, "", []
    for line in lines:
        m = _FENCE.match(line)
        if open_n == 0:
            if m:
                open_n, lang, body = len(m.group(1)), m.group(2).lower(), []
        elif m and len(m.group(1)) >= open_n and line.strip() == "`" * len(line.strip()):
            blocks.append((lang, "".join(body)))
            open_n = 0
        else:
            body.append(line)
    return blocks


def _heading(line: str) -> str:
    t = line.strip()
    if not t.startswith("##") or t.startswith("###"):
        return ""
    return "".join(c for c in t[2:].lower() if c.isalpha())


def _code_section(lines: Sequence[str]) -> Optional[List[str]]:
    section, open_n = None, 0
    for line in lines:
        m = _FENCE.match(line)
        if open_n == 0 and m:
            open_n = len(m.group(1))
        elif open_n and m and len(m.group(1)) >= open_n and line.strip() == "`" * len(line.strip()):
            open_n = 0
        elif not open_n and _heading(line):
            if _heading(line) == "codeimplementation":
                section = []
                continue
            if section is not None:
                return section
        if section is not None:
            section.append(line)
    return section


def extract_code(response_text: str) -> Optional[str]:
    """The candidate file in a policy's answer, found by the service's rule (policy/response.h):
    the one fenced block under "## Code Implementation" that defines class ModelNew. None when
    there is no such section or block, no block defines ModelNew, several do, or a fence never
    closes; the service scores those 0 without evaluating. For client-side checks only: the
    service parses /reward answers itself."""
    if not response_text:
        return None
    lines = response_text.splitlines(keepends=True)
    section = _code_section(lines)
    if section is None:
        return None
    blocks = [b for _, b in _blocks(section)]
    with_model = [b for b in blocks if re.search(r"^\s*class\s+ModelNew\b", b, re.M)]
    return with_model[0] if len(with_model) == 1 else None


# --- module-level calls on a client configured from the environment ---

_default: Optional[Client] = None


def default_client() -> Client:
    global _default
    if _default is None:
        _default = Client()
    return _default


def submit(*args, **kwargs) -> str:
    return default_client().submit(*args, **kwargs)


def submit_batch(requests: Sequence[dict]) -> List[str]:
    return default_client().submit_batch(requests)


def status(job_id: str) -> dict:
    return default_client().status(job_id)


def result(job_id: str, **kwargs) -> dict:
    return default_client().result(job_id, **kwargs)


def evaluate(*args, **kwargs) -> dict:
    return default_client().evaluate(*args, **kwargs)


def reward(*args, **kwargs) -> float:
    return default_client().reward(*args, **kwargs)
