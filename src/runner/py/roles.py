"""The two roles a worker can host. Reference: trusted, loads the task, makes the inputs and the
expected outputs. Candidate: untrusted, loads ModelNew and runs it on inputs it is handed."""
import hashlib
import inspect
import itertools
import os
import platform
import sys
import time

import torch

import calls
import compile_report
import guard
import loading
import tensor_io
from timing import Timer

from tensor_io import _TB, _Tensor, _isinstance, _type  # bound before any candidate code runs

_sha256 = hashlib.sha256
_data_ptr = _TB.data_ptr
_element_size = _TB.element_size
_stride = _TB.stride
_size = _TB.size
_no_grad = torch.no_grad
_empty = torch.empty
_manual_seed = torch.manual_seed
_clone_tb = _TB.clone
_equal = torch.equal
_perf_ns = time.perf_counter_ns


_task_numbers = itertools.count()  # each loaded task gets a module name of its own


def _load_task(path):
    """The task module at `path`; raises loading.LoadFailure saying what is wrong with it."""
    task = loading.load_module(path, f"cudal1_task_{next(_task_numbers)}")
    loading.require(task, path, ["Model", "get_inputs", "get_init_inputs"])
    return task


def _task_failure(failure):
    return {"ok": False, "error": "task", "failure": failure.to_json()}


def _load_case_file(path):
    try:
        return torch.load(path, weights_only=False)
    except TypeError:  # torch < 1.13 has no weights_only
        return torch.load(path)


def _to_device(values, device):
    return [v.to(device) if _isinstance(v, _Tensor) else v for v in values]


def _clone(values):
    return [v.clone() if _isinstance(v, _Tensor) else v for v in values]


def _apply_distribution(values, dist, seed):
    """Re-draws floating inputs from another distribution; signs are kept so domains survive.
    Works where each tensor lives (a GPU does in milliseconds what the CPU does in seconds for the
    large tasks), with a generator on that device: the same seed gives the same inputs on the
    same kind of device."""
    if dist == "normal":
        return values
    gens = {}
    out = []
    for v in values:
        if _isinstance(v, _Tensor) and v.is_floating_point():
            x = v.double()
            if dist == "scaled_offset":
                x = 4.0 * x + 0.25 * x.abs()
            elif dist == "heavy_tailed":
                lo, hi = (-0.7, 0.7) if v.element_size() <= 2 else (-2.0, 2.0)
                gen = gens.get(v.device)
                if gen is None:
                    gen = gens[v.device] = torch.Generator(device=v.device).manual_seed(seed + 7919)
                mult = torch.randn(x.shape, generator=gen, dtype=torch.float64, device=v.device).clamp(-3, 3)
                x = x * torch.exp(mult * 0.7).clamp(float(torch.tensor(lo).exp()), float(torch.tensor(hi).exp()))
            else:
                raise ValueError(f"unknown input distribution {dist}")
            v = x.to(v.dtype)
        out.append(v)
    return out


def draw_inputs(task, dist, seed, device):
    """One case's inputs on `device`: seeded get_inputs(), then the distribution. On a GPU the
    task's get_inputs() runs with that GPU as torch's default device, so its torch.randn draws
    there instead of on the CPU (seconds per case for the large tasks); a task whose inputs need
    the CPU (numpy, an explicit device) draws them as written."""
    values = None
    if device.type == "cuda" and hasattr(torch, "get_default_device"):
        _manual_seed(seed)
        try:
            with torch.device(device):
                values = list(task.get_inputs())
        except Exception:
            values = None
    if values is None:
        _manual_seed(seed)
        values = list(task.get_inputs())
    return _apply_distribution(_to_device(values, device), dist, seed)


def _snapshot(values):
    """Copies of a call's inputs, on their device, to tell afterwards whether the call wrote into
    them: compared byte for byte on the GPU, not hashed on the CPU (seconds per case for the
    large tasks)."""
    return [_clone_tb(tensor_io.byte_view(v)) if _isinstance(v, _Tensor) else repr(v) for v in values]


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


def _digest(values):
    h = _sha256()
    for v in values:
        if _isinstance(v, _Tensor):
            h.update(tensor_io.tensor_bytes(v))
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


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
            torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device=device), torch.ones(1, 1, 3, 3, device=device))
    except Exception:
        pass
    torch.cuda.synchronize(device)


class Host:
    def __init__(self, role, device):
        self.role = role
        self.device = torch.device(device)
        if self.device.type == "cuda":
            if self.device.index is None:  # "cuda" means the current device
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            _warm_libraries(self.device)
        self.models = {}      # init index -> module
        self.cases = []       # list of (init index, inputs on device)
        self.poison_sizes = []
        # Made before any candidate code runs: what they bind is the real thing.
        self.timer = Timer(self.device)
        self.runner = calls.Runner(self.device, self.timer)
        self.idle = calls.IdleWatch()
        self.oracles = {}  # init index -> the task's model in float64, made when first asked for

    def handle(self, op, req):
        fn = getattr(self, "op_" + str(op), None)
        if fn is None or (op in ("load_task", "describe", "ceilings", "eager_time", "lint_task", "baselines", "baselines_prepare", "baselines_time", "sample", "precision_ladder", "oracle",
                                 "prepare_build", "cuda_arch")
            and self.role != "reference") or (op in ("load_candidate", "profile", "capture_builds") and self.role != "candidate"):
            return {"ok": False, "error": "protocol", "message": f"unknown op {op!r} for {self.role}"}
        return fn(req)

    def op_env(self, req):
        """Python, torch, CUDA, device name and driver: what cached figures are keyed by."""
        return {"ok": True, "env": environment(self.device)}

    # --- reference -------------------------------------------------------------------------
    def op_load_task(self, req):
        try:
            task = _load_task(req["task"])
        except loading.LoadFailure as f:
            return _task_failure(f)
        ctor = [p for p in inspect.signature(task.Model.__init__).parameters if p != "self"]
        workdir, private = req["workdir"], req["private"]
        inits, cases = [], []
        for j, init in enumerate(req["inits"]):
            _manual_seed(init["seed"])
            init_inputs = list(task.get_init_inputs())
            _manual_seed(init["seed"])
            model = task.Model(*init_inputs).to(self.device)
            self.models[j] = model
            f = os.path.join(workdir, f"init_{j}.pt")
            torch.save({"init_inputs": init_inputs, "seed": init["seed"],
                        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()}}, f)
            inits.append({"file": f, "params": sum(p.numel() for p in model.parameters())})
        for k, case in enumerate(req["cases"]):
            dev_inputs = draw_inputs(task, case["dist"], case["seed"], self.device)
            f = os.path.join(workdir, f"case_{k}.pt")
            torch.save({"inputs": _to_device(dev_inputs, "cpu")}, f)
            self.cases.append((case["init"], dev_inputs))
            args = _clone(dev_inputs)
            start = _perf_ns()
            with _no_grad():
                out = self.models[case["init"]](*args)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            # The parent fits the candidate's call timeout to it (src/evaluator/call_budget.h).
            call_ms = (_perf_ns() - start) / 1e6
            values = tensor_io.as_list(out)
            if k == 0:
                # What the empty calls return: outputs of the same shapes, so the fixed cost the
                # parent subtracts includes the checks and sampling every real call pays.
                self.empty_outputs = [torch.empty_like(v) if _isinstance(v, _Tensor) else v for v in values]
            expected = os.path.join(private, f"expected_{k}.ctf")
            tensor_io.write_values(expected, values)
            cases.append({"file": f, "init": case["init"], "expected": expected, "call_ms": call_ms,
                          "outputs": [{"nbytes": v.numel() * v.element_size()}
                                      for v in values if _isinstance(v, _Tensor)]})
        return {"ok": True, "ctor": ctor, "inits": inits, "cases": cases,
                "env": environment(self.device)}

    def op_prepare_build(self, req):
        """The sources and build.ninja torch writes for one captured spec (inline_build.py)."""
        import inline_build
        return inline_build.prepare(req["spec"], req["module"], req.get("arch_list", ""), req["out_dir"])

    def op_cuda_arch(self, req):
        """The visible card's compute capability as TORCH_CUDA_ARCH_LIST spells it, or ""."""
        if not torch.cuda.is_available():
            return {"ok": True, "arch": ""}
        major, minor = torch.cuda.get_device_capability(self.device if self.device.type == "cuda" else 0)
        return {"ok": True, "arch": f"{major}.{minor}"}

    def op_lint_task(self, req):
        """Null-kernel probes of a task for `cudal1 lint-task` (lint.py)."""
        import lint
        return lint.op_lint_task(self, req)

    def op_describe(self, req):
        """FLOPs, bytes and shapes of a task, for `cudal1 tasks` (see describe.py)."""
        import describe
        try:
            task = _load_task(req["task"])
        except loading.LoadFailure as f:
            return _task_failure(f)
        return {"ok": True, "meta": describe.describe(task), "env": environment("cpu")}

    def op_ceilings(self, req):
        """Matrix rate and copy bandwidth of this worker's device (ceilings.py)."""
        import ceilings
        return {"ok": True, "ceilings": ceilings.measure(self.device), "env": environment(self.device)}

    def _seeded_task(self, path):
        """The task's Model and its inputs on this device, from seed 0: the same every time, for
        figures that are cached (eager time, baselines). Raises loading.LoadFailure."""
        task = _load_task(path)
        _manual_seed(0)
        init_inputs = list(task.get_init_inputs())
        _manual_seed(0)
        model = task.Model(*init_inputs).to(self.device)
        _manual_seed(0)
        return model, _to_device(list(task.get_inputs()), self.device)

    def op_baselines(self, req):
        """The task's Model against its baselines (baselines.py), timed in paired buckets on its
        first case's inputs, drawn from a fixed seed."""
        prepared = self.op_baselines_prepare(req)
        return self.op_baselines_time(req) if prepared.get("ok") else prepared

    def op_baselines_prepare(self, req):
        """The baselines built, checked and warmed up (the device shared); kept for
        baselines_time, which wants it to itself."""
        import baselines
        try:
            model, inputs = self._seeded_task(req["task"])
        except loading.LoadFailure as f:
            return _task_failure(f)
        self.baselines_state = baselines.prepare(model, inputs, self.device, req.get("names", baselines.NAMES),
                                                 req.get("warmup", 3))
        return {"ok": True, "ready": sorted(self.baselines_state["ready"])}

    def op_baselines_time(self, req):
        import baselines
        state = getattr(self, "baselines_state", None)
        if state is None:
            return {"ok": False, "error": "protocol", "message": "baselines_time before baselines_prepare"}
        self.baselines_state = None
        figures = baselines.time_prepared(state, req.get("buckets", 5), req.get("calls", 10), req.get("settle", 2))
        return {"ok": True, "baselines": figures, "env": environment(self.device)}

    def op_eager_time(self, req):
        """Median time of one eager call of a task's Model on this device, timed as candidates
        are (flush, rotated inputs, device-wide sync)."""
        try:
            model, inputs = self._seeded_task(req["task"])
        except loading.LoadFailure as f:
            return _task_failure(f)
        timer = Timer(self.device)
        buffers = [_clone(inputs) for _ in range(req.get("buffers", 2))]
        timer.run(model, buffers, req.get("warmup", 3))
        dev_ms, _, _ = timer.run(model, buffers, req.get("calls", 10), settle=1)
        dev_ms.sort()
        return {"ok": True, "eager_ms": dev_ms[len(dev_ms) // 2], "calls": len(dev_ms)}

    # --- candidate -------------------------------------------------------------------------
    def op_load_candidate(self, req):
        path = req["candidate"]
        if req.get("prebuilt") is not None:
            # Modules the parent built for this candidate's load_inline calls (src/build); set up
            # before any candidate code runs, so its calls find them.
            import inline_build
            inline_build.install_prebuilt(req["prebuilt"])
        guard.snapshot()
        guard.install(path)
        self.timer.watch = guard.watch()
        groups, compress, map_ = self.timer.watch  # bound before any candidate code runs
        try:
            mod = loading.load_module(path, "cudal1_candidate")
            loading.require(mod, path, ["ModelNew"])
        except loading.LoadFailure as f:
            return {"ok": False, "error": "candidate", "failure": f.to_json()}
        ctor = [p for p in inspect.signature(mod.ModelNew.__init__).parameters if p != "self"]
        for j, init in enumerate(req["inits"]):
            data = _load_case_file(init["file"])
            _manual_seed(data["seed"])
            try:
                model = mod.ModelNew(*data["init_inputs"])
            except TypeError as e:
                return {"ok": False, "error": "candidate", "failure": {
                    "kind": "constructor", "file": path, "line": None,
                    "message": f"ModelNew({', '.join(ctor)}) cannot be built with the task's "
                               f"constructor arguments ({', '.join(req.get('ctor', []))}): {e}"}}
            own = model.state_dict()
            matching = {k: v for k, v in data["state_dict"].items()
                        if k in own and tuple(own[k].shape) == tuple(v.shape)}
            model.load_state_dict(matching, strict=False)
            self.models[j] = model.to(self.device)
        # Its module, constructor, state_dict, load_state_dict and to() have run. Written out,
        # not called: see guard.watch().
        changed = [label for read, holders, keys, expected, differs, labels in groups
                   for label in compress(labels, map_(differs, map_(read, holders, keys), expected))]
        for case in req["cases"]:
            inputs = _load_case_file(case["file"])["inputs"]
            self.cases.append((case["init"], _to_device(inputs, self.device)))
            self.poison_sizes.append([o["nbytes"] for o in case.get("outputs", [])])
        reply = {"ok": True, "ctor": ctor, "tampered": changed}
        if req.get("prebuilt") is not None:
            import inline_build
            reply["prebuilt"] = inline_build.prebuilt_report  # which calls were served, which built here
        return reply

    def op_capture_builds(self, req):
        """Runs the candidate module with load_inline recorded, not built (inline_build.py)."""
        import inline_build
        return inline_build.capture(req["candidate"], loading.load_module, req.get("task"))

    def candidate_report(self):
        """What the guard saw: replaced harness functions and introspection events."""
        if self.role != "candidate":
            return {}
        return {"tampered": guard.tampered(), "audit": guard.events()}

    # --- both: every call of a model ---------------------------------------------------------
    def op_calls(self, req):
        """Runs a batch of calls through calls.Runner. Each call names a case, an optional
        variant seed and a slot. `write` also writes each call's outputs to a file (checking
        calls); `empty` times a call that does nothing (the fixed cost of the loop)."""
        if self.role == "candidate":
            compile_report.install_if_dynamo_loaded()
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
                self.empty_outputs = [_empty(_size(v), dtype=v.dtype, device=v.device) if _type(v) is _Tensor else None
                                      for v in outs]
            if write_dir:
                out_file = os.path.join(write_dir, f"out_{req.get('tag', 0)}_{i}.ctf")
                tensor_io.write_values(out_file, [v if calls.readable(v, ch) or not _isinstance(v, _Tensor)
                                                  else _Placeholder() for v, ch in zip(outs, checks)])
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

    def op_sample(self, req):
        """The reference's values, at the positions a candidate's call was sampled at, for the
        same case and variant: the check of a timed call. With `oracle`, also the float64
        oracle's values there (evaluator/oracle.h)."""
        init, values = self.cases[req["case"]]
        args = self.runner.inputs(values, req.get("variant"), 0)
        with _no_grad():
            outs = tensor_io.as_list(self.models[init](*args))
        self.timer.sync()
        reply = {"ok": True, "samples": self._pick(outs, req["positions"])}
        if req.get("oracle"):
            import precision
            reply["oracle_samples"] = self._pick(precision.oracle_outputs(self._oracle(init), args), req["positions"])
        return reply

    @staticmethod
    def _pick(outs, positions):
        return [calls.sample(v, calls.decode_positions(pos)) if pos is not None and _isinstance(v, _Tensor) else None
                for v, pos in zip(outs, positions)]

    def _oracle(self, init):
        """The float64 copy of init's model, made once."""
        import precision
        if init not in self.oracles:
            self.oracles[init] = precision.oracle_model(self.models[init])
        return self.oracles[init]

    def op_oracle(self, req):
        """The float64 oracle's outputs for a case, to a private file for the parent: the
        candidate that fails the tolerance against an imprecise reference is judged against it."""
        import precision
        init, values = self.cases[req["case"]]
        try:
            outs = precision.oracle_outputs(self._oracle(init), values)
        except Exception as e:  # noqa: BLE001 — a task without float64 kernels has no oracle
            return precision.no_float64(e)
        tensor_io.write_values(req["oracle_file"], outs)
        return {"ok": True}

    def op_precision_ladder(self, req):
        """Errors of the reference against an fp64 oracle, run as it is and in reduced precision
        (precision.py); the oracle's outputs go to a private file for the parent."""
        import precision
        init, values = self.cases[req["case"]]
        return precision.ladder(self.models[init], values, self.device, req["oracle_file"])

    def op_profile(self, req):
        """GPU time per kernel over a few calls, under torch.profiler (attribution)."""
        import attribution
        return attribution.profile(self, req["calls"])




class _Placeholder:
    """Stands for an output that failed an exact check: its values are not read."""
