"""The trusted reference's worker: loads the task, makes the inputs and the expected outputs, and
answers the questions about a task that only trusted code may (lint, baselines, eager time,
precision). Candidate code never runs in this process."""
import inspect
import os
import time

import torch

import calls
import guard
import loading
import tensor_io
import task_loading
from roles import Host, environment
from task_loading import clone, load_task, task_failure, to_device
from tensor_io import _Tensor, _isinstance
from timing import Timer

_no_grad = torch.no_grad
_perf_ns = time.perf_counter_ns


class ReferenceHost(Host):
    role = "reference"

    def __init__(self, device):
        super().__init__(device)
        self.oracles = {}  # init index -> the task's model in float64, made when first asked for

    def op_load_task(self, req):
        try:
            task = load_task(req["task"])
        except loading.LoadFailure as f:
            return task_failure(f)
        ctor = [p for p in inspect.signature(task.Model.__init__).parameters if p != "self"]
        inits = [self._load_init(task, j, init["seed"], req["workdir"])
                 for j, init in enumerate(req["inits"])]
        cases = [self._load_case(task, k, case, req["workdir"], req["private"])
                 for k, case in enumerate(req["cases"])]
        # The reference's calls pay for the harness as the candidate's do: the guard's check
        # after every call, and its audit hook, which that check's own reads of each watched
        # function's __code__ wake about two hundred times a call. The parent subtracts each
        # side's cost of empty calls, the candidate's only up to the reference's plus a small
        # allowance (evaluator/measure.cpp); with the hook on one side only, the candidate's
        # empty calls on a busy H100 host passed that allowance in every evaluation, and the rest
        # read as time outside its calls. Here the hook only records, and what it records of the
        # task is never asked for.
        guard.snapshot()
        guard.install(req["task"])
        self.timer.watch = guard.watch()
        # The device memory the task took here (models, every case's inputs, one call's
        # outputs), for the parent's budget of the device's memory (core/device_memory.h).
        used = torch.cuda.max_memory_reserved(self.device) if self.device.type == "cuda" else 0
        return {"ok": True, "ctor": ctor, "inits": inits, "cases": cases,
                "env": environment(self.device), "device_memory": used}

    def _load_init(self, task, j, seed, workdir):
        """Init j's model, kept, and its constructor arguments and weights in a file for the
        candidate's worker."""
        model, init_inputs = task_loading.build_model(task, seed, self.device)
        self.models[j] = model
        f = os.path.join(workdir, f"init_{j}.pt")
        torch.save({"init_inputs": init_inputs, "seed": seed,
                    "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()}}, f)
        return {"file": f, "params": sum(p.numel() for p in model.parameters())}

    def _load_case(self, task, k, case, workdir, private):
        """Case k's inputs, kept and in a file for the candidate's worker; its expected outputs
        in a private file for the parent."""
        dev_inputs = task_loading.draw_inputs(task, case["dist"], case["seed"], self.device)
        f = os.path.join(workdir, f"case_{k}.pt")
        torch.save({"inputs": to_device(dev_inputs, "cpu")}, f)
        self.cases.append((case["init"], dev_inputs))
        args = clone(dev_inputs)
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
            self.empty_outputs = [torch.empty_like(v) if _isinstance(v, _Tensor) else v
                                  for v in values]
        expected = os.path.join(private, f"expected_{k}.ctf")
        tensor_io.write_values(expected, values)
        return {"file": f, "init": case["init"], "expected": expected, "call_ms": call_ms,
                "outputs": [{"nbytes": v.numel() * v.element_size()}
                            for v in values if _isinstance(v, _Tensor)]}

    def op_prepare_build(self, req):
        """The sources and build.ninja torch writes for one captured spec (inline_build.py)."""
        import inline_build
        return inline_build.prepare(req["spec"], req["module"], req.get("arch_list", ""),
                                    req["out_dir"])

    def op_cuda_arch(self, req):
        """The visible card's compute capability as TORCH_CUDA_ARCH_LIST spells it, or ""."""
        if not torch.cuda.is_available():
            return {"ok": True, "arch": ""}
        major, minor = torch.cuda.get_device_capability(
            self.device if self.device.type == "cuda" else 0)
        return {"ok": True, "arch": f"{major}.{minor}"}

    def op_lint_task(self, req):
        """Null-kernel probes of a task for `cudal1 lint-task` (lint.py)."""
        import lint
        return lint.op_lint_task(self, req)

    def op_describe(self, req):
        """FLOPs, bytes and shapes of a task, for `cudal1 tasks` (see describe.py)."""
        import describe
        try:
            task = load_task(req["task"])
        except loading.LoadFailure as f:
            return task_failure(f)
        return {"ok": True, "meta": describe.describe(task), "env": environment("cpu")}

    def op_ceilings(self, req):
        """Matrix rate and copy bandwidth of this worker's device (ceilings.py)."""
        import ceilings
        return {"ok": True, "ceilings": ceilings.measure(self.device),
                "env": environment(self.device)}

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
            model, inputs = task_loading.seeded_task(req["task"], self.device)
        except loading.LoadFailure as f:
            return task_failure(f)
        self.baselines_state = baselines.prepare(model, inputs, self.device,
                                                 req.get("names", baselines.NAMES),
                                                 req.get("warmup", 3))
        return {"ok": True, "ready": sorted(self.baselines_state["ready"])}

    def op_baselines_time(self, req):
        import baselines
        state = getattr(self, "baselines_state", None)
        if state is None:
            return {"ok": False, "error": "protocol",
                    "message": "baselines_time before baselines_prepare"}
        self.baselines_state = None
        figures = baselines.time_prepared(state, req.get("buckets", 5), req.get("calls", 10),
                                          req.get("settle", 2))
        return {"ok": True, "baselines": figures, "env": environment(self.device)}

    def op_eager_time(self, req):
        """Median time of one eager call of a task's Model on this device, timed as candidates
        are (flush, rotated inputs, device-wide sync)."""
        try:
            model, inputs = task_loading.seeded_task(req["task"], self.device)
        except loading.LoadFailure as f:
            return task_failure(f)
        timer = Timer(self.device)
        buffers = [clone(inputs) for _ in range(req.get("buffers", 2))]
        timer.run(model, buffers, req.get("warmup", 3))
        dev_ms, _, _ = timer.run(model, buffers, req.get("calls", 10), settle=1)
        dev_ms.sort()
        return {"ok": True, "eager_ms": dev_ms[len(dev_ms) // 2], "calls": len(dev_ms)}

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
            reply["oracle_samples"] = self._pick(
                precision.oracle_outputs(self._oracle(init), args), req["positions"])
        return reply

    @staticmethod
    def _pick(outs, positions):
        return [calls.sample(v, calls.decode_positions(pos))
                if pos is not None and _isinstance(v, _Tensor) else None
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
