"""A seed's draws never change (task_loading.py): the weights and inputs the reference makes,
lint probes and baselines time are compared with values captured from the code before it, on the
CPU, for bundled tasks. The C++ parent and stored results rely on these draws.

Run by ctest (runner.TaskLoadingSeeds) with a Python that has torch.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import with_torch  # noqa: E402

with_torch.ensure()
import torch  # noqa: E402

import task_loading  # noqa: E402
from reference_host import ReferenceHost  # noqa: E402

TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests",
                     "fixtures", "tasks")
CPU = torch.device("cpu")

# Captured from the code before task_loading.py (roles.draw_inputs, lint._build_model,
# Host._seeded_task, Host.op_load_task): the first elements of each tensor, as float64.
EXPECTED = {
    'draw gemm_relu normal': [
        [-0.1117185652256012, -0.49659010767936707, 0.16307370364665985, -0.8816877603530884],
    ],
    'draw gemm_relu scaled_offset': [
        [-0.4189446270465851, -1.862212896347046, 0.6930632591247559, -3.3063290119171143],
    ],
    'draw gemm_relu heavy_tailed': [
        [-0.20632965862751007, -1.4974195957183838, 0.24667870998382568, -0.9434075355529785],
    ],
    'draw bf16_matmul normal': [
        [-0.11181640625, -0.49609375, 0.1630859375, -0.8828125],
        [1.1953125, -1.546875, -1.375, -0.24609375],
    ],
    'draw bf16_matmul scaled_offset': [
        [-0.419921875, -1.859375, 0.69140625, -3.3125],
        [5.09375, -5.8125, -5.15625, -0.921875],
    ],
    'draw bf16_matmul heavy_tailed': [
        [-0.2060546875, -1.0, 0.2470703125, -0.9453125],
        [2.40625, -1.4765625, -1.1875, -0.310546875],
    ],
    'draw scale_add normal': [
        [-0.1117185652256012, -0.49659010767936707, 0.16307370364665985, -0.8816877603530884],
        [1.0091290473937988, -0.31932222843170166, -0.02169703133404255, 0.3524744510650635],
    ],
    'draw scale_add scaled_offset': [
        [-0.4189446270465851, -1.862212896347046, 0.6930632591247559, -3.3063290119171143],
        [4.2887983322143555, -1.1974583864212036, -0.08136386424303055, 1.498016357421875],
    ],
    'draw scale_add heavy_tailed': [
        [-0.20632965862751007, -1.4974195957183838, 0.24667870998382568, -0.9434075355529785],
        [1.3744158744812012, -0.306534081697464, -0.007622190751135349, 0.6255111694335938],
    ],
    'model gemm_relu 77': [
        [-0.026010818779468536, -0.026789911091327667,
         -0.012240737676620483, -0.004440635442733765],
        [0.057955287396907806, -0.03601600229740143, -0.01592949777841568, -0.026903755962848663],
    ],
    'seeded gemm_relu': [
        [-0.0004679262638092041, 0.03352772444486618, -0.051440320909023285, -0.04599618911743164],
        [-1.1258398294448853, -1.152360200881958, -0.2505785822868347, -0.4338788092136383],
    ],
    'load_task gemm_relu': [
        [0.009024694561958313, 0.006734438240528107, 0.0608537420630455, 0.013503700494766235],
        [0.4020497500896454, -2.2716710567474365, 0.39973554015159607, 1.0342512130737305],
    ],
}


def _head(t, n=4):
    return t.detach().double().flatten()[:n].tolist()


def _task(name):
    return task_loading.load_task(os.path.join(TASKS, name + ".py"))


class SeedsDrawAsBefore(unittest.TestCase):
    def test_inputs_of_every_distribution(self):
        for name in ("gemm_relu", "bf16_matmul", "scale_add"):
            task = _task(name)
            for dist in ("normal", "scaled_offset", "heavy_tailed"):
                with self.subTest(task=name, dist=dist):
                    values = task_loading.draw_inputs(task, dist, 1234, CPU)
                    self.assertEqual([_head(v) for v in values], EXPECTED[f"draw {name} {dist}"])

    def test_a_models_weights_under_an_init_seed(self):
        model, init_inputs = task_loading.build_model(_task("gemm_relu"), 77, CPU)
        self.assertEqual(init_inputs, [256, 128])
        self.assertEqual([_head(model.linear.weight), _head(model.linear.bias)],
                         EXPECTED["model gemm_relu 77"])

    def test_the_cached_figures_model_and_inputs(self):
        model, inputs = task_loading.seeded_task(os.path.join(TASKS, "gemm_relu.py"), CPU)
        self.assertEqual([_head(model.linear.weight), _head(inputs[0])],
                         EXPECTED["seeded gemm_relu"])

    def test_the_files_the_reference_hands_the_candidate(self):
        with tempfile.TemporaryDirectory() as d:
            reply = ReferenceHost("cpu").handle("load_task", {
                "task": os.path.join(TASKS, "gemm_relu.py"), "workdir": d, "private": d,
                "inits": [{"seed": 5}, {"seed": 6}],
                "cases": [{"init": 1, "dist": "heavy_tailed", "seed": 99}]})
            self.assertTrue(reply["ok"], reply)
            init = task_loading.load_case_file(reply["inits"][1]["file"])
            case = task_loading.load_case_file(reply["cases"][0]["file"])
        self.assertEqual([_head(init["state_dict"]["linear.weight"]), _head(case["inputs"][0])],
                         EXPECTED["load_task gemm_relu"])


if __name__ == "__main__":
    unittest.main()
