"""The baselines a candidate is compared with besides eager (src/baselines, docs/baselines.md).

Runs in the TRUSTED reference worker only. Each baseline is the task's own Model, made faster
by a mechanical means that keeps its meaning:
- compile_default: torch.compile(model)
- compile_reduce_overhead: torch.compile(model, mode="reduce-overhead")
- cuda_graph: the model captured once in a CUDA graph over static input buffers; each call copies
  its inputs into those buffers and replays the graph (what CUDA-L1's enriched tasks do by hand)
- cudnn_autotune: eager with torch.backends.cudnn.benchmark on
A baseline that cannot be built here, or whose outputs differ from eager's, is reported as
unavailable with the reason. Each one is timed against eager in paired buckets (the order
alternating), so the parent gets ratios whose drift cancels out.
"""
import torch

from timing import Timer

NAMES = ["compile_default", "compile_reduce_overhead", "cuda_graph", "cudnn_autotune"]
_TOLERANCE = 1e-2  # the evaluator's standard tolerance


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return []


def _difference(expected, got):
    """'' when got matches expected at the standard tolerance, else what differs."""
    e, g = _tensors(expected), _tensors(got)
    if len(e) != len(g):
        return f"{len(g)} output tensors instead of {len(e)}"
    for i, (a, b) in enumerate(zip(e, g)):
        if a.shape != b.shape:
            return f"output {i} has shape {tuple(b.shape)} instead of {tuple(a.shape)}"
        a64, b64 = a.detach().double(), b.detach().double()
        if not torch.allclose(b64, a64, atol=_TOLERANCE, rtol=_TOLERANCE, equal_nan=True):
            return f"output {i} differs from eager by up to {float((a64 - b64).abs().max()):.3g}"
    return ""


def _compile(model, mode):
    if not hasattr(torch, "compile"):
        raise RuntimeError(f"torch {torch.__version__} has no torch.compile")
    return torch.compile(model) if mode is None else torch.compile(model, mode=mode)


def _cuda_graph(model, inputs, device):
    """A callable replaying `model` captured over static copies of `inputs`."""
    if device.type != "cuda":
        raise RuntimeError("CUDA graphs need a CUDA device")
    static_in = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):  # warm-up off the capture: lazy initialisation, cuBLAS workspaces
            model(*static_in)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_out = model(*static_in)

    def replay(*args):
        for dst, src in zip(static_in, args):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)
        graph.replay()
        return static_out

    return replay


class _CudnnBenchmark:
    """Eager with cuDNN's autotuner on, for the duration of each call only."""

    def __init__(self, model, device):
        if device.type != "cuda":
            raise RuntimeError("cuDNN autotuning applies to CUDA devices only")
        self.model = model

    def __call__(self, *args):
        before = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            return self.model(*args)
        finally:
            torch.backends.cudnn.benchmark = before


def _build(name, model, inputs, device):
    if name == "compile_default":
        return _compile(model, None)
    if name == "compile_reduce_overhead":
        return _compile(model, "reduce-overhead")
    if name == "cuda_graph":
        return _cuda_graph(model, inputs, device)
    if name == "cudnn_autotune":
        return _CudnnBenchmark(model, device)
    if name == "eager_control":  # eager against itself: the noise floor of these ratios
        return model
    raise ValueError(f"unknown baseline {name!r}")


def prepare(model, inputs, device, names, warmup=3):
    """Everything before timing: each baseline built (compiled, captured), checked against eager
    and warmed up. Needs the device but not to itself, so it overlaps other evaluations' work.
    Returns the state `time_prepared` takes."""
    timer = Timer(device)
    buffers = [[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs] for _ in range(2)]
    with torch.no_grad():
        expected = model(*buffers[0])
    timer.sync()
    timer.run(model, buffers, warmup)
    ready, out = {}, {}
    for name in names:
        try:
            fast = _build(name, model, buffers[0], device)
            with torch.no_grad():
                got = fast(*buffers[1])  # other buffers than the capture's: replays must copy
            timer.sync()
            problem = _difference(expected, got)
            if problem:
                out[name] = {"unavailable": problem}
                continue
            timer.run(fast, buffers, warmup)
            ready[name] = fast
        except Exception as e:  # a baseline that cannot be built is a finding, not a failure
            out[name] = {"unavailable": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
    return {"timer": timer, "model": model, "buffers": buffers, "ready": ready, "out": out, "names": list(names)}


def time_prepared(state, buckets=5, calls=10):
    """{name: {"buckets": [[eager_ms, baseline_ms], ...]} or {"unavailable": why}}: medians per
    bucket, eager and the baseline alternating which goes first. Wants the device to itself."""
    timer, model, buffers, out = state["timer"], state["model"], state["buffers"], dict(state["out"])
    for name, fast in state["ready"].items():
        pairs = []
        for b in range(buckets):
            medians = [0.0, 0.0]  # eager, baseline
            for side in ((0, 1) if b % 2 == 0 else (1, 0)):
                dev_ms, _, _ = timer.run(fast if side else model, buffers, calls, settle=1)
                dev_ms.sort()
                medians[side] = dev_ms[len(dev_ms) // 2]
            pairs.append(medians)
        out[name] = {"buckets": pairs}
    return {n: out[n] for n in state["names"] if n in out}


def measure(model, inputs, device, names, buckets=5, calls=10, warmup=3):
    """prepare, then time_prepared, in one go."""
    return time_prepared(prepare(model, inputs, device, names, warmup), buckets, calls)
