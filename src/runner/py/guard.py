"""Evidence of a candidate reaching for the harness, gathered inside the candidate's process.

Two sources, both set up before any candidate code runs:
- a snapshot of the functions timing and checking rely on (torch.cuda's synchronisation and
  events, the time module's clocks, this worker's own modules); any that are later replaced are
  reported as tampered;
- a Python audit hook (it cannot be removed once added) that records introspection by candidate
  code: gc.get_objects / get_referrers / get_referents, sys._getframe (inspect.currentframe and
  inspect.stack use it), reaching frames through tracebacks or generators, and opening another
  process's /proc entries.

Neither is proof against every trick in a process the candidate controls; what they guard is
also guarded from outside: the expected outputs never enter this process, the parent times every
batch on its own clock, and timed outputs are verified against the reference.
"""
import os
import sys
import sysconfig

import torch

_WATCHED = [
    ("torch.cuda", ["synchronize", "Event", "Stream", "current_stream", "default_stream", "stream"]),
    ("torch.cuda.Event", ["record", "elapsed_time", "synchronize", "query", "wait"]),
    ("torch._C", ["_cuda_synchronize"]),
    ("torch", ["allclose", "equal", "no_grad", "randperm", "randint"]),
    ("time", ["perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns"]),
    ("os", ["urandom", "listdir", "write", "_exit"]),
]
_OWN_MODULES = ["timing", "calls", "tensor_io", "roles", "guard", "loading"]
_INTROSPECTION = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
                  "sys._current_frames"}
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}
# Every event the hook may act on. The hook runs on EVERY audit event of the process (imports,
# compiles, opens, torch.compile's and Triton's own), and inside timed calls too: anything else
# must cost one set lookup and nothing more.
_WATCHED_EVENTS = frozenset(_INTROSPECTION | {"object.__getattr__", "open"})

_snapshot = {}
_events = []
_state = {"candidate": None, "busy": False}
_stdlib = sysconfig.get_paths()["stdlib"] + os.sep
_pid = str(os.getpid())
_getframe = sys._getframe


def _resolve(dotted):
    obj = None
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if i == 0:
            obj = sys.modules.get(part)
        else:
            obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _entries():
    """(name, object) for every watched attribute, as they are now."""
    out = []
    for owner, names in _WATCHED:
        holder = _resolve(owner)
        if holder is None:
            continue
        for name in names:
            out.append((f"{owner}.{name}", getattr(holder, name, None)))
    for mod_name in _OWN_MODULES:
        mod = sys.modules.get(mod_name)
        if mod is None:
            continue
        for name, value in list(vars(mod).items()):
            if callable(value) and not name.startswith("__"):
                out.append((f"{mod_name}.{name}", value))
                if isinstance(value, type) and getattr(value, "__module__", None) == mod_name:
                    for attr, member in list(vars(value).items()):
                        if callable(member) and not attr.startswith("__"):
                            out.append((f"{mod_name}.{name}.{attr}", member))
    return out


def snapshot():
    """Records the watched functions; call once, before the candidate loads."""
    for name, value in _entries():
        _snapshot[name] = value


def tampered():
    """Names of watched functions that are no longer the ones recorded."""
    now = dict(_entries())
    return sorted(name for name, value in _snapshot.items() if now.get(name, None) is not value)


def _candidate_caller(frame):
    """Whether the frame that asked is candidate code: the candidate's own file, or code it
    compiled itself (a pseudo-file like '<string>'). inspect and traceback are only ways of
    asking, so the question goes to their caller; any other library asking for its own reasons
    (namedtuple, logging, torch) is not the candidate."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_stdlib) and path.rsplit("/", 1)[-1] in ("inspect.py", "traceback.py"):
            frame = frame.f_back
            continue
        return path == _state["candidate"] or (path.startswith("<") and not path.startswith("<frozen"))
    return False


def _other_process_entry(path):
    """Whether `path` opens another process's /proc entry (/proc/PID/... with a PID not ours).
    System-wide entries (/proc/sys, /proc/cpuinfo, /proc/meminfo, /proc/driver) describe the
    machine, not the harness: libraries read them for their own reasons (torch.compile's cache
    key reads /proc/sys/kernel/random/boot_id)."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    elif not isinstance(path, str):
        return False
    if "proc" not in path:  # normpath only drops components: every /proc path still names it
        return False
    parts = os.path.normpath(path).split("/")
    return len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit() and parts[2] != _pid


def _hook(event, args, _watched=_WATCHED_EVENTS):
    # The cheap tests first, and nothing else for an event that is not one of ours: every open
    # of a file, import and compile in the process (torch.compile's and Triton's among them)
    # comes through here.
    if event not in _watched or _state["busy"] or _state["candidate"] is None:
        return
    if event == "open":
        if not _other_process_entry(args[0]):
            return
    elif event == "object.__getattr__":
        if len(args) < 2 or args[1] not in _FRAME_ATTRS:
            return
    _record(event, args)


def _record(event, args):
    """Notes an introspection event when candidate code asked for it (any such open counts)."""
    _state["busy"] = True
    try:
        caller = _getframe(2)
        if event == "open" or _candidate_caller(caller):
            detail = args[1] if event == "object.__getattr__" else (args[0] if event == "open" else "")
            if len(_events) < 100:
                _events.append({"event": event, "detail": str(detail)[:200],
                                "where": f"{caller.f_code.co_filename}:{caller.f_lineno}"})
    finally:
        _state["busy"] = False


def install(candidate_path):
    """Starts recording introspection by the candidate at `candidate_path`."""
    _state["candidate"] = candidate_path
    sys.addaudithook(_hook)


def events():
    return list(_events)
