"""The baselines' timed loop matches the candidate's (runner/py/baselines.py): as many buffer sets
as the evaluator rotates over, and per bucket and side the settle calls and timed calls asked for.
Host-only: what needs CUDA or torch.compile is checked to say so.

Run by ctest (runner.BaselinesTiming) with a Python that has torch.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import with_torch  # noqa: E402

with_torch.ensure()
import torch  # noqa: E402

import baselines  # noqa: E402
import calls  # noqa: E402


class CountingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.addresses = set()

    def forward(self, x):
        self.calls += 1
        self.addresses.add(x.data_ptr())
        return x * 2


class BaselinesTiming(unittest.TestCase):
    def prepared(self, model, warmup=1):
        return baselines.prepare(model, [torch.ones(4, 4)], torch.device("cpu"), ["eager_control"], warmup)

    def test_buffers_rotate_over_as_many_sets_as_a_candidates_calls(self):
        model = CountingModel()
        state = self.prepared(model)
        self.assertEqual(len(state["buffers"]), calls.SLOTS)
        baselines.time_prepared(state, buckets=1, calls=calls.SLOTS, settle=0)
        self.assertEqual(len(model.addresses), calls.SLOTS)

    def test_each_side_runs_its_settle_calls_then_its_timed_calls(self):
        model = CountingModel()
        state = self.prepared(model)
        model.calls = 0
        figures = baselines.time_prepared(state, buckets=3, calls=5, settle=2)
        # eager_control is the model on both sides: two sides, each 2 settle + 5 timed calls.
        self.assertEqual(model.calls, 3 * 2 * (2 + 5))
        self.assertEqual(len(figures["eager_control"]["buckets"]), 3)
        self.assertEqual(figures["eager_control"]["copied_calls"], 0)

    def test_what_needs_cuda_or_compile_says_so(self):
        state = baselines.prepare(CountingModel(), [torch.ones(4, 4)], torch.device("cpu"), baselines.NAMES, 1)
        self.assertIn("CUDA graphs need a CUDA device", state["out"]["cuda_graph"]["unavailable"])
        if not hasattr(torch, "compile"):
            self.assertIn("has no torch.compile", state["out"]["compile_ro"]["unavailable"])

    def test_an_earlier_name_of_a_compile_baseline_still_builds_it(self):
        # What an older cudal1 binary asks for: compile_default, compile_reduce_overhead.
        built = baselines._compile
        try:
            baselines._compile = lambda model, mode, buffers: ("compiled", mode)
            self.assertEqual(baselines._build("compile_default", None, [], "cpu"), ("compiled", None))
            self.assertEqual(baselines._build("compile_reduce_overhead", None, [], "cpu"), ("compiled", "reduce-overhead"))
            self.assertEqual(baselines._build("compile_ro", None, [], "cpu"), ("compiled", "reduce-overhead"))
        finally:
            baselines._compile = built
        with self.assertRaisesRegex(ValueError, "unknown baseline"):
            baselines._build("compile_fast", None, [], "cpu")

    def test_marking_static_addresses_is_harmless_without_dynamo(self):
        baselines._mark_static([[torch.ones(2)], [torch.ones(2), 3]])  # torch 1.x: nothing to call


if __name__ == "__main__":
    unittest.main()
