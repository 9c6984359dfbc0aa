"""The baselines a candidate is compared with besides eager (src/baselines, docs/baselines.md).

Runs in the TRUSTED reference worker only. Each baseline is the task's own Model, made faster
by a mechanical means that keeps its meaning:
- compile: torch.compile(model)
- compile_ro: torch.compile(model, mode="reduce-overhead"), the timer's input
  buffers marked as static addresses so its CUDA graphs read them in place
- cuda_graph: one CUDA graph per input buffer set, each captured over that set's own tensors; a
  call with one of those sets only replays its graph (inputs of any other address are copied
  into a graph's static inputs first, and counted)
- cudnn_autotune: eager with torch.backends.cudnn.benchmark on
A baseline that cannot be built here, or whose outputs differ from eager's, is reported as
unavailable with the reason. Each one is timed against eager in paired buckets (the order
alternating) with the candidate's settings (warm-up, calls and settle calls per bucket, buffer
sets), so the parent gets ratios whose drift cancels out and that compare with a candidate's.
Everything but the call itself (building, compiling, capturing, filling the buffers) happens
before the timing.
"""
import torch

from calls import SLOTS
from timing import Timer

NAMES = ["compile", "compile_ro", "cuda_graph", "cudnn_autotune"]
# Earlier names of the compile baselines, still asked for by older cudal1 binaries; the answer
# keeps the name asked for.
_EARLIER_NAMES = {"compile_default": "compile", "compile_reduce_overhead": "compile_ro"}
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


def _mark_static(buffers):
    """Tells dynamo the buffers' tensors keep their addresses (torch 2.x). Without it,
    reduce-overhead's CUDA graphs copy every input into static memory inside each call, a cost
    neither eager nor a hand-made graph replay pays; with it, each buffer set gets a graph that
    reads it in place (dynamo guards on the tensor, so each set compiles once). An older torch
    without the call keeps the copies."""
    try:
        import torch._dynamo as dynamo
    except ImportError:
        return
    mark = getattr(dynamo, "mark_static_address", None)
    if mark is None:
        return
    for slot in buffers:
        for v in slot:
            if isinstance(v, torch.Tensor):
                mark(v)


def _compile(model, mode, buffers):
    if not hasattr(torch, "compile"):
        raise RuntimeError(f"torch {torch.__version__} has no torch.compile")
    if mode is None:
        return torch.compile(model)
    if mode == "reduce-overhead":
        _mark_static(buffers)
    return torch.compile(model, mode=mode)


def _key(args):
    """What names one buffer set: its tensors' addresses and shapes."""
    return tuple((v.data_ptr(), v.shape) if isinstance(v, torch.Tensor) else None for v in args)


class _GraphPerBuffer:
    """`model` captured in one CUDA graph per buffer set, over that set's own tensors, so a call
    with a set replays and copies nothing. Inputs at other addresses are copied into the first
    set's graph inputs before its replay (correct, but the copy is then timed): counted in
    `copied_calls`."""

    def __init__(self, model, buffers, device):
        if device.type != "cuda":
            raise RuntimeError("CUDA graphs need a CUDA device")
        self.copied_calls = 0
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):  # warm-up off the capture: lazy initialisation, cuBLAS workspaces
                model(*buffers[0])
        torch.cuda.current_stream(device).wait_stream(side)
        self.graphs = {}  # _key of a set -> (graph, the set, its static outputs)
        for slot in buffers:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph), torch.no_grad():
                out = model(*slot)
            self.graphs[_key(slot)] = (graph, slot, out)
        self.first = self.graphs[_key(buffers[0])]

    def __call__(self, *args):
        entry = self.graphs.get(_key(args))
        if entry is None:
            self.copied_calls += 1
            entry = self.first
            for dst, src in zip(entry[1], args):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
        entry[0].replay()
        return entry[2]


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


def _build(name, model, buffers, device):
    name = _EARLIER_NAMES.get(name, name)
    if name == "compile":
        return _compile(model, None, buffers)
    if name == "compile_ro":
        return _compile(model, "reduce-overhead", buffers)
    if name == "cuda_graph":
        return _GraphPerBuffer(model, buffers, device)
    if name == "cudnn_autotune":
        return _CudnnBenchmark(model, device)
    if name == "eager_control":  # eager against itself: the noise floor of these ratios
        return model
    raise ValueError(f"unknown baseline {name!r}")


def _check(fast, buffers, expected, timer):
    """'' when `fast` matches eager on every buffer set, else what differs. A baseline with a
    path for inputs at other addresses (a graph replay's copy) is checked on such inputs too,
    then its count of copied calls starts again at 0."""
    sets = list(buffers)
    if hasattr(fast, "copied_calls"):
        sets.append([v.clone() if isinstance(v, torch.Tensor) else v for v in buffers[0]])
    for args in sets:
        with torch.no_grad():
            got = fast(*args)
        timer.sync()
        problem = _difference(expected, got)
        if problem:
            return problem
    if hasattr(fast, "copied_calls"):
        fast.copied_calls = 0
    return ""


def prepare(model, inputs, device, names, warmup=3, slots=SLOTS):
    """Everything before timing: the buffer sets filled, each baseline built (compiled,
    captured), checked against eager and warmed up. Needs the device but not to itself, so it
    overlaps other evaluations' work. Returns the state `time_prepared` takes."""
    timer = Timer(device)
    buffers = [[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs] for _ in range(slots)]
    with torch.no_grad():
        expected = model(*buffers[0])
    timer.sync()
    timer.run(model, buffers, warmup)
    ready, out = {}, {}
    for name in names:
        try:
            fast = _build(name, model, buffers, device)
            problem = _check(fast, buffers, expected, timer)
            if problem:
                out[name] = {"unavailable": problem}
                continue
            timer.run(fast, buffers, warmup)
            ready[name] = fast
        except Exception as e:  # a baseline that cannot be built is a finding, not a failure
            out[name] = {"unavailable": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
    return {"timer": timer, "model": model, "buffers": buffers, "ready": ready, "out": out, "names": list(names)}


def time_prepared(state, buckets=5, calls=10, settle=2):
    """{name: {"buckets": [[eager_ms, baseline_ms], ...], "copied_calls": n} or {"unavailable":
    why}}: medians per bucket, eager and the baseline alternating which goes first, each side
    `settle` untimed calls then `calls` timed ones, as the evaluator times a candidate. Wants
    the device to itself."""
    timer, model, buffers, out = state["timer"], state["model"], state["buffers"], dict(state["out"])
    for name, fast in state["ready"].items():
        pairs = []
        for b in range(buckets):
            medians = [0.0, 0.0]  # eager, baseline
            for side in ((0, 1) if b % 2 == 0 else (1, 0)):
                dev_ms, _, _ = timer.run(fast if side else model, buffers, calls, settle=settle)
                dev_ms.sort()
                medians[side] = dev_ms[len(dev_ms) // 2]
            pairs.append(medians)
        out[name] = {"buckets": pairs, "copied_calls": getattr(fast, "copied_calls", 0)}
    return {n: out[n] for n in state["names"] if n in out}


def measure(model, inputs, device, names, buckets=5, calls=10, warmup=3, settle=2):
    """prepare, then time_prepared, in one go."""
    return time_prepared(prepare(model, inputs, device, names, warmup), buckets, calls, settle)
