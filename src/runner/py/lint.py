"""Null-kernel probes for `cudal1 lint-task`, run in the trusted reference worker.

The task's Model is run on a grid: every weight init x every input draw. Each output goes to a
tensor file; the C++ parent (src/lint/) decides from those files whether a candidate that does
no work (zeros, a constant, the output for other inputs or other weights) would pass the check.
No verdict is formed here.
"""
import os

import loading
import tensor_io
from roles import (_clone, _digest, _load_task, _manual_seed, _no_grad, _task_failure,
                   draw_inputs, environment)


def _build_model(task, seed, device):
    """Model under one init seed, seeded as op_load_task seeds it (the weights a case sees)."""
    _manual_seed(seed)
    init_inputs = list(task.get_init_inputs())
    _manual_seed(seed)
    return task.Model(*init_inputs).to(device)


def op_lint_task(host, req):
    """req: {task, workdir, inits: [seed, ...], inputs: [{dist, seed}, ...]}.
    Reply: outputs[j][i] is the file holding Model(init j)(input draw i)."""
    try:
        task = _load_task(req["task"])
    except loading.LoadFailure as f:
        return _task_failure(f)
    device = host.device
    # As the evaluator draws a case's inputs.
    draws = [draw_inputs(task, d["dist"], d["seed"], device) for d in req["inputs"]]
    inits, outputs = [], []
    for j, seed in enumerate(req["inits"]):
        model = _build_model(task, seed, device)
        state = model.state_dict()
        # The parent tests weight-independence only where two inits really differ.
        inits.append({"seed": seed, "state_elements": sum(v.numel() for v in state.values()),
                      "state_sha256": _digest(list(state.values()))})
        row = []
        for i, inputs in enumerate(draws):
            with _no_grad():
                out = model(*_clone(inputs))
            path = os.path.join(req["workdir"], f"lint_{j}_{i}.ctf")
            tensor_io.write_values(path, tensor_io.as_list(out))
            row.append(path)
        outputs.append(row)
        del model  # one init's weights in memory at a time
    return {"ok": True, "inits": inits, "outputs": outputs, "env": environment(device)}
