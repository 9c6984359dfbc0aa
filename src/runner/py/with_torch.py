"""For the workers' tests, which ctest runs with whatever python3 it finds first: one without
torch re-executes the test under the interpreter the evaluator would use (CUDAL1_PYTHON, else
/usr/bin/python3), the same test and arguments."""
import os
import sys


def ensure():
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    for python in filter(None, [os.environ.get("CUDAL1_PYTHON"), "/usr/bin/python3"]):
        if os.access(python, os.X_OK) and os.path.realpath(python) != os.path.realpath(sys.executable):
            os.execv(python, [python] + sys.argv)
    raise ImportError("no Python with torch: set CUDAL1_PYTHON to one")
