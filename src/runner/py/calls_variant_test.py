"""A timed call's inputs (calls.variant): the same seed gives the same values bit for bit (both
workers build them apart), and no row of a variant is a scaled copy of a row of its case, so a
memo that matches rows up to order and scale, filled while the candidate was checked, never
answers a timed call.

Run by ctest (runner.CallsVariant) with a Python that has torch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import with_torch  # noqa: E402

with_torch.ensure()
import torch  # noqa: E402

import calls  # noqa: E402


def case():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(32, 16, generator=g)
    x[0, :4] = 0.0
    return [x, torch.randint(0, 10, (32,), generator=g), torch.rand(32, 16, generator=g) + 1.0]


class VariantTest(unittest.TestCase):
    def test_the_same_seed_gives_the_same_bits(self):
        a, b = calls.variant(case(), 1234), calls.variant(case(), 1234)
        for x, y in zip(a, b):
            self.assertTrue(torch.equal(x, y))
        self.assertFalse(torch.equal(calls.variant(case(), 1235)[0], a[0]))

    def test_no_row_is_a_scaled_copy_of_a_case_row(self):
        x, labels, positive = case()
        v, v_labels, v_positive = calls.variant([x, labels, positive], 99)
        # Paired inputs stay paired: the integer labels show the permutation the rows took.
        perm = [int((labels == l).nonzero()[0]) if (labels == l).sum() == 1 else None for l in v_labels]
        for i, p in enumerate(perm):
            if p is None:
                continue
            ratio = v[i] / x[p]
            ratio = ratio[torch.isfinite(ratio)]
            self.assertGreater(float(ratio.max() / ratio.min()), 1.05, "row %d is its case row times one factor" % i)
        self.assertTrue(bool((v_positive > 0).all()), "signs, and so domains, are kept")
        self.assertEqual(int((v == 0).sum()), int((x == 0).sum()), "zeros stay zeros")
        self.assertTrue(bool((v.abs() <= x.abs().max() * 1.65).all()))
        self.assertEqual(sorted(v_labels.tolist()), sorted(labels.tolist()), "integers are only permuted")

    def test_no_seed_leaves_the_case_as_it_is(self):
        values = case()
        self.assertIs(calls.variant(values, None), values)


if __name__ == "__main__":
    unittest.main()
