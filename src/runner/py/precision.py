"""The precision ladder's measurements (the verdict is the parent's): the reference's outputs in
float64 as an oracle, and the relative error against it of the reference run as it is, with TF32
allowed (CUDA), under bf16 and fp16 autocast, and with model and inputs cast to bf16 and fp16. A candidate whose error sits with a reduced
rung rather than with the reference as run computes in reduced precision.

Other evaluations share the GPU (a queue's lanes), and the float64 oracle needs twice the
reference's memory. A step that runs out of device memory is done again on the host, with host
copies of the model and inputs, and the reply says which steps were: the ladder never fails an
evaluation for memory others hold, and never drops a rung a candidate could hide behind."""
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
        if a.device != b.device:  # a step done on the host: compare there
            a, b = a.cpu(), b.cpu()
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


_OutOfMemory = getattr(torch.cuda, "OutOfMemoryError", None) or RuntimeError


def _out_of_memory(e):
    return isinstance(e, _OutOfMemory) and "out of memory" in str(e).lower()


def _release():
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _host_copy(model, dtype=None):
    """A copy of `model` on the host (cast to `dtype`), made without a second copy on the device:
    deepcopy finds every parameter and buffer already copied in its memo."""
    memo = {}
    for t in list(model.parameters()) + list(model.buffers()):
        host = t.detach().to("cpu")
        if dtype is not None and host.is_floating_point():
            host = host.to(dtype)
        memo[id(t)] = torch.nn.Parameter(host, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else host
    m = copy.deepcopy(model, memo).to("cpu")
    return m.to(dtype) if dtype is not None else m


def _on_host(values):
    return [v.to("cpu") if _isinstance(v, _Tensor) else v for v in values]


def _device_or_host(on_device, on_host, host_steps, name):
    """on_device(); where the device runs out of memory, on_host() instead, `name` added to
    host_steps."""
    try:
        return on_device()
    except Exception as e:  # noqa: BLE001 — only running out of device memory is retried
        if not _out_of_memory(e):
            raise
    _release()
    if host_steps is not None:
        host_steps.append(name)
    return on_host()


def on_device_or_host(step, model, values, dtype=None, host_steps=None, name=""):
    """step(model, values) on the device; where the device runs out of memory, again on the host
    with host copies (dtype: the model copy's dtype), `name` added to host_steps."""
    return _device_or_host(lambda: step(model, values), lambda: step(_host_copy(model, dtype), _on_host(values)),
                           host_steps, name)


def oracle_model(model, host_steps=None):
    """The task's model in float64: the oracle every rung and candidate is measured against. On
    the host when the device has no room for it."""
    return _device_or_host(lambda: copy.deepcopy(model).double(), lambda: _host_copy(model, torch.float64),
                           host_steps, "oracle model")


def oracle_outputs(oracle, values, host_steps=None):
    """The oracle's outputs on `values` (cast to float64); raises where the task has no float64
    kernels. Runs where the oracle model lives, or on the host where the device is full."""
    first = next(oracle.parameters(), None)
    if first is not None and first.device.type == "cpu":
        values = _on_host(values)
    return on_device_or_host(lambda m, v: _run(m, _clone(v, torch.float64)), oracle, values, torch.float64,
                             host_steps, "oracle")


def no_float64(e):
    """The reply for a task whose model cannot run in float64: no oracle, and no ladder."""
    return {"ok": True, "skipped": f"the task does not run in float64: {type(e).__name__}: {str(e)[:200]}"}


def _device_type(values):
    return next((v.device.type for v in values if _isinstance(v, _Tensor)), "cpu")


def _autocast_step(dtype):
    def step(model, values):
        with torch.autocast(_device_type(values), dtype=dtype):
            return _run(model, _clone(values))
    return step


def _cast_step(dtype):
    return lambda model, values: _run(copy.deepcopy(model).to(dtype), _clone(values, dtype))


def ladder(model, values, device, oracle_file):
    host_steps = []
    try:
        oracle = oracle_outputs(oracle_model(model, host_steps), values, host_steps)
    except Exception as e:  # noqa: BLE001 — a task without float64 kernels has no ladder
        return no_float64(e)
    tensor_io.write_values(oracle_file, oracle)
    rungs = {"as_run": _rel_error(on_device_or_host(lambda m, v: _run(m, _clone(v)), model, values, None,
                                                    host_steps, "as_run"), oracle)}
    if device.type == "cuda":
        # cuDNN may keep a full-float32 algorithm even with TF32 allowed; benchmark mode picks
        # the fastest, which on tensor-core GPUs is the TF32 one (measured on the H200).
        b = torch.backends
        saved = (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark)
        b.cuda.matmul.allow_tf32 = b.cudnn.allow_tf32 = b.cudnn.benchmark = True
        try:
            rungs["tf32"] = _rel_error(_run(model, _clone(values)), oracle)
        except Exception as e:  # noqa: BLE001 — TF32 has no host equivalent: without room, no rung
            if not _out_of_memory(e):
                raise
            _release()
            host_steps.append("tf32 (not taken: the device was full)")
        finally:
            b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark = saved
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        # Autocast lowers matmuls and convolutions only; the cast rung lowers everything,
        # elementwise work and reductions included.
        for rung, step in ((name, _autocast_step(dtype)), (name + "_cast", _cast_step(dtype))):
            try:
                rungs[rung] = _rel_error(on_device_or_host(step, model, values, dtype if rung.endswith("_cast") else None,
                                                           host_steps, rung), oracle)
            except Exception:  # noqa: BLE001 — e.g. no fp16 autocast on this CPU build, an op without a kernel for that dtype
                pass
    reply = {"ok": True, "oracle_file": oracle_file, "rungs": rungs}
    if host_steps:
        reply["on_host"] = host_steps
    return reply
