"""The untrusted candidate's worker: loads ModelNew with the task's weights and runs it on the
inputs the reference made. Every stretch of candidate code is followed by the guard's check
(guard.py); this module is one of those the guard snapshots."""
import inspect

import torch

import compile_report
import guard
import loading
from roles import Host
from task_loading import load_case_file, to_device

_manual_seed = torch.manual_seed


class CandidateHost(Host):
    role = "candidate"

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
            data = load_case_file(init["file"])
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
                   for label in compress(labels,
                                         map_(differs, map_(read, holders, keys), expected))]
        for case in req["cases"]:
            inputs = load_case_file(case["file"])["inputs"]
            self.cases.append((case["init"], to_device(inputs, self.device)))
            self.poison_sizes.append([o["nbytes"] for o in case.get("outputs", [])])
        reply = {"ok": True, "ctor": ctor, "tampered": changed}
        if req.get("prebuilt") is not None:
            import inline_build
            # Which calls were served, which built here.
            reply["prebuilt"] = inline_build.prebuilt_report
        return reply

    def op_capture_builds(self, req):
        """Runs the candidate module with load_inline recorded, not built (inline_build.py)."""
        import inline_build
        return inline_build.capture(req["candidate"], loading.load_module, req.get("task"),
                                    cuda_target=req.get("target") == "cuda")

    def candidate_report(self):
        """What the guard saw: replaced harness functions and introspection events."""
        return {"tampered": guard.tampered(), "audit": guard.events()}

    def op_calls(self, req):
        """The calls of roles.Host, with the parent told while torch.compile compiles in them
        (compile_report.py): the candidate may have brought dynamo in since the last batch."""
        compile_report.install_if_dynamo_loaded()
        # Not super(): a builtin the guard does not watch, which the candidate could replace
        # with one that answers for the calls; the module's Host is watched.
        return Host.op_calls(self, req)

    def op_profile(self, req):
        """GPU time per kernel over a few calls, under torch.profiler (attribution)."""
        import attribution
        return attribution.profile(self, req["calls"])
