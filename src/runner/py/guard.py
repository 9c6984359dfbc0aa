"""Evidence of a candidate reaching for the harness, gathered inside the candidate's process.

Two sources, both set up before any candidate code runs:
- a snapshot of the functions timing, checking and replying rely on (torch.cuda's
  synchronisation and events, the time module's clocks, json's encoder, the builtins the worker
  calls, this worker's own modules): which object each name is bound to, and what can be changed
  inside it without replacing it: a Python function's code, defaults, keyword defaults and
  closure cells, a C function's method pointers. The worker compares it after every stretch of
  candidate code (see watch()) and reports what changed as tampered;
- a Python audit hook (it cannot be removed once added) that records introspection by candidate
  code: gc.get_objects / get_referrers / get_referents, sys._getframe (inspect.currentframe and
  inspect.stack use it), reaching frames through tracebacks or generators, and opening another
  process's /proc entries.

Neither is proof against every trick in a process the candidate controls; what they guard is
also guarded from outside: the expected outputs never enter this process, the parent times every
batch on its own clock, and timed outputs are verified against the reference.
"""
import ctypes
import os
import sys
import sysconfig
import types
from itertools import compress
from operator import is_not, ne

import torch

_WATCHED = [
    ("torch.cuda", ["synchronize", "Event", "Stream", "current_stream", "default_stream", "stream"]),
    ("torch.cuda.Event", ["record", "elapsed_time", "synchronize", "query", "wait"]),
    ("torch._C", ["_cuda_synchronize"]),
    ("torch", ["allclose", "equal", "no_grad", "randperm", "randint"]),
    ("time", ["perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns"]),
    ("os", ["urandom", "listdir", "write", "_exit"]),
    # The replies' serialiser: what the parent reads every figure from.
    ("json", ["dumps", "loads"]),
    ("json.encoder", ["c_make_encoder", "encode_basestring_ascii", "encode_basestring", "_make_iterencode"]),
    ("json.encoder.JSONEncoder", ["encode", "iterencode", "default"]),
    # Builtins the worker's own code calls after a candidate's call returns. Not open: the
    # worker binds its own before candidate code runs, so a candidate may replace it to no effect
    # (rejected_gemm_relu_working_thread_fakes_proc does, and is still caught for its thread).
    ("builtins", ["float", "int", "str", "repr", "len", "range", "sum", "min", "max", "abs", "any", "zip",
                  "enumerate", "sorted", "isinstance", "type", "getattr", "list", "dict", "set", "tuple", "bool",
                  "next", "iter", "Exception", "BaseException"]),
    # The readers of the C pointers below: a replaced `value` would report the old pointers.
    ("ctypes.c_void_p", ["value"]),
    ("ctypes._SimpleCData", ["value"]),
]
_OWN_MODULES = ["timing", "calls", "tensor_io", "roles", "candidate_host", "task_loading", "guard",
                "loading", "__main__"]
# Names that, added to one of the worker's classes, would intercept every attribute read of it.
_CLASS_HOOKS = ["__getattribute__", "__getattr__", "__setattr__"]
_INTROSPECTION = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
                  "sys._current_frames"}
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}
# Every event the hook may act on. The hook runs on EVERY audit event of the process (imports,
# compiles, opens, torch.compile's and Triton's own), and inside timed calls too: anything else
# must cost one set lookup and nothing more.
_WATCHED_EVENTS = frozenset(_INTROSPECTION | {"object.__getattr__", "open"})

_events = []
_state = {"candidate": None, "busy": False}
_stdlib = sysconfig.get_paths()["stdlib"] + os.sep
_pid = str(os.getpid())
_getframe = sys._getframe
_proxy_get = types.MappingProxyType.get

# What snapshot() recorded, for a check cheap enough to run after every call: groups of
# (read, holders, keys, expected, differs, labels), where differs(read(holder, key), expected)
# must be false for every entry. Objects are compared by identity, machine words inside C
# function objects (read through ctypes) by value.
_groups = ()


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


def _sources():
    """(label, holder, name) for every watched attribute: the listed ones, every callable of
    the worker's own modules, and every method of the classes they define."""
    for owner, names in _WATCHED:
        holder = _resolve(owner)
        if holder is not None:
            for name in names:
                yield f"{owner}.{name}", holder, name
    for mod_name in _OWN_MODULES:
        mod = sys.modules.get(mod_name)
        if mod is None:
            continue
        for name, value in list(vars(mod).items()):
            if not callable(value) or name.startswith("__"):
                continue
            yield f"{mod_name}.{name}", mod, name
            if isinstance(value, type) and getattr(value, "__module__", None) == mod.__name__:
                for attr, member in list(vars(value).items()):
                    if callable(member) and not attr.startswith("__"):
                        yield f"{mod_name}.{name}.{attr}", value, attr
                for hook in _CLASS_HOOKS:
                    yield f"{mod_name}.{name}.{hook}", value, hook


def _reader(holder, name):
    """How to read holder.name so that the answer cannot be dressed up: a module's or class's
    own dict (a module's class can be swapped for one whose __getattribute__ lies), or plain
    getattr for what a class inherits. A name not there at all is read from the dict too: it
    reads None until something adds it."""
    if isinstance(holder, types.ModuleType):
        return dict.get, vars(holder)
    if isinstance(holder, type) and (name in vars(holder) or not hasattr(holder, name)):
        return _proxy_get, holder.__dict__
    return getattr, holder


def _function_parts(fn, label):
    """(read, holder, key, expected, label) for what can be changed in place in a Python
    function: its code, its defaults (the keyword defaults' contents too: that dict is mutable),
    and what its closure cells hold."""
    out = [(getattr, fn, attr, getattr(fn, attr), f"{label}.{attr}")
           for attr in ("__code__", "__defaults__", "__kwdefaults__")]
    for key, value in (fn.__kwdefaults__ or {}).items():
        out.append((dict.get, fn.__kwdefaults__, key, value, f"{label}.__kwdefaults__[{key!r}]"))
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out.append((getattr, cell, "cell_contents", cell.cell_contents, f"{label}.<closure {var}>"))
        except ValueError:
            pass  # empty: nothing bound to swap yet. (Emptying a watched cell makes the check raise, failing the call.)
    return out


_PTR = ctypes.sizeof(ctypes.c_void_p)
_HEAD = object.__basicsize__  # PyObject_HEAD: reference count and type, more in some builds
# Per kind of C function object (CPython's methodobject.h and descrobject.h): the offsets of its
# PyMethodDef pointer and of its vectorcall pointer, and the size the layout implies.
# PyCFunctionObject: head, m_ml, m_self, m_module, m_weakreflist, vectorcall.
# PyMethodDescrObject: head, d_type, d_name, d_qualname, d_method, vectorcall.
_C_LAYOUTS = {  # type: (PyMethodDef pointer offset, vectorcall offset, object size)
    types.BuiltinFunctionType: (_HEAD, _HEAD + 4 * _PTR, _HEAD + 5 * _PTR),
    types.MethodDescriptorType: (_HEAD + 3 * _PTR, _HEAD + 4 * _PTR, _HEAD + 5 * _PTR),
}


def _word(address):
    return ctypes.c_void_p.from_address(address)


def _c_function_words(fn, label):
    """(word, expected, label) for the pointers a call of C function `fn` goes through: its
    PyMethodDef, that def's ml_meth, and its vectorcall. Nothing where the layout is not the
    one these offsets describe (checked by the object's size and by the def naming `fn`): the
    function is then watched by identity only."""
    layout = _C_LAYOUTS.get(type(fn))
    if layout is None or type(fn).__basicsize__ != layout[2]:
        return []
    def_offset, vectorcall_offset, _ = layout
    base = id(fn)
    method_def = _word(base + def_offset).value
    if not method_def or ctypes.c_char_p.from_address(method_def).value != fn.__name__.encode():
        return []
    return [(_word(base + def_offset), method_def, f"{label}.<PyMethodDef>"),
            (_word(method_def + _PTR), _word(method_def + _PTR).value, f"{label}.<ml_meth>"),
            (_word(base + vectorcall_offset), _word(base + vectorcall_offset).value, f"{label}.<vectorcall>")]


def _inner(value, label):
    """What can be changed inside `value` without replacing it: objects and C words."""
    if isinstance(value, (staticmethod, classmethod, types.MethodType)):
        objs, words = _inner(value.__func__, label)
        return [(getattr, value, "__func__", value.__func__, f"{label}.__func__")] + objs, words
    if isinstance(value, types.FunctionType):
        return _function_parts(value, label), []
    if isinstance(value, tuple(_C_LAYOUTS)):
        return [], _c_function_words(value, label)
    return [], []


def _grouped(entries):
    """(read, holder, key, expected, differs, label) entries as the groups the check maps over."""
    groups = {}
    for read, holder, key, expected, differs, label in entries:
        columns = groups.setdefault((read, differs), ([], [], [], []))
        for column, value in zip(columns, (holder, key, expected, label)):
            column.append(value)
    return tuple((read, tuple(h), tuple(k), tuple(e), differs, tuple(w))
                 for (read, differs), (h, k, e, w) in groups.items())


def snapshot():
    """Records the watched functions, inside and out; call once, before the candidate loads."""
    global _groups
    entries, seen = [], set()
    for label, holder, name in _sources():
        read, where = _reader(holder, name)
        value = read(where, name)
        if read(where, name) is not value:
            continue  # made anew at each read (a classmethod reached through its class)
        entries.append((read, where, name, value, is_not, label))
        if id(value) not in seen:
            seen.add(id(value))
            objs, words = _inner(value, label)
            entries += [(r, h, k, e, is_not, w) for r, h, k, e, w in objs]
            entries += [(getattr, word, "value", e, ne, w) for word, e, w in words]
    _groups = _grouped(entries)


def watch():
    """What a check needs, bound now: the snapshot, and the functions that walk it. The check is
    written out in each frame that calls candidate code, not called through a helper: a frame
    already running keeps the code it started with, while a helper (this module's own functions
    included) is only as good as its code at the time of the call. Written out, it is

        groups, compress, map_ = <what watch() returned, kept where candidate code cannot reach>
        changed = [label for read, holders, keys, expected, differs, labels in groups
                   for label in compress(labels, map_(differs, map_(read, holders, keys), expected))]

    and changed names, e.g. "timing.Timer.call.__code__", what no longer is as snapshot() saw it."""
    return _groups, compress, map


def tampered():
    """Names of what changed since snapshot() (see watch()), checked from here."""
    groups, compress, map_ = watch()
    return sorted(set(label for read, holders, keys, expected, differs, labels in groups
                      for label in compress(labels, map_(differs, map_(read, holders, keys), expected))))


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
