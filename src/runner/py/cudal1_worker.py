"""Worker process for cudal1: hosts either the trusted reference or the untrusted candidate.

Started by the C++ parent as `python3 cudal1_worker.py {reference|candidate} --device DEV`.
Requests arrive as JSON lines on fd 3, replies leave as JSON lines on fd 4. The parent decides
every verdict; this process only runs modules, measures, and writes values to files.
"""
import argparse
import ctypes
import json
import os
import sys
import time
import traceback

# Everything the protocol needs is bound before any candidate code can run.
_perf_ns = time.perf_counter_ns
_json_loads = json.loads
_write, _fdopen = os.write, os.fdopen

import torch  # noqa: E402

from candidate_host import CandidateHost  # noqa: E402
from reference_host import ReferenceHost  # noqa: E402

_HOSTS = {"reference": ReferenceHost, "candidate": CandidateHost}


def _private_fd(fd):
    """Moves a protocol pipe to a random high descriptor, so blind writes to low ones miss it."""
    import fcntl
    import random
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, random.SystemRandom().randrange(200, 900))
    os.close(fd)
    return new


def _reply_writer(nonce):
    fd = _private_fd(4)
    # An encoder of its own, reachable from nowhere else: json.dumps goes through json's shared
    # encoder, whose attributes anyone may replace.
    encode = json.JSONEncoder().encode

    def reply(obj):
        obj["nonce"] = nonce  # the parent drops any reply without the session's nonce
        data = (encode(obj) + "\n").encode()
        while data:
            n = _write(fd, data)
            data = data[n:]
    return reply


def _device_problem(device):
    """Why this interpreter's torch cannot run on `device`, or None. Checked before any task or
    candidate is loaded, so a CPU-only torch is never taken for a task that fails."""
    if not device.startswith("cuda"):
        return None
    where = {"python": sys.executable, "torch": torch.__version__, "cuda": torch.version.cuda}
    if torch.version.cuda is None and not getattr(torch.version, "hip", None):
        return dict(where, problem="no_cuda_build",
                    message=f"the torch of {sys.executable} (torch {torch.__version__}) has no CUDA: it is a CPU-only build")
    if not torch.cuda.is_available():
        return dict(where, problem="no_gpu",
                    message=f"the torch of {sys.executable} (torch {torch.__version__}, CUDA {torch.version.cuda}) sees no GPU")
    index = device.partition(":")[2]
    if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
        return dict(where, problem="no_such_gpu",
                    message=f"{device} asked for, but torch sees {torch.cuda.device_count()} GPU(s)")
    return None


def _with_device_memory(obj, device):
    """A failure that ran out of GPU memory without PyTorch's own account of it (a CUDA runtime
    error: `CUDA error: out of memory`) gets one, from the device itself: the parent tells a
    device other processes filled from a candidate that filled it (evaluator/infrastructure.h)."""
    message = obj.get("message")
    if (obj.get("ok") is not False or not device.startswith("cuda") or not isinstance(message, str)
            or "out of memory" not in message or "is free" in message):
        return obj
    try:
        free, total = torch.cuda.mem_get_info(torch.device(device))
        mine = torch.cuda.memory_reserved(torch.device(device))
    except Exception:  # noqa: BLE001 — a device that cannot even say is left unexplained
        return obj
    obj["message"] = (message + f"\n(device memory when it failed: {int(total)} bytes in all, {int(free)} free, "
                      f"{int(mine)} held by this process)")
    return obj


def _refuse_all(requests, reply, problem):
    """Answers every request with the environment's problem until the parent says exit."""
    for line in requests:
        try:
            op = _json_loads(line).get("op")
        except ValueError:
            op = None
        reply({"ok": True} if op == "exit" else dict(problem, ok=False, error="environment"))
        if op == "exit":
            break


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["reference", "candidate"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    if args.role == "reference":
        # Nobody else may read this process's memory (it holds the expected outputs).
        try:
            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        except Exception:
            pass

    requests = _fdopen(_private_fd(3), "r")
    nonce = requests.readline().strip()
    reply = _reply_writer(nonce)
    problem = _device_problem(args.device)
    if problem:
        _refuse_all(requests, reply, problem)
        sys.stdout.flush()
        os._exit(0)
    host = _HOSTS[args.role](args.device)

    for line in requests:
        try:
            req = _json_loads(line)
        except ValueError:
            reply({"ok": False, "error": "protocol", "message": "request is not JSON"})
            continue
        op = req.get("op")
        if op == "exit":
            reply({"ok": True})
            break
        try:
            answer = host.handle(op, req)
        except BaseException as e:  # noqa: BLE001 — any failure of hosted code is a reply
            answer = {"ok": False, "error": "exception", "type": type(e).__name__,
                      "message": str(e)[:4000],
                      "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))[-6000:]}
        reply(_with_device_memory(answer, args.device))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
