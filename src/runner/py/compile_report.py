"""Tells the parent while torch.compile compiles inside the candidate's process.

Dynamo's tracing and inductor's Python-side work start no child process the parent could see, yet
may take tens of seconds on a big model. While a compilation runs, a marker file exists in the
worker's folder (COMPILING); the parent, which polls it, then lets a first call run up to the build
timeout instead of the call timeout (src/evaluator/call_budget.h).

The candidate can create the marker itself: that only gives it back the build timeout every first
call had before budgets were fitted, so the marker is a hint, never a verdict.
"""
import os
import sys

# In the worker's folder, bound at start-up: the candidate may change its working directory later.
COMPILING = os.path.join(os.getcwd(), ".cudal1_compiling")

_installed = False
_depth = 0


def _start(*args, **kwargs):
    global _depth
    _depth += 1
    if _depth == 1:
        try:
            open(COMPILING, "w").close()
        except OSError:
            pass


def _end(*args, **kwargs):
    global _depth
    _depth = max(0, _depth - 1)
    if _depth == 0:
        try:
            os.unlink(COMPILING)
        except OSError:
            pass


def install_if_dynamo_loaded():
    """Registers the callbacks once torch._dynamo is imported (torch 2.x; torch.compile imports it
    when a model is wrapped, before its first call compiles). Importing dynamo here would cost
    every candidate seconds at start-up, and torch 1.x has none."""
    global _installed
    if _installed or "torch._dynamo" not in sys.modules:
        return
    _installed = True
    try:
        from torch._dynamo.callback import callback_handler
        callback_handler.register_start_callback(_start)
        callback_handler.register_end_callback(_end)
    except Exception:  # noqa: BLE001 — a torch without these hooks: compiler processes still count
        pass
