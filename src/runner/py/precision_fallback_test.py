"""The precision ladder where the device runs out of memory: each step is done again on the host
and named in the reply, never dropped. A fault-injecting model stands in for a full GPU: it raises
PyTorch's out-of-memory error the first time it runs in the dtypes it is told to.

Run by ctest (runner.PrecisionFallback) with a Python that has torch."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import with_torch  # noqa: E402

with_torch.ensure()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import precision  # noqa: E402

_OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)


class FullDevice(nn.Module):
    fail_once = set()  # dtypes whose first run raises; shared by every copy the ladder makes

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(-1, 1, 64).reshape(8, 8))

    def forward(self, x):
        if x.dtype in FullDevice.fail_once:
            FullDevice.fail_once.discard(x.dtype)
            raise _OOM("CUDA out of memory. Tried to allocate 2.00 GiB")
        return torch.relu(x @ self.weight)


class LadderOnAFullDevice(unittest.TestCase):
    def setUp(self):
        self.values = [torch.randn(16, 8)]
        self.oracle_file = os.path.join(tempfile.mkdtemp(), "oracle.ctf")

    def test_the_oracle_is_computed_on_the_host(self):
        FullDevice.fail_once = {torch.float64}
        model = FullDevice()
        reply = precision.ladder(model, self.values, torch.device("cpu"), self.oracle_file)
        self.assertNotIn("skipped", reply)
        self.assertEqual(reply["on_host"], ["oracle"])
        # 16x8 float64 values and a header.
        self.assertGreater(os.path.getsize(self.oracle_file), 16 * 8 * 8)
        self.assertLess(reply["rungs"]["as_run"][0], 1e-6)  # float32 against a true float64 oracle

    def test_an_oracle_model_without_room_is_made_on_the_host(self):
        FullDevice.fail_once = set()
        deepcopy = precision.copy.deepcopy
        refused = []

        def full_once(obj, memo=None):
            if memo is None and not refused:  # the device copy; the host copy passes a memo
                refused.append(obj)
                raise _OOM("CUDA out of memory. Tried to allocate 2.00 GiB")
            return deepcopy(obj, memo)

        precision.copy.deepcopy = full_once
        try:
            reply = precision.ladder(FullDevice(), self.values, torch.device("cpu"),
                                     self.oracle_file)
        finally:
            precision.copy.deepcopy = deepcopy
        self.assertEqual(reply["on_host"], ["oracle model"])
        self.assertLess(reply["rungs"]["as_run"][0], 1e-6)

    def test_a_reduced_rung_is_taken_on_the_host_not_dropped(self):
        FullDevice.fail_once = {torch.bfloat16}
        reply = precision.ladder(FullDevice(), self.values, torch.device("cpu"), self.oracle_file)
        self.assertEqual(reply["on_host"], ["bf16_cast"])
        self.assertGreater(reply["rungs"]["bf16_cast"][0], 1e-4)  # bf16's rounding, measured

    def test_other_errors_are_not_mistaken_for_a_full_device(self):
        class Broken(nn.Module):
            def forward(self, x):
                raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
        reply = precision.ladder(Broken(), self.values, torch.device("cpu"), self.oracle_file)
        self.assertIn("skipped", reply)
        self.assertNotIn("on_host", reply)


if __name__ == "__main__":
    unittest.main()
