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

BOTH = {"env", "calls"}
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
