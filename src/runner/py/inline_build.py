"""load_inline builds done outside the candidate's process (src/build, docs/builds.md).

Three uses, one canonical spec:
- capture(path), in the UNTRUSTED candidate worker: runs the candidate module with load_inline
  replaced by a recorder, so the parent learns every extension the module builds at import;
- prepare(spec), in a TRUSTED worker: lets torch's own load_inline write main.cpp, cuda.cu and
  build.ninja for a spec, and stops it before it runs ninja, so the parent builds exactly what
  torch would;
- install_prebuilt(entries), in the candidate worker before the candidate runs: load_inline then
  imports the module the parent built for the same spec, or raises the failure the parent saw.
"""
import hashlib
import importlib.util
import inspect
import json
import os
import re
import types

import torch.utils.cpp_extension as _ce

_real_load_inline = _ce.load_inline
# Arguments that change where or how loudly torch builds, never what the module is.
_IGNORED = {"build_directory", "verbose", "keep_intermediates", "use_pch"}


class Unsupported(Exception):
    """A call the parent does not build; the candidate's process builds it itself."""


def _strings(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise Unsupported(f"{what} is not a string or a list of strings")


def canonical_spec(args, kwargs):
    """The build a load_inline(*args, **kwargs) call asks for, as plain JSON data: equal specs
    build equal modules. Raises Unsupported for calls the parent does not build."""
    try:
        bound = inspect.signature(_real_load_inline).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"the arguments do not fit load_inline: {e}")
    bound.apply_defaults()
    a = dict(bound.arguments)
    name = a.pop("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise Unsupported("the extension name is not a Python identifier")
    if a.get("is_python_module") is not True:
        raise Unsupported("is_python_module=False loads a library into torch.ops")
    if a.get("sycl_sources") or a.get("with_sycl"):
        raise Unsupported("SYCL sources")
    functions = a.get("functions")
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, (list, tuple)):
        if not all(isinstance(f, str) for f in functions):
            raise Unsupported("functions holds something other than strings")
        functions = [[f, f] for f in functions]
    elif isinstance(functions, dict):
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in functions.items()):
            raise Unsupported("functions maps something other than strings")
        functions = [[k, v] for k, v in functions.items()]
    elif functions is not None:
        raise Unsupported("functions is not a list or a dict")
    cuda_sources = _strings(a.get("cuda_sources"), "cuda_sources")
    with_cuda = a.get("with_cuda")
    spec = {
        "name": name,
        "cpp_sources": _strings(a.get("cpp_sources"), "cpp_sources"),
        "cuda_sources": cuda_sources,
        "functions": functions,
        "extra_cflags": _strings(a.get("extra_cflags"), "extra_cflags"),
        "extra_cuda_cflags": _strings(a.get("extra_cuda_cflags"), "extra_cuda_cflags"),
        "extra_ldflags": _strings(a.get("extra_ldflags"), "extra_ldflags"),
        "extra_include_paths": _strings(a.get("extra_include_paths"), "extra_include_paths"),
        "with_cuda": bool(cuda_sources) if with_cuda is None else bool(with_cuda),
        "with_pytorch_error_handling": bool(a.get("with_pytorch_error_handling", True)),
    }
    if "no_implicit_headers" in a:  # torch >= 2.6
        spec["no_implicit_headers"] = bool(a["no_implicit_headers"])
    known = set(spec) | {"name", "is_python_module", "sycl_sources", "with_sycl",
                         "extra_sycl_cflags"} | _IGNORED
    for k, v in a.items():
        if k not in known and v not in (None, False, [], ""):
            raise Unsupported(f"load_inline argument {k!r} is not understood by the build service")
    return spec


def spec_id(spec):
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def content_id(spec):
    """The spec without its name: a candidate that names its extension after the clock
    (f"ext_{int(time.time())}") asks for the same build at capture and at load under two names."""
    return spec_id({k: v for k, v in spec.items() if k != "name"})


class _Versions:
    """torch's ExtensionVersioner, as a process sees it: a name built again with other inputs
    becomes name_v1, name_v2, ... (and that is the module name the .so is built with)."""

    def __init__(self):
        self.last = {}

    def module_name(self, spec, sid):
        name = spec["name"]
        seen = self.last.get(name)
        if seen is None:
            self.last[name] = (sid, 0)
            return name
        if seen[0] != sid:
            seen = (sid, seen[1] + 1)
            self.last[name] = seen
        return name if seen[1] == 0 else f"{name}_v{seen[1]}"


def _mutate_like_torch(args, kwargs, spec):
    """torch's load_inline inserts into list arguments it is given; a call we answer does too."""
    params = list(inspect.signature(_real_load_inline).parameters)

    def get(key):
        i = params.index(key)
        return args[i] if i < len(args) else kwargs.get(key)

    implicit = not spec.get("no_implicit_headers", False)
    cpp, cuda = get("cpp_sources"), get("cuda_sources")
    if isinstance(cpp, list):
        if implicit:
            cpp.insert(0, "#include <torch/extension.h>")
        if spec["functions"] is not None:
            cpp += _module_def(spec)
    if isinstance(cuda, list) and cuda and implicit:
        cuda[0:0] = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]


def _module_def(spec):
    lines = ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
    for fn, doc in spec["functions"]:
        target = f"torch::wrap_pybind_function({fn})" if spec["with_pytorch_error_handling"] else fn
        lines.append(f'm.def("{fn}", {target}, "{doc}");')
    return lines + ["}"]


# --- capture (untrusted worker) -------------------------------------------------------------

class _Pending(types.ModuleType):
    """What the recorder returns: any function of it raises, since nothing was built yet."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        name = self.__name__

        def not_built(*args, **kwargs):
            raise RuntimeError(f"{name}.{attr} was called while the build service was only "
                               "recording this module's load_inline calls")
        return not_built


def _construct(module, task, load_module):
    """ModelNew(*get_init_inputs()) on the CPU, as the evaluation first builds it: many kernels
    (CUDA-L1's among them) call load_inline in the constructor, not at import. Whatever it
    raises ends it: the calls it made before are recorded, which is all this is for."""
    import torch
    try:
        init = load_module(task, "cudal1_capture_task").get_init_inputs()
        torch.manual_seed(0)
        module.ModelNew(*init)
    except BaseException:  # a pending module's function, .cuda() without a GPU, anything
        pass


def capture(path, load_module, task=None, cuda_target=False):
    """Runs the candidate at `path` (through `load_module(path, name)`) with load_inline recorded,
    and with `task` (its get_init_inputs) also constructs its ModelNew.
    This process has no GPU. With `cuda_target` (the candidate will run on one),
    torch.cuda.is_available() answers true meanwhile, as it will there: the calls a candidate
    makes only where CUDA is are recorded too. Whatever then needs a real GPU raises, and the
    calls made before it are still recorded.
    Returns {"ok", "imported", "failure", "calls": [{spec, spec_id, module} | {name, unsupported}]}."""
    calls, versions = [], _Versions()

    def recorder(*args, **kwargs):
        try:
            spec = canonical_spec(args, kwargs)
        except Unsupported as e:
            calls.append({"name": str(args[0] if args else kwargs.get("name", "?"))[:200],
                          "unsupported": str(e)})
            return _Pending("unsupported")
        sid = spec_id(spec)
        module = versions.module_name(spec, sid)
        _mutate_like_torch(args, kwargs, spec)
        calls.append({"spec": spec, "spec_id": sid, "module": module, "content_id": content_id(spec)})
        return _Pending(module)

    def refuse_load(*args, **kwargs):
        raise RuntimeError("torch.utils.cpp_extension.load of files is built in the candidate's "
                           "own process, not captured")

    import torch
    saved = (_ce.load_inline, _ce.load, torch.cuda.is_available)
    _ce.load_inline, _ce.load = recorder, refuse_load
    if cuda_target:
        torch.cuda.is_available = lambda: True
    failure = None
    try:
        module = load_module(path, "cudal1_capture")
        if task and callable(getattr(module, "ModelNew", None)):
            _construct(module, task, load_module)
    except Exception as e:  # loading.LoadFailure; whatever the module raised
        failure = e.to_json() if hasattr(e, "to_json") else {"message": str(e)[:4000]}
    finally:
        _ce.load_inline, _ce.load, torch.cuda.is_available = saved
    return {"ok": True, "imported": failure is None, "failure": failure, "calls": calls}


# --- prepare (trusted worker) ---------------------------------------------------------------

class _Written(Exception):
    pass


def prepare(spec, module, arch_list, out_dir):
    """Lets torch write the sources and build.ninja of `spec` (as module `module`) into out_dir.
    Returns the files' text and the spec's id, computed here again from the spec."""
    kwargs = {k: v for k, v in spec.items() if k != "functions"}
    kwargs["name"] = module
    if spec["functions"] is not None:
        kwargs["functions"] = {f: d for f, d in spec["functions"]}
    kwargs["cpp_sources"] = list(spec["cpp_sources"])
    kwargs["cuda_sources"] = list(spec["cuda_sources"])
    again = canonical_spec((), dict(kwargs, name=spec["name"]))
    if arch_list:
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list
    os.makedirs(out_dir, exist_ok=True)

    def written(*args, **kw):
        raise _Written()

    saved = {k: getattr(_ce, k, None) for k in ("_run_ninja_build", "JIT_EXTENSION_VERSIONER",
             "remove_extension_h_precompiler_headers", "_check_and_build_extension_h_precompiler_headers")}
    _ce._run_ninja_build = written
    _ce.JIT_EXTENSION_VERSIONER = _ce.ExtensionVersioner()  # a name seen before must not become _v1
    for k in ("remove_extension_h_precompiler_headers", "_check_and_build_extension_h_precompiler_headers"):
        if saved[k] is not None:  # torch >= 2.2 would delete or write a PCH inside its own tree
            setattr(_ce, k, lambda *a, **k: None)
    try:
        _real_load_inline(build_directory=out_dir, verbose=False, **kwargs)
        raise RuntimeError("load_inline returned without writing a build file")
    except _Written:
        pass
    finally:
        for k, v in saved.items():
            if v is not None:
                setattr(_ce, k, v)
    files = {}
    for f in ("main.cpp", "cuda.cu", "build.ninja"):
        p = os.path.join(out_dir, f)
        if os.path.exists(p):
            with open(p, encoding="utf-8", errors="surrogateescape") as fh:
                files[f] = fh.read()
    return {"ok": True, "spec_id": spec_id(again), "module": module, "files": files}


# --- prebuilt modules (candidate worker, before the candidate runs) -------------------------

prebuilt_report = {"served": [], "failed": [], "missed": []}


def _import_so(module, so):
    spec = importlib.util.spec_from_file_location(module, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# A compiler's own error diagnostic (g++/clang "main.cpp:4:46: error:", nvcc "cuda.cu(181):
# error:", a bare "error:"), not a warning's quoted source line that merely holds "error:".
_COMPILER_ERROR = re.compile(r"^\s*(\S+:\d+:(\d+:)? (fatal )?error:|\S+\(\d+\): (catastrophic )?error:|(fatal )?error:)")


def _first_error_line(message):
    """The compiler's first error line of a failed build, else the message's first line: what a
    reader of the verdict needs, without the source it quotes."""
    lines = message.splitlines()
    for line in lines:
        if _COMPILER_ERROR.match(line):
            return line.strip()[:240]
    return (lines[0] if lines else "")[:240]


def _build_in_process(args, kwargs):
    """A call no prebuilt module answers compiles here, as torch would compile it. A candidate
    that catches the failure and runs PyTorch instead is a decoy; the error says why."""
    try:
        return _real_load_inline(*args, **kwargs)
    except Exception as e:
        prebuilt_report.setdefault("in_process_failed", []).append(_first_error_line(str(e)))
        raise


def install_prebuilt(entries):
    """entries: [{spec_id, so, module}] for built modules, [{spec_id, error}] for failed builds.
    A load_inline call whose spec matches is answered from them; any other call builds as usual
    and is recorded in prebuilt_report["missed"]; if that build fails, its first error line goes
    to prebuilt_report["in_process_failed"] before torch's exception goes on to the candidate."""
    by_id = {e["spec_id"]: e for e in entries}
    by_content = {e["content_id"]: e for e in entries if e.get("content_id") and "so" in e}
    versions = _Versions()

    def load_inline(*args, **kwargs):
        try:
            spec = canonical_spec(args, kwargs)
        except Unsupported as e:
            prebuilt_report["missed"].append(str(e))
            return _build_in_process(args, kwargs)
        sid = spec_id(spec)
        module = versions.module_name(spec, sid)
        entry = by_id.get(sid)
        if entry is None:
            entry = by_content.get(content_id(spec))
            if entry is not None:  # the same build under another name: it keeps the name it was built with
                prebuilt_report.setdefault("renamed", []).append({"asked": spec["name"], "built": entry["module"]})
        if entry is None:
            prebuilt_report["missed"].append(sid)
            return _build_in_process(args, kwargs)
        _mutate_like_torch(args, kwargs, spec)
        if "error" in entry:
            prebuilt_report["failed"].append(sid)
            raise RuntimeError(f"Error building extension '{module}': {entry['error']}")
        prebuilt_report["served"].append(sid)
        return _import_so(entry.get("module") or module, entry["so"])

    _ce.load_inline = load_inline
