"""The A/A generator (bench/aa_candidates.py) on the host: what it writes for each device, that each
transformation's ModelNew computes what the task's Model does with the same weights, and that the
identity candidate, evaluated for real, is accepted near 1.00x.

Run by ctest (bench.AACandidates) with CUDAL1_BINARY set to the cudal1 under test.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TASK = os.path.join(ROOT, "tests", "fixtures", "tasks", "conv_bn_relu.py")
sys.path.insert(0, HERE)
import aa_candidates  # noqa: E402


def torch_python():
    """An interpreter with torch, found as the evaluator finds one."""
    for python in filter(None, [os.environ.get("CUDAL1_PYTHON"), "python3", "/usr/bin/python3"]):
        if shutil.which(python) and subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    raise unittest.SkipTest("no Python with torch: set CUDAL1_PYTHON")


# Builds the task's Model and a candidate's ModelNew under one seed and compares them on one input.
_SAME_AS_MODEL = r'''
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
torch.manual_seed(0)
init = mod.get_init_inputs()
torch.manual_seed(0)
ref = mod.Model(*init)
torch.manual_seed(0)
new = mod.ModelNew(*init)
torch.manual_seed(1)
x = mod.get_inputs()
with torch.no_grad():
    same = torch.allclose(ref(*x), new(*x))
print("same" if same else "different")
'''


class Generator(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="cudal1-aa-")

    def tearDown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def test_on_the_host_only_identity_is_written(self):
        records = aa_candidates.write_candidates(self.out, TASK, "cpu")
        self.assertEqual([r["transformation"] for r in records], aa_candidates.TRANSFORMATIONS)
        written = [r for r in records if "file" in r]
        self.assertEqual([r["transformation"] for r in written], ["identity"])
        for r in records[1:]:
            self.assertIn("needs a CUDA device", r["skipped"])

    def test_every_transformation_computes_the_models_outputs(self):
        """On the host each file falls back to what it wraps (CUDA graphs need CUDA, cuDNN's
        flag does nothing); a torch without torch.compile leaves the compile files out."""
        python = torch_python()
        has_compile = subprocess.run([python, "-c", "import torch; assert hasattr(torch, 'compile')"],
                                     capture_output=True).returncode == 0
        for r in aa_candidates.write_candidates(self.out, TASK, "cuda"):
            if r["transformation"].startswith("compile") and not has_compile:
                continue
            with self.subTest(r["transformation"]):
                run = subprocess.run([python, "-c", _SAME_AS_MODEL, r["file"]], capture_output=True, text=True)
                self.assertEqual(run.stdout.strip(), "same", run.stderr[-2000:])

    def test_identity_is_accepted_near_one(self):
        binary = os.environ.get("CUDAL1_BINARY", os.path.join(ROOT, "build", "cudal1"))
        if not os.access(binary, os.X_OK):
            self.skipTest(f"no cudal1 at {binary}: set CUDAL1_BINARY")
        record = aa_candidates.write_candidates(self.out, TASK, "cpu")[0]
        run = subprocess.run([binary, "eval", "--task", TASK, "--candidate", record["file"], "--device", "cpu",
                              "--no-store", "--json"], capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        result = json.loads(run.stdout)
        self.assertTrue(result["accepted"], result.get("error"))
        # A generous window: CI machines are loaded; bench/aa_matrix.sh reports the real figure.
        raw = result["statistics"]["raw_speedup"]
        self.assertGreater(raw, 0.5, result["statistics"])
        self.assertLess(raw, 2.0, result["statistics"])

    def test_a_missing_task_says_what_to_give(self):
        run = subprocess.run([sys.executable, os.path.join(HERE, "aa_candidates.py"), self.out, "no/such_task.py"],
                             capture_output=True, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("give the path of a task", run.stderr)


if __name__ == "__main__":
    unittest.main()
