"""The precision ladder's measurements (the verdict is the parent's): the reference's outputs in
float64 as an oracle, and the relative error against it of the reference run as it is, with TF32
allowed (CUDA), under bf16 and fp16 autocast, and with model and inputs cast to bf16 and fp16. A candidate whose error sits with a reduced
rung rather than with the reference as run computes in reduced precision."""
import copy

import torch

import tensor_io
from tensor_io import _Tensor, _isinstance


def _clone(values, dtype=None):
    out = []
    for v in values:
        if _isinstance(v, _Tensor):
            v = v.clone()
            if dtype is not None and v.is_floating_point():
                v = v.to(dtype)
        out.append(v)
    return out


def _rel_error(values, oracle):
    """Per output: ||value - oracle|| / ||oracle|| over elements finite in both (None when the
    output is not a float tensor)."""
    errs = []
    for v, o in zip(values, oracle):
        if not (_isinstance(v, _Tensor) and _isinstance(o, _Tensor) and v.is_floating_point()
                and v.shape == o.shape):
            errs.append(None)
            continue
        a, b = v.double(), o.double()
        keep = torch.isfinite(a) & torch.isfinite(b)
        diff = ((a - b)[keep] ** 2).sum().item()
        norm = (b[keep] ** 2).sum().item()
        errs.append((diff / norm) ** 0.5 if norm > 0 else diff ** 0.5)
    return errs


def _run(model, values):
    with torch.no_grad():
        out = tensor_io.as_list(model(*values))
    if values and any(_isinstance(v, _Tensor) and v.is_cuda for v in values):
        torch.cuda.synchronize()
    return out


def oracle_model(model):
    """The task's model in float64: the oracle every rung and candidate is measured against."""
    return copy.deepcopy(model).double()


def oracle_outputs(oracle, values):
    """The oracle's outputs on `values` (cast to float64); raises where the task has no float64
    kernels."""
    return _run(oracle, _clone(values, torch.float64))


def ladder(model, values, device, oracle_file):
    try:
        oracle = oracle_outputs(oracle_model(model), values)
    except Exception as e:  # noqa: BLE001 — a task without float64 kernels has no ladder
        return {"ok": True, "skipped": f"the task does not run in float64: {type(e).__name__}: {str(e)[:200]}"}
    tensor_io.write_values(oracle_file, oracle)
    rungs = {"as_run": _rel_error(_run(model, _clone(values)), oracle)}
    if device.type == "cuda":
        # cuDNN may keep a full-float32 algorithm even with TF32 allowed; benchmark mode picks
        # the fastest, which on tensor-core GPUs is the TF32 one (measured on the H200).
        b = torch.backends
        saved = (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark)
        b.cuda.matmul.allow_tf32 = b.cudnn.allow_tf32 = b.cudnn.benchmark = True
        try:
            rungs["tf32"] = _rel_error(_run(model, _clone(values)), oracle)
        finally:
            b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark = saved
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        # Autocast lowers matmuls and convolutions only; the cast rung lowers everything,
        # elementwise work and reductions included.
        try:
            with torch.autocast(device.type, dtype=dtype):
                rungs[name] = _rel_error(_run(model, _clone(values)), oracle)
        except Exception:  # noqa: BLE001 — e.g. no fp16 autocast on this CPU build
            pass
        try:
            low = copy.deepcopy(model).to(dtype)
            rungs[name + "_cast"] = _rel_error(_run(low, _clone(values, dtype)), oracle)
            del low
        except Exception:  # noqa: BLE001 — an op without a kernel for that dtype here
            pass
    return {"ok": True, "oracle_file": oracle_file, "rungs": rungs}
