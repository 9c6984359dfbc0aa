"""Task metadata computed from the task itself, never typed in: FLOPs and the fewest bytes the
computation must move (every input, parameter and buffer read once, every output written once).

FLOPs come from PyTorch's FLOP counter (torch.utils.flop_counter) where the installed torch has
it. Older torch (Debian's 1.13) gets a counter of the same kind: a dispatch mode that counts the
same operator families (matrix products, convolutions, attention) with the same formulas, 2 FLOPs
per multiply-add. The result names the counter it used.
"""
import torch

_FAMILIES = "matrix products, convolutions, attention"


def _prod(xs):
    out = 1
    for x in xs:
        out *= int(x)
    return out


def _conv_flops(x_shape, w_shape, out_shape, transposed):
    # 2 * (output elements) * (input channels per group) * (kernel elements); for a transposed
    # convolution the roles of input and output swap.
    spatial = _prod(w_shape[2:])
    if transposed:
        return 2 * _prod(x_shape) * w_shape[1] * spatial
    return 2 * _prod(out_shape) * w_shape[1] * spatial


def _count_aten(func, args, out):
    name = func.__name__ if hasattr(func, "__name__") else str(func)
    base = name.split(".")[0]
    shape = lambda t: list(t.shape)
    if base in ("mm", "matmul") and len(args) >= 2:
        a, b = shape(args[0]), shape(args[1])
        return 2 * a[0] * a[1] * b[1]
    if base == "addmm":
        a, b = shape(args[1]), shape(args[2])
        return 2 * a[0] * a[1] * b[1]
    if base == "bmm":
        a, b = shape(args[0]), shape(args[1])
        return 2 * a[0] * a[1] * a[2] * b[2]
    if base == "baddbmm":
        a, b = shape(args[1]), shape(args[2])
        return 2 * a[0] * a[1] * a[2] * b[2]
    if base in ("convolution", "_convolution"):
        transposed = bool(args[6]) if len(args) > 6 else False
        return _conv_flops(shape(args[0]), shape(args[1]), shape(out), transposed)
    return 0


def _fallback_counter():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.total = 0
            self.conv = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            try:
                n = _count_aten(func, args, out)
                self.total += n
                if "convolution" in str(func):
                    self.conv += n
            except Exception:  # noqa: BLE001 — an odd signature counts as 0, never a failure
                pass
            return out

    return Counter()


def _counter():
    """(name, mode, total(), conv()) for PyTorch's FLOP counter, or ours where torch has none.
    conv() is the part spent in convolutions: cuDNN runs float32 convolutions in TF32 by default,
    so the speed of light counts them at that rate."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        mode = _fallback_counter()
        return "cudal1 dispatch counter (" + _FAMILIES + ")", mode, lambda: mode.total, lambda: mode.conv
    mode = FlopCounterMode(display=False)

    def conv():
        counts = mode.get_flop_counts().get("Global", {})
        return sum(n for op, n in counts.items() if "convolution" in str(op))

    return "torch.utils.flop_counter", mode, mode.get_total_flops, conv


def _tensor_bytes(values):
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def describe(task, seed=0):
    """FLOPs, bytes, shapes of one task module, computed on the CPU (or meta tensors)."""
    torch.manual_seed(seed)
    init_inputs = list(task.get_init_inputs())
    torch.manual_seed(seed)
    model = task.Model(*init_inputs)
    torch.manual_seed(seed)
    inputs = list(task.get_inputs())
    state = list(model.state_dict().values())
    in_bytes, state_bytes = _tensor_bytes(inputs), _tensor_bytes(state)

    # Meta tensors carry shapes without data, so a 4096-cube matmul costs nothing here. Where an
    # operator has no meta kernel, the task runs for real on the CPU instead.
    try:
        where = "meta"
        name, mode, total, conv = _counter()
        meta_model = task.Model(*init_inputs).to("meta")
        meta_inputs = [v.to("meta") if isinstance(v, torch.Tensor) else v for v in inputs]
        with torch.no_grad(), mode:
            out = meta_model(*meta_inputs)
    except Exception:  # noqa: BLE001
        where = "cpu"
        name, mode, total, conv = _counter()
        with torch.no_grad(), mode:
            out = model(*inputs)
    flops, conv_flops = int(total()), int(conv())
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    out_bytes = _tensor_bytes(outs)
    dtypes = sorted({str(v.dtype).replace("torch.", "") for v in inputs + state if isinstance(v, torch.Tensor) and v.is_floating_point()})
    return {
        "flops": flops,
        "conv_flops": conv_flops,
        "flop_counter": name,
        "bytes": in_bytes + state_bytes + out_bytes,
        "bytes_detail": {"inputs": in_bytes, "parameters_and_buffers": state_bytes, "outputs": out_bytes},
        "inputs": [{"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")} if isinstance(v, torch.Tensor)
                   else {"value": repr(v)} for v in inputs],
        "outputs": [{"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")} for v in outs if isinstance(v, torch.Tensor)],
        "parameters": sum(p.numel() for p in model.parameters()),
        "float_dtypes": dtypes,
        "traced_on": where,
        "doc": (task.Model.__doc__ or "").strip().splitlines()[0] if task.Model.__doc__ else "",
    }
