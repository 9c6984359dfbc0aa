"""scripts/headline_errors.py: a bench JSON whose row quotes the candidate's code in its traceback
is cut to each error's first line, and its verdicts are still carried by `cudal1 bench
--rows-from`; a file it cannot read is left as it was.

Run by ctest (scripts.HeadlineErrors) with CUDAL1_BINARY set to the cudal1 under test.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "fixtures")
SCRIPT = os.path.join(HERE, "headline_errors.py")
# A line of the candidate's own source, which its traceback quotes.
SOURCE_LINE = 'raise RuntimeError("fixture: deliberate failure in forward'


def cli(*args):
    run = subprocess.run([os.environ["CUDAL1_BINARY"], *args], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise AssertionError(f"cudal1 {' '.join(args)} failed ({run.returncode}): {run.stderr}")
    return json.loads(run.stdout), run.stderr


def headline(*paths):
    return subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True, timeout=60)


class HeadlineErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        for sub in ("suite/level1", "kernels/level1"):
            os.makedirs(os.path.join(self.dir, sub))
        shutil.copy(os.path.join(FIXTURES, "tasks", "gemm_relu.py"), os.path.join(self.dir, "suite/level1/gemm_relu.py"))
        shutil.copy(os.path.join(FIXTURES, "candidates", "runtime_error_forward_raises.py"),
                    os.path.join(self.dir, "kernels/level1/gemm_relu.py"))

    def tearDown(self):
        self.tmp.cleanup()

    def bench(self, db, *more):
        return cli("bench", "--folder", os.path.join(self.dir, "kernels"), "--suite", os.path.join(self.dir, "suite"),
                   "--device", "cpu", "--no-sol", "--no-baselines", "--json", "--db", os.path.join(self.dir, db), *more)

    def test_errors_lose_the_code_and_the_verdicts_still_carry(self):
        first, _ = self.bench("first.db")
        row = first["rows"][0]
        self.assertEqual(row["status"], "runtime_error")
        first_line = row["error"].split("\n", 1)[0]
        self.assertIn("RuntimeError: fixture: deliberate failure in forward", first_line)
        # The row shows where the candidate failed: its own frame, past the harness's.
        self.assertIn(SOURCE_LINE, row["error"])
        path = os.path.join(self.dir, "earlier.json")
        with open(path, "w") as f:
            json.dump(first, f, indent=1)  # pretty-printed, as a person might keep it

        run = headline(path)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("1 errors cut", run.stderr)
        with open(path) as f:
            text = f.read()
        self.assertNotIn(SOURCE_LINE, text)
        cut = json.loads(text)
        self.assertEqual(cut["rows"][0]["error"], first_line)
        self.assertEqual({k: v for k, v in cut["rows"][0].items() if k != "error"},
                         {k: v for k, v in row.items() if k != "error"})

        carried, err = self.bench("next.db", "--stored-only", "--rows-from", path)
        self.assertIn("1 taken from --rows-from", err)
        self.assertEqual(carried["rows"][0]["status"], "runtime_error")
        self.assertEqual(carried["rows"][0]["error"], first_line)
        self.assertEqual(carried["rows"][0]["carried_from"], path)

    def test_json_lines_are_cut_and_a_broken_file_is_left_as_it_was(self):
        good = os.path.join(self.dir, "enrich.jsonl")
        with open(good, "w") as f:
            f.write(json.dumps({"task": "a", "status": "runtime_error", "error": "what failed\n  code line"}) + "\n")
            f.write(json.dumps({"task": "b", "verified": True}) + "\n")
        run = headline(good)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(good) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(lines, [{"task": "a", "status": "runtime_error", "error": "what failed"},
                                 {"task": "b", "verified": True}])

        broken = os.path.join(self.dir, "broken.jsonl")
        before = json.dumps({"error": "what\n  code"}) + "\n{not json\n"
        with open(broken, "w") as f:
            f.write(before)
        run = headline(broken)
        self.assertEqual(run.returncode, 3)
        self.assertIn("broken.jsonl:2", run.stderr)
        with open(broken) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.dir)).count("broken.jsonl"), 1)
        self.assertFalse([n for n in os.listdir(self.dir) if n.startswith(".headline-")])


if __name__ == "__main__":
    unittest.main()
