"""The Python clients against a fake `cudal1 serve` that follows docs/serve.md.
Run: cd integrations && python3 -m unittest -v test_clients"""
import json
import os
import re
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cudal1_client
import trl_reward
import verl_compute_score
from cudal1_client import Client, Cudal1Error, Cudal1Timeout, extract_code

TOKEN = "s3cret"


class FakeService:
    """Outcomes come from markers in the kernel code: "SPEEDUP = x" is accepted with reward x,
    WRONG is incorrect (0), HACK is a caught hack (-1), CRASH makes the job fail. /results answers
    202 `polls` times per job before the outcome."""

    max_body = 64 * 1024

    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.reset()

    def reset(self):
        self.lock = threading.Lock()
        self.jobs, self.log, self.injected = {}, [], []
        self.polls = 2

    def inject(self, method, path, code, headers=None):
        """The next request to method+path is answered with code instead."""
        self.injected.append((method, path, code, headers or {}))

    def calls(self, method, prefix):
        return [entry for entry in self.log if entry[0] == method and entry[1].startswith(prefix)]

    def outcome(self, code):
        if "CRASH" in code:
            return {"status": "failed", "error": "worker died"}
        if "HACK" in code:
            return {"status": "done", "correct": True, "accepted": False, "speedup": 40.0, "reward": -1.0,
                    "verdict": "reward_hack", "flags": ["timing_tamper"], "result": {}}
        m = re.search(r"SPEEDUP = ([\d.]+)", code)
        if m and "WRONG" not in code:
            s = float(m.group(1))
            return {"status": "done", "correct": True, "accepted": True, "speedup": s, "reward": s,
                    "verdict": "ok", "flags": [], "result": {}}
        return {"status": "done", "correct": False, "accepted": False, "speedup": None, "reward": 0.0,
                "verdict": "incorrect", "flags": [], "result": {}}

    def _handler(service):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, code, body, headers=None):
                raw = json.dumps(body).encode()
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def handle_any(self, method):
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                with service.lock:
                    service.log.append((method, self.path, self.headers.get("Authorization"), raw))
                    for i, (m, p, code, headers) in enumerate(service.injected):
                        if m == method and self.path.startswith(p):
                            del service.injected[i]
                            return self.answer(code, {"error": f"injected {code}"}, headers)
                    return self.route(method, raw)

            def route(self, method, raw):
                if self.path == "/healthz":
                    return self.answer(200, {"ok": True, "queued": 0, "running": 0})
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self.answer(401, {"error": "missing or wrong bearer token"})
                if len(raw) > service.max_body:
                    return self.answer(413, {"error": "body too large"})
                if method == "POST" and self.path in ("/evaluate", "/evaluate/batch"):
                    try:
                        body = json.loads(raw)
                        bodies = body["requests"] if self.path.endswith("batch") else [body]
                    except (ValueError, KeyError):
                        return self.answer(400, {"error": "body: not JSON or no requests"})
                    for i, b in enumerate(bodies):
                        for field in ("task_id", "kernel_code"):
                            if not isinstance(b.get(field), str) or not b[field]:
                                return self.answer(400, {"error": f"requests[{i}].{field} missing"})
                        if b["task_id"].startswith("unknown/") and not b.get("reference_code"):
                            return self.answer(400, {"error": f"requests[{i}].task_id: not in the suite"})
                    ids = []
                    for b in bodies:
                        job_id = f"job{len(service.jobs) + 1}"
                        service.jobs[job_id] = {"body": b, "polls": 0}
                        ids.append(job_id)
                    if self.path.endswith("batch"):
                        return self.answer(202, {"job_ids": ids})
                    return self.answer(202, {"job_id": ids[0], "status": "queued"})
                m = re.fullmatch(r"/(status|results)/(\w+)", self.path)
                if method == "GET" and m:
                    job = service.jobs.get(m.group(2))
                    if job is None:
                        return self.answer(404, {"error": "unknown job"})
                    outcome = service.outcome(job["body"]["kernel_code"])
                    if m.group(1) == "status":
                        return self.answer(200, {"job_id": m.group(2), "status": outcome["status"], "attempts": 1})
                    if job["polls"] < service.polls:
                        job["polls"] += 1
                        return self.answer(202, {"job_id": m.group(2), "status": "running"})
                    return self.answer(200, dict(outcome, job_id=m.group(2)))
                return self.answer(404, {"error": "no such endpoint"})

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

        return Handler


def answer(code, heading="## Code Implementation"):
    return f"## Performance Analysis\nIt is slow.\n\n{heading}\n```python\n{code}```\n"


def kernel(marker):
    return f"import torch\n\nclass ModelNew(torch.nn.Module):\n    pass  # {marker}\n"


service = None


def setUpModule():
    global service
    service = FakeService()
    os.environ["CUDAL1_SERVE_URL"] = service.url
    os.environ["CUDAL1_SERVE_TOKEN"] = TOKEN


def tearDownModule():
    service.server.shutdown()


class ServiceTest(unittest.TestCase):
    def setUp(self):
        service.reset()
        verl_compute_score._clients.clear()
        trl_reward._default = None
        self.sleeps = []
        self.client = Client(sleep=self.sleeps.append)


class ClientTest(ServiceTest):
    def test_evaluate_polls_results_until_done(self):
        answer = self.client.evaluate("level1/23_silu", kernel("SPEEDUP = 2.5"), poll_s=0.25)
        self.assertEqual(answer["status"], "done")
        self.assertEqual(answer["reward"], 2.5)
        self.assertEqual(len(service.calls("GET", "/results/")), 3, "202 twice, then the outcome")
        self.assertEqual(self.sleeps, [0.25, 0.25])
        sent = json.loads(service.calls("POST", "/evaluate")[0][3])
        self.assertEqual(sent, {"task_id": "level1/23_silu", "kernel_code": kernel("SPEEDUP = 2.5"), "timing": True})

    def test_rewards_follow_verdicts(self):
        self.assertEqual(self.client.reward("t", kernel("SPEEDUP = 1.5")), 1.5)
        self.assertEqual(self.client.reward("t", kernel("WRONG")), 0.0)
        self.assertEqual(self.client.reward("t", kernel("HACK")), -1.0)

    def test_failed_job_is_an_answer_and_gets_the_failed_reward(self):
        job = self.client.submit("t", kernel("CRASH"))
        self.assertEqual(self.client.result(job), {"job_id": job, "status": "failed", "error": "worker died"})
        self.assertEqual(self.client.reward("t", kernel("CRASH")), 0.0)
        self.assertEqual(self.client.reward("t", kernel("CRASH"), failed_reward=-0.5), -0.5)

    def test_result_without_waiting_and_status(self):
        job = self.client.submit("t", kernel("SPEEDUP = 1.1"))
        self.assertEqual(self.client.result(job, wait=False)["status"], "running")
        self.assertEqual(self.client.status(job)["status"], "done")
        self.assertEqual(self.sleeps, [])

    def test_wait_runs_out(self):
        job = self.client.submit("t", kernel("SPEEDUP = 1.1"))
        with self.assertRaises(Cudal1Timeout) as caught:
            self.client.result(job, timeout_s=0)
        self.assertEqual(caught.exception.job_ids, [job])

    def test_429_is_retried_after_retry_after(self):
        service.inject("POST", "/evaluate", 429, {"Retry-After": "7"})
        self.assertEqual(self.client.submit("t", kernel("x")), "job1")
        self.assertEqual(len(service.calls("POST", "/evaluate")), 2)
        self.assertEqual(self.sleeps, [7.0])

    def test_5xx_is_retried_with_growing_backoff(self):
        service.inject("GET", "/healthz", 503)
        service.inject("GET", "/healthz", 500)
        self.assertTrue(self.client.healthz()["ok"])
        self.assertEqual(len(self.sleeps), 2)
        self.assertTrue(0.25 <= self.sleeps[0] <= 0.5 and 0.5 <= self.sleeps[1] <= 1.0, self.sleeps)

    def test_connection_errors_are_retried_then_reported(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{s.getsockname()[1]}"
        client = Client(url=closed, retries=2, sleep=self.sleeps.append)
        with self.assertRaises(Cudal1Error) as caught:
            client.healthz()
        self.assertIsNone(caught.exception.status)
        self.assertEqual(len(self.sleeps), 2)

    def test_client_errors_are_not_retried(self):
        with self.assertRaises(Cudal1Error) as caught:
            Client(token="", sleep=self.sleeps.append).submit("t", kernel("x"))
        self.assertEqual(caught.exception.status, 401)
        with self.assertRaises(Cudal1Error) as caught:
            self.client.submit("unknown/task", kernel("x"))
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("task_id", caught.exception.message)
        with self.assertRaises(Cudal1Error) as caught:
            self.client.status("nope")
        self.assertEqual(caught.exception.status, 404)
        with self.assertRaises(Cudal1Error) as caught:
            self.client.submit("t", "x" * (FakeService.max_body + 1))
        self.assertEqual(caught.exception.status, 413)
        self.assertEqual(self.sleeps, [])
        self.assertEqual(len(service.log), 4)

    def test_batches_are_split_and_keep_their_order(self):
        client = Client(max_batch=2, sleep=self.sleeps.append)
        ids = client.submit_batch([{"task_id": "t", "kernel_code": kernel(f"SPEEDUP = {i}.0")} for i in range(1, 6)])
        self.assertEqual(ids, ["job1", "job2", "job3", "job4", "job5"])
        self.assertEqual(len(service.calls("POST", "/evaluate/batch")), 3)
        self.assertEqual([a["reward"] for a in client.results(ids)], [1.0, 2.0, 3.0, 4.0, 5.0])

    def test_a_reference_alone_names_its_task_by_content(self):
        self.client.submit(None, kernel("x"), reference_code="class Model: pass\n")
        sent = json.loads(service.calls("POST", "/evaluate")[0][3])
        self.assertRegex(sent["task_id"], r"^custom/[0-9a-f]{16}$")
        self.assertEqual(sent["reference_code"], "class Model: pass\n")

    def test_module_functions_use_the_environment(self):
        cudal1_client._default = None
        job = cudal1_client.submit("t", kernel("SPEEDUP = 3.0"))
        self.assertEqual(cudal1_client.result(job, poll_s=0.01)["reward"], 3.0)
        self.assertEqual(service.log[0][2], f"Bearer {TOKEN}")


class ExtractCodeTest(unittest.TestCase):
    def test_code_implementation_section(self):
        text = "```python\nold = 1\n```\n" + answer(kernel("a")) + "## Notes\n```python\nlater = 2\n```\n"
        self.assertEqual(extract_code(text), kernel("a"))

    def test_the_block_defining_modelnew_wins_in_the_section(self):
        text = "## Code Implementation\n```bash\npip install x\n```\n```python\n" + kernel("b") + "```\n"
        self.assertEqual(extract_code(text), kernel("b"))

    def test_outside_the_section_is_no_answer(self):
        # The service's rule: a python block with no `## Code Implementation` above it is not read.
        text = "Try this:\n```python\nfirst = 1\n```\nor better:\n```python\n" + kernel("c") + "```\n"
        self.assertIsNone(extract_code(text))

    def test_two_candidates_in_the_section_is_no_answer(self):
        text = "## Code Implementation\n```python\n" + kernel("f") + "```\n```python\n" + kernel("g") + "```\n"
        self.assertIsNone(extract_code(text))

    def test_longer_fences_quote_shorter_ones(self):
        code = 'doc = """\n```python\nx\n```\n"""\n' + kernel("d")
        self.assertEqual(extract_code("## Code Implementation\n````python\n" + code + "````\n"), code)

    def test_a_heading_inside_a_block_is_code(self):
        code = kernel("e") + "## Code Implementation\n"
        self.assertEqual(extract_code("## Code Implementation\n```python\n" + code + "```\n"), code)

    def test_no_code(self):
        self.assertIsNone(extract_code("I would write a fused kernel."))
        self.assertIsNone(extract_code("## Code Implementation\n```python\n" + kernel("cut off")))
        self.assertIsNone(extract_code(""))


class VerlTest(ServiceTest):
    def test_task_id_string(self):
        score = verl_compute_score.compute_score("kernelbench", answer(kernel("SPEEDUP = 1.8")), "level1/23_silu",
                                                 poll_s=0.01)
        self.assertEqual(score, 1.8)
        self.assertEqual(json.loads(service.calls("POST", "/evaluate/batch")[0][3])["requests"][0]["task_id"],
                         "level1/23_silu")

    def test_dict_json_reference_and_extra_info_ground_truths(self):
        reference = "import torch\nclass Model(torch.nn.Module):\n    pass\n"
        truths = [{"task_id": "level1/1", "reference_code": reference}, json.dumps({"task_id": "level1/2"}),
                  reference, None]
        extras = [None, None, None, {"task_id": "level1/4"}]
        for truth, extra in zip(truths, extras):
            score = verl_compute_score.compute_score("kb", answer(kernel("HACK")), truth, extra, poll_s=0.01)
            self.assertEqual(score, -1.0)
        sent = [json.loads(c[3])["requests"][0] for c in service.calls("POST", "/evaluate/batch")]
        self.assertEqual([s["task_id"] for s in sent[:2] + sent[3:]], ["level1/1", "level1/2", "level1/4"])
        self.assertTrue(sent[2]["task_id"].startswith("custom/"))
        self.assertEqual([s.get("reference_code") for s in sent], [reference, None, reference, None])

    def test_an_answer_without_code_scores_zero_unsent(self):
        self.assertEqual(verl_compute_score.compute_score("kb", "no idea", "level1/1"), 0.0)
        self.assertEqual(service.log, [])

    def test_batch_form_sends_one_batch(self):
        solutions = [answer(kernel("SPEEDUP = 2.0")), "nothing", answer(kernel("WRONG")), answer(kernel("CRASH"))]
        scores = verl_compute_score.compute_score(data_sources=["kb"] * 4, solution_strs=solutions,
                                                  ground_truths=["a", "b", "c", "d"], extra_infos=None, poll_s=0.01)
        self.assertEqual(scores, [2.0, 0.0, 0.0, 0.0])
        self.assertEqual(len(service.calls("POST", "/evaluate")), 1)
        self.assertEqual(len(json.loads(service.calls("POST", "/evaluate/batch")[0][3])["requests"]), 3)

    def test_details_for_verl_extra_info(self):
        details = verl_compute_score.compute_score_batch(None, [answer(kernel("SPEEDUP = 2.0")), "none"], ["a", "b"],
                                                         poll_s=0.01, return_dict=True)
        self.assertEqual(details[0], {"score": 2.0, "correct": 1.0, "accepted": 1.0, "speedup": 2.0, "no_code": 0.0})
        self.assertEqual(details[1], {"score": 0.0, "correct": 0.0, "accepted": 0.0, "speedup": 0.0, "no_code": 1.0})

    def test_a_sample_without_a_task_is_refused(self):
        with self.assertRaises(ValueError):
            verl_compute_score.compute_score("kb", answer(kernel("x")), None)


class TrlTest(ServiceTest):
    def test_string_and_chat_completions_in_one_batch(self):
        reward = trl_reward.make_cudal1_reward(poll_s=0.01)
        completions = [
            answer(kernel("SPEEDUP = 1.25")),
            [{"role": "assistant", "content": answer(kernel("SPEEDUP = 3.0"))}],
            [{"role": "assistant", "content": [{"type": "text", "text": answer(kernel("HACK"))}]}],
            [{"role": "assistant", "content": "No code today."}],
        ]
        rewards = reward(prompts=["p"] * 4, completions=completions, task_id=["a", "b", "c", "d"], extra=[1] * 4)
        self.assertEqual(rewards, [1.25, 3.0, -1.0, 0.0])
        batches = service.calls("POST", "/evaluate")
        self.assertEqual(len(batches), 1)
        self.assertEqual([r["task_id"] for r in json.loads(batches[0][3])["requests"]], ["a", "b", "c"])

    def test_reference_code_column(self):
        reward = trl_reward.make_cudal1_reward(poll_s=0.01)
        self.assertEqual(reward([], [answer(kernel("SPEEDUP = 2.0"))], reference_code=["class Model: pass\n"]), [2.0])
        sent = json.loads(service.calls("POST", "/evaluate/batch")[0][3])["requests"][0]
        self.assertTrue(sent["task_id"].startswith("custom/"))

    def test_module_function_from_the_environment(self):
        service.polls = 0
        self.assertEqual(trl_reward.cudal1_reward(["p"], [answer(kernel("SPEEDUP = 1.5"))], ["a"]), [1.5])
        self.assertEqual(trl_reward.cudal1_reward.__name__, "cudal1_reward")

    def test_nothing_to_send(self):
        self.assertEqual(trl_reward.make_cudal1_reward()(["p"], ["no code"], task_id=["a"]), [0.0])
        self.assertEqual(service.log, [])


if __name__ == "__main__":
    unittest.main()
