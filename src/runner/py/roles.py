"""What both roles' workers share: the device set up, the environment reported, and every call
of a model (op `calls`). The reference's ops are in reference_host.py, the candidate's in
candidate_host.py; each host answers only its own role's ops."""
import os
import platform

import torch

import calls
import tensor_io
from timing import Timer

from tensor_io import _TB, _Tensor, _isinstance, _type  # bound before any candidate code runs

_size = _TB.size
_empty = torch.empty
_clone_tb = _TB.clone
_equal = torch.equal


def _snapshot(values):
    """Copies of a call's inputs, on their device, to tell afterwards whether the call wrote into
    them: compared byte for byte on the GPU, not hashed on the CPU (seconds per case for the
    large tasks)."""
    return [_clone_tb(tensor_io.byte_view(v)) if _isinstance(v, _Tensor) else repr(v)
            for v in values]


def _unchanged(snapshot, values):
    if len(snapshot) != len(values):
        return False
    for before, v in zip(snapshot, values):
        if _isinstance(v, _Tensor):
            now = tensor_io.byte_view(v)
            if _isinstance(before, str) or _size(now) != _size(before) or not _equal(now, before):
                return False
        elif before != repr(v):
            return False
    return True


def environment(device):
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "cuda": getattr(torch.version, "cuda", None), "host": platform.node()}
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device cuda requested but torch.cuda.is_available() is False")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        info.update({"device_name": props.name, "capability": f"{props.major}.{props.minor}",
                     "driver": _driver_version(), "sm_count": props.multi_processor_count})
    else:
        info.update({"device_name": platform.processor() or platform.machine(),
                     "threads": torch.get_num_threads()})
    return info


def _driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
        for word in first.split():
            if word[:1].isdigit() and "." in word:
                return word
    except OSError:
        pass
    return None


def _warm_libraries(device):
    """Creates cuBLAS's and cuDNN's handles on this thread, as any process that has already run a
    model has them. Creating one allocates device memory, which CUDA forbids during a graph
    capture: a module that captures its first call without warming up (CUDA-L1's CUDA graph
    versions do) then fails here, where KernelBench ran the reference first in the same process.
    Both roles do it, so neither side's first call pays for it.
    A library that cannot start here is left for the module that uses it to report."""
    try:
        a = torch.ones(8, 8, device=device)
        torch.mm(a, a)
        torch.addmm(a, a, a)
    except Exception:
        pass
    try:
        if torch.backends.cudnn.is_available():
            torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device=device),
                                       torch.ones(1, 1, 3, 3, device=device))
    except Exception:
        pass
    torch.cuda.synchronize(device)


class Host:
    """The ops both roles answer; a role's subclass adds its own as op_<name> methods."""
    role = None  # "reference" or "candidate", in the reply to an op of the other role

    def __init__(self, device):
        # Nothing on the device yet: a queue starts workers ahead of their evaluation, and a
        # CUDA context made now would hold GPU memory outside the lanes' budget of it until then.
        self.device = torch.device(device)
        self.models = {}      # init index -> module
        self.cases = []       # list of (init index, inputs on device)
        self.poison_sizes = []
        self.timer = self.runner = None
        self.idle = calls.IdleWatch()

    def _start_device(self):
        if self.device.type == "cuda":
            if self.device.index is None:  # "cuda" means the current device
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            _warm_libraries(self.device)
        # Made before any candidate code runs: what they bind is the real thing.
        self.timer = Timer(self.device)
        self.runner = calls.Runner(self.device, self.timer)

    def op_start(self, req):
        """The device's context, its libraries' handles and the timer, once the evaluation has
        reserved the device's memory for them. A failure here is the machine's (a device others
        filled), never the task's or the candidate's: no hosted code has run yet."""
        if self.timer is None:
            try:
                self._start_device()
            except Exception as e:  # noqa: BLE001 — reported as the device's, with its account
                return {"ok": False, "error": "device", "type": type(e).__name__, "message": str(e)[:2000]}
        return {"ok": True, "device": str(self.device)}

    def handle(self, op, req):
        fn = getattr(self, "op_" + str(op), None)
        if fn is None:
            return {"ok": False, "error": "protocol",
                    "message": f"unknown op {op!r} for {self.role}"}
        if self.timer is None and op != "start":
            started = self.op_start({})  # a caller that sends no start gets the device with its first op
            if not started["ok"]:
                return started  # the device's failure, not the op's (a task's or a candidate's)
        return fn(req)

    def op_env(self, req):
        """Python, torch, CUDA, device name and driver: what cached figures are keyed by."""
        return {"ok": True, "env": environment(self.device)}

    def candidate_report(self):
        """What the candidate's guard saw (candidate_host.py); nothing in the reference."""
        return {}

    def op_calls(self, req):
        """Runs a batch of calls through calls.Runner. Each call names a case, an optional
        variant seed and a slot. `write` also writes each call's outputs to a file (checking
        calls); `empty` times a call that does nothing (the fixed cost of the loop)."""
        samples = int(req.get("samples", 0))
        write_dir = req.get("out_dir") if req.get("write") else None
        idle = self.idle.since_stop()
        groups, compress, map_ = self.timer.watch  # bound before any candidate code runs here
        changed = []
        records = []
        for i, c in enumerate(req["calls"]):
            k = c["case"]
            init, values = self.cases[k]
            args = self.runner.inputs(values, c.get("variant"), c.get("slot", i))
            model = self._nothing if req.get("empty") else self.models[init]
            sizes = self.poison_sizes[k] if k < len(self.poison_sizes) else []
            before = _snapshot(args) if write_dir else None
            rec, outs, checks = self.runner.call(model, args, sizes, samples)
            if not req.get("empty") and getattr(self, "empty_outputs", None) is None:
                # The candidate's empty calls return outputs of its own shapes, made here by
                # trusted code (plain tensors only: a subclass's attributes could run its code).
                self.empty_outputs = [_empty(_size(v), dtype=v.dtype, device=v.device)
                                      if _type(v) is _Tensor else None for v in outs]
            if write_dir:
                out_file = os.path.join(write_dir, f"out_{req.get('tag', 0)}_{i}.ctf")
                tensor_io.write_values(out_file, [
                    v if calls.readable(v, ch) or not _isinstance(v, _Tensor) else _Placeholder()
                    for v, ch in zip(outs, checks)])
                rec["out_file"] = out_file
                rec["inputs_unchanged"] = _unchanged(before, args)
                before = None
            del outs
            records.append(rec)
            # The timed call checked as its clocks stopped; candidate code may have run since (a
            # finaliser of its outputs, a tensor subclass's hooks). Written out, not called: see
            # guard.watch().
            changed = changed or self.timer.violations[:] or [
                label for read, holders, keys, expected, differs, labels in groups
                for label in compress(labels, map_(differs, map_(read, holders, keys), expected))]
        self.runner.thread_watch.settle()
        reply = {"ok": True, "calls": records, **self.candidate_report()}
        if changed:  # a change put back before the batch ended is in no later snapshot comparison
            reply["tampered"] = sorted(set(reply.get("tampered", [])) | set(changed))
        if idle is not None:
            reply["idle"] = idle
        self.idle.stop()
        return reply

    def _nothing(self, *args):
        outs = getattr(self, "empty_outputs", None)
        return None if outs is None else (outs[0] if len(outs) == 1 else tuple(outs))


class _Placeholder:
    """Stands for an output that failed an exact check: its values are not read."""
