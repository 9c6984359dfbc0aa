"""Null-kernel probes for `cudal1 lint-task`, run in the trusted reference worker.

The task's Model is run on a grid: every weight init x every input draw. Each output goes to a
tensor file; the C++ parent (src/lint/) decides from those files whether a candidate that does
no work (zeros, a constant, the output for other inputs or other weights) would pass the check.
No verdict is formed here.
"""
import hashlib
import os

import torch

import loading
import tensor_io
from roles import environment
from task_loading import build_model, clone, draw_inputs, load_task, task_failure


def _digest(values):
    h = hashlib.sha256()
    for v in values:
        if isinstance(v, torch.Tensor):
            h.update(tensor_io.tensor_bytes(v))
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def op_lint_task(host, req):
    """req: {task, workdir, inits: [seed, ...], inputs: [{dist, seed}, ...]}.
    Reply: outputs[j][i] is the file holding Model(init j)(input draw i)."""
    try:
        task = load_task(req["task"])
    except loading.LoadFailure as f:
        return task_failure(f)
    device = host.device
    # As the evaluator draws a case's inputs.
    draws = [draw_inputs(task, d["dist"], d["seed"], device) for d in req["inputs"]]
    inits, outputs = [], []
    for j, seed in enumerate(req["inits"]):
        model, _ = build_model(task, seed, device)  # the weights a case of this init sees
        state = model.state_dict()
        # The parent tests weight-independence only where two inits really differ.
        inits.append({"seed": seed, "state_elements": sum(v.numel() for v in state.values()),
                      "state_sha256": _digest(list(state.values()))})
        row = []
        for i, inputs in enumerate(draws):
            with torch.no_grad():
                out = model(*clone(inputs))
            path = os.path.join(req["workdir"], f"lint_{j}_{i}.ctf")
            tensor_io.write_values(path, tensor_io.as_list(out))
            row.append(path)
        outputs.append(row)
        del model  # one init's weights in memory at a time
    return {"ok": True, "inits": inits, "outputs": outputs, "env": environment(device)}
