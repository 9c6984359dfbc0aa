"""Loads a Python file as a module and says precisely what went wrong when it cannot."""
import os
import sys
import traceback
import types


class LoadFailure(Exception):
    """A file could not be loaded. kind: 'syntax', 'build' (load_inline failed), 'import'."""

    def __init__(self, kind, path, line, message, trace=""):
        super().__init__(message)
        self.kind, self.path, self.line, self.message, self.trace = kind, path, line, message, trace

    def to_json(self):
        return {"kind": self.kind, "file": self.path, "line": self.line,
                "message": self.message, "traceback": self.trace[-4000:]}


def _line_in(path, tb):
    """Last line number of the traceback that falls inside `path`."""
    line = None
    for frame in traceback.extract_tb(tb):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            line = frame.lineno
    return line


def _is_build_failure(exc):
    text = str(exc)
    return ("Error building extension" in text or "ninja" in text.lower()
            or type(exc).__name__ == "CalledProcessError")


def load_module(path, name):
    path = os.path.abspath(path)
    try:
        with open(path, "r", encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise LoadFailure("import", path, None, f"cannot read {path}: {e}")
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:
        raise LoadFailure("syntax", path, e.lineno, f"{type(e).__name__}: {e.msg}")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException as e:  # SystemExit and KeyboardInterrupt from a module are failures too
        kind = "build" if _is_build_failure(e) else "import"
        raise LoadFailure(kind, path, _line_in(path, e.__traceback__),
                          f"{type(e).__name__}: {e}".strip()[:4000],
                          "".join(traceback.format_exception(type(e), e, e.__traceback__)))
    return module


def require(module, path, names):
    """Raises LoadFailure('import') naming the first of `names` the module lacks."""
    for n in names:
        if not callable(getattr(module, n, None)):
            raise LoadFailure("missing", path, None, f"{os.path.basename(path)} defines no `{n}`")
