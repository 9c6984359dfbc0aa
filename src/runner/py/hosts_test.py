"""The two roles' hosts (reference_host.py, candidate_host.py): each answers exactly its own
role's ops and the shared ones, and refuses the other role's as an unknown op, with the reply
the parent has always had. And the worker's modules import one another without a cycle.

Run by ctest (runner.Hosts) with a Python that has torch.
"""
import ast
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import with_torch  # noqa: E402

with_torch.ensure()

from candidate_host import CandidateHost  # noqa: E402
from reference_host import ReferenceHost  # noqa: E402

BOTH = {"env", "calls", "start"}
REFERENCE = {"load_task", "describe", "ceilings", "eager_time", "lint_task", "baselines",
             "baselines_prepare", "baselines_time", "sample", "precision_ladder", "oracle",
             "prepare_build", "cuda_arch"}
CANDIDATE = {"load_candidate", "profile", "capture_builds"}


def _ops(host_class):
    return {name[len("op_"):] for name in dir(host_class) if name.startswith("op_")}


class EachRoleItsOwnOps(unittest.TestCase):
    def test_each_host_has_exactly_its_roles_ops(self):
        self.assertEqual(_ops(ReferenceHost), BOTH | REFERENCE)
        self.assertEqual(_ops(CandidateHost), BOTH | CANDIDATE)

    def test_an_op_of_the_other_role_is_refused_as_unknown(self):
        for host, foreign in ((ReferenceHost("cpu"), CANDIDATE), (CandidateHost("cpu"), REFERENCE)):
            for op in sorted(foreign) + ["no_such_op", None]:
                with self.subTest(role=host.role, op=op):
                    self.assertEqual(host.handle(op, {}), {
                        "ok": False, "error": "protocol",
                        "message": f"unknown op {op!r} for {host.role}"})

    def test_both_roles_answer_the_shared_ops(self):
        for host in (ReferenceHost("cpu"), CandidateHost("cpu")):
            with self.subTest(role=host.role):
                self.assertTrue(host.handle("env", {})["ok"])


class NoDeviceBeforeTheStart(unittest.TestCase):
    """A queue starts workers ahead of their evaluation; a CUDA context made then held GPU memory
    outside the lanes' budget, and a later worker died of `CUDA error: out of memory` as it
    started. The device is taken at the start op (or the first op of a caller that sends none)."""

    def test_a_cuda_host_is_made_without_touching_cuda(self):
        import torch
        calls = []
        saved = torch.cuda.set_device, torch.cuda.current_device
        torch.cuda.set_device = lambda *a: calls.append("set_device")
        torch.cuda.current_device = lambda: calls.append("current_device") or 0
        try:
            for host_class in (ReferenceHost, CandidateHost):
                host = host_class("cuda:0")
                self.assertIsNone(host.timer)
        finally:
            torch.cuda.set_device, torch.cuda.current_device = saved
        self.assertEqual(calls, [])

    def test_the_start_op_takes_the_device_once(self):
        host = ReferenceHost("cpu")
        self.assertEqual(host.handle("start", {}), {"ok": True, "device": "cpu"})
        timer = host.timer
        self.assertIsNotNone(timer)
        self.assertTrue(host.handle("start", {})["ok"])
        self.assertIs(host.timer, timer)

    def test_a_first_op_without_a_start_takes_the_device_itself(self):
        host = CandidateHost("cpu")
        self.assertTrue(host.handle("env", {})["ok"])
        self.assertIsNotNone(host.timer)

    def test_a_device_that_cannot_be_taken_is_the_devices_failure(self):
        host = ReferenceHost("cpu")

        def full():
            raise RuntimeError("CUDA error: out of memory")
        host._start_device = full
        refused = {"ok": False, "error": "device", "type": "RuntimeError", "message": "CUDA error: out of memory"}
        self.assertEqual(host.handle("start", {}), refused)
        self.assertIsNone(host.timer)
        # Taken with a first op instead: the reply is still the device's, never that op's own
        # failure (which the parent would blame on the task).
        self.assertEqual(host.handle("env", {}), refused)


class TheReferencePaysTheCandidatesHarness(unittest.TestCase):
    """The parent subtracts each side's cost of empty calls from its clock, the candidate's only up
    to the reference's plus an allowance: both sides' calls must run the same harness, the
    guard's check and the audit hook it wakes included."""

    def test_a_loaded_reference_checks_the_guard_after_every_call(self):
        import sys
        import tempfile
        fixture = os.path.join(HERE, "..", "..", "..", "tests", "fixtures", "tasks", "scale_add.py")
        woken = []
        sys.addaudithook(lambda event, args: woken.append(event) if event == "object.__getattr__" else None)
        with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as private:
            host = ReferenceHost("cpu")
            loaded = host.handle("load_task", {"task": os.path.abspath(fixture), "workdir": work, "private": private,
                                               "inits": [{"seed": 1}], "cases": [{"init": 0, "dist": "normal", "seed": 2}]})
            self.assertTrue(loaded["ok"], loaded)
            self.assertTrue(host.timer.watch[0], "the reference's calls check nothing")
            before = len(woken)
            reply = host.handle("calls", {"calls": [{"case": 0, "variant": None, "slot": i} for i in range(4)]})
            self.assertTrue(reply["ok"], reply)
            # Each check reads every watched function's __code__, and each read is an audit event.
            self.assertGreater(len(woken) - before, 4 * 10)


def _imports(path, local):
    """The sibling modules `path` imports, at its top or inside a function."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & local


def _cycle(graph):
    """One import cycle of `graph` as a list of modules, or None."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return None
        path.append(module)
        for other in sorted(graph[module]):
            cycle = visit(other)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return None


class NoImportCycle(unittest.TestCase):
    def test_the_workers_modules_import_without_a_cycle(self):
        files = {name[:-3]: os.path.join(HERE, name) for name in os.listdir(HERE)
                 if name.endswith(".py") and not name.endswith("_test.py")}
        graph = {module: _imports(path, set(files)) for module, path in files.items()}
        self.assertIn("task_loading", graph["lint"])
        self.assertIsNone(_cycle(graph))

    def test_a_cycle_is_found(self):
        self.assertEqual(_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}), ["a", "b", "c", "a"])
        self.assertIsNone(_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}))


if __name__ == "__main__":
    unittest.main()
