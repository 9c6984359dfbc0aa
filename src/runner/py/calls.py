"""The one path every call of a model takes, in both workers: checking calls and timed calls run
the same code, so a candidate cannot behave one way while checked and another while timed.

Per call: fresh inputs (one case's values, or a variant of them, copied into one of several
rotating slots, so neither an input address nor a call count says what the values are), the
allocator poisoned, the cache flushed, the device synchronised, both clocks around the call, the
device synchronised again. After the clocks stop: the exact checks, the threads the call left
running, and a sample of every output at positions drawn from os.urandom *after* the call, which
the parent verifies against the reference for a random subset of calls. Checking calls also
write their whole outputs to a file for the parent to compare element by element.
"""
import base64
import os
import time

import torch

import tensor_io
from tensor_io import _TB, _Tensor, _isinstance, _type

_urandom = os.urandom
_open = open  # bound before candidate code runs: the /proc reads below decide background_thread
_listdir = os.listdir
_monotonic = time.monotonic
_sleep = time.sleep
_b64 = base64.b64encode
_b64decode = base64.b64decode
_data_ptr = _TB.data_ptr
_element_size = _TB.element_size
_stride = _TB.stride
_size = _TB.size
_copy = _TB.copy_
_index_select = _TB.index_select
_reshape = _TB.reshape
_no_grad = torch.no_grad
_randperm = torch.randperm
_randint = torch.randint
_rand = torch.rand
_exp = torch.exp
_Generator = torch.Generator

# Input buffer sets a model's calls rotate over (timed baselines rotate over as many).
SLOTS = 4


def variant(values, seed):
    """Case values made into a problem never computed before: each tensor permuted along its
    first dimension longer than 1, by a permutation drawn from `seed` (one per dimension length,
    so paired inputs stay paired), and each element of a floating tensor scaled by its own factor
    in [e^-0.5, e^0.5] (signs, zeros and so domains kept). One factor for a whole tensor left every
    row a scaled copy of a row the candidate saw while checked: a memo matching rows up to scale
    answered timed calls without the work. Factors are drawn on the tensor's device from `seed`,
    so both workers build the same values bit for bit."""
    if seed is None:
        return values
    gen = _Generator().manual_seed(int(seed))
    perms, out = {}, []
    for v in values:
        if _isinstance(v, _Tensor) and v.dim() >= 1:
            dim = next((d for d, n in enumerate(_size(v)) if n > 1), None)
            if dim is not None:
                n = _size(v)[dim]
                if n not in perms:
                    perms[n] = _randperm(n, generator=gen)
                v = _index_select(v, dim, perms[n].to(v.device))
        if _isinstance(v, _Tensor) and v.is_floating_point():
            at = _Generator(device=v.device).manual_seed(int(_randint(0, 2 ** 62, (), generator=gen)))
            factors = _exp(_rand(_size(v), generator=at, device=v.device, dtype=torch.float32) - 0.5)
            v = v * factors.to(v.dtype)
        out.append(v)
    return out


def extent(t):
    """[first byte, last byte + 1) that a strided tensor can touch."""
    if t.numel() == 0:
        return None
    start = _data_ptr(t)
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(_size(t), _stride(t)))
    return (start, start + span * _element_size(t))


def exact_checks(values, args, device):
    extents = [extent(a) for a in args if _isinstance(a, _Tensor)]
    checks = []
    for v in values:
        c = {"plain_tensor": _type(v) is _Tensor}
        if _isinstance(v, _Tensor):
            dev = v.device
            c["device"] = str(dev)
            c["device_ok"] = dev.type == device.type
            c["materialised"] = dev.type != "meta" and v.layout == torch.strided and \
                (v.numel() == 0 or _data_ptr(v) != 0)
            ext = extent(v) if c["materialised"] else None
            c["aliases_input"] = bool(ext) and any(e and ext[0] < e[1] and e[0] < ext[1] for e in extents)
        checks.append(c)
    return checks


def readable(value, check):
    return _isinstance(value, _Tensor) and check.get("materialised") and check.get("plain_tensor")


def sample(value, positions=None, count=1024):
    """Values of a tensor at `positions` (flat, C order); positions drawn from os.urandom when
    not given. Returned base64-encoded, raw little-endian, so NaN and Inf survive the trip."""
    n = value.numel()
    if positions is None:
        gen = _Generator().manual_seed(int.from_bytes(_urandom(8), "little") >> 1)
        positions = _randint(0, n, (min(count, n),), generator=gen) if n else torch.zeros(0, dtype=torch.int64)
    flat = _reshape(value, (-1,))
    picked = flat[positions.to(flat.device)] if n else flat
    return {"dtype": tensor_io.dtype_name(value.dtype), "numel": n,
            "positions": _b64(tensor_io.tensor_bytes(positions.to(torch.int64))).decode(),
            "values": _b64(tensor_io.tensor_bytes(picked)).decode()}


def decode_positions(text):
    raw = _b64decode(text)
    return torch.frombuffer(bytearray(raw), dtype=torch.int64) if raw else torch.zeros(0, dtype=torch.int64)


def _cpu_ticks(tid):
    try:
        with _open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


_TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")
_main_tid = str(os.getpid())


def _wait_ns(tid):
    """How long a thread has waited on the run queue, runnable but not running (the scheduler's
    count, the second schedstat field); 0 where the kernel keeps none."""
    try:
        with _open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


class IdleWatch:
    """CPU time that threads other than the main one burn while this worker waits for the
    parent (the reference is being timed meanwhile): a thread started at import that keeps the
    machine busy except during the candidate's own calls shows up here. On a loaded machine such
    a thread gets only its share of a CPU, and waits runnable for the rest: that wait is
    reported too, so that what it wanted, not what it got, can be judged."""

    def __init__(self):
        self.mark = None

    def _others(self):
        others = [t for t in threads() if t != _main_tid]
        return sum(_cpu_ticks(t) for t in others), sum(_wait_ns(t) for t in others)

    def stop(self):
        self.mark = (_monotonic(), *self._others())

    def since_stop(self):
        if self.mark is None:
            return None
        wall_ms = (_monotonic() - self.mark[0]) * 1000.0
        ticks, wait_ns = self._others()
        return {"idle_ms": wall_ms, "other_threads_cpu_ms": (ticks - self.mark[1]) * _TICK_MS,
                "other_threads_wait_ms": max(0, wait_ns - self.mark[2]) / 1e6}


def threads():
    try:
        return set(_listdir("/proc/self/task"))
    except OSError:
        return set()


def thread_name(tid):
    try:
        with _open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def _cpu_ns(tid):
    """A thread's CPU time in nanoseconds (the scheduler's own count), None once it has gone."""
    try:
        with _open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def _runnable(tid):
    try:
        with _open(f"/proc/self/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, IndexError):
        return False


def _new_threads(before, grace_s=0.02):
    """Threads started since `before` that are still there after a short grace: a joined thread
    can stay listed in /proc for a moment while it exits."""
    deadline = _monotonic() + grace_s
    while True:
        left = sorted(threads() - before)
        if not left or _monotonic() > deadline:
            return left
        _sleep(0.001)


class ThreadWatch:
    """Threads a call left behind, watched until the batch ends: one that works after the call
    returned (uses CPU while watched, or is runnable at the end) is work outside the timed
    interval. One that sleeps throughout is not: torch's own compile pool starts such a thread
    (inductor's idle timer) inside whichever call compiles after the pool went quiet. A sleeper
    that wakes to work later is the idle check's to catch, which measures every other thread's
    CPU while the worker waits. The watching happens after the batch's calls, so no call waits
    for it."""

    def __init__(self, watch_s=0.03, busy_ns=50_000):
        self.watch_s = watch_s
        self.busy_ns = busy_ns
        self.pending = []  # (record, {tid: CPU ns when noted}, when noted)

    def note(self, rec, tids):
        self.pending.append((rec, {t: _cpu_ns(t) for t in tids}, _monotonic()))

    def settle(self):
        """Decides every noted thread; records that left a working one get `new_threads`."""
        if not self.pending:
            return
        wait = self.pending[-1][2] + self.watch_s - _monotonic()
        if wait > 0:
            _sleep(wait)
        alive = threads()
        for rec, start, _ in self.pending:
            busy = []
            for t, then in start.items():
                now = _cpu_ns(t) if t in alive else None
                if now is None:
                    continue  # ended on its own while watched
                if then is None or now - then >= self.busy_ns or _runnable(t):
                    busy.append(thread_name(t))
            if busy:
                rec["new_threads"] = busy
        self.pending = []


class Runner:
    """Runs calls of one model on one device the same way whatever the call is for."""

    def __init__(self, device, timer, slots=SLOTS):
        self.device = device
        self.timer = timer
        self.slot_count = slots
        self.slots = {}
        self.thread_watch = ThreadWatch()

    def inputs(self, case_values, seed, slot):
        """The call's arguments: the case (or its variant) copied into slot `slot`'s buffers."""
        values = variant(case_values, seed)
        key = slot % self.slot_count
        bufs = self.slots.get(key)
        if bufs is None or len(bufs) != len(values) or any(
                _isinstance(b, _Tensor) != _isinstance(v, _Tensor) or
                (_isinstance(v, _Tensor) and (b.shape != v.shape or b.dtype != v.dtype)) for b, v in zip(bufs, values)):
            bufs = [v.clone() if _isinstance(v, _Tensor) else v for v in values]
            self.slots[key] = bufs
            return list(bufs)
        with _no_grad():
            for b, v in zip(bufs, values):
                if _isinstance(v, _Tensor):
                    _copy(b, v)
        return [b if _isinstance(b, _Tensor) else v for b, v in zip(bufs, values)]

    def poison(self, sizes):
        """Leaves all-ones blocks of the outputs' sizes in the CUDA caching allocator, so an
        output the candidate allocates but never writes reads as NaN, not as a lucky value."""
        if self.device.type != "cuda" or not sizes:
            return  # on the host glibc's MALLOC_PERTURB_ does this for every allocation
        blocks = [torch.full((max(n, 4) // 4,), -1, dtype=torch.int32, device=self.device) for n in sizes]
        del blocks

    def call(self, model, args, poison_sizes, samples):
        """One call: returns (record, outputs). The record has the clocks, the exact checks, the
        threads the call left behind and the sampled output values."""
        self.poison(poison_sizes)
        before = threads()
        dev_ms, host_ms, stream_ms, out = self.timer.call(model, args)
        values = tensor_io.as_list(out)
        rec = {"device_ms": dev_ms, "host_ms": host_ms, "stream_ms": stream_ms}
        checks = exact_checks(values, args, self.device)
        rec["checks"] = checks
        # Sampled before anything else: a thread still writing the output has had no extra time.
        if samples:
            rec["samples"] = [sample(v, count=samples) if readable(v, c) else None
                              for v, c in zip(values, checks)]
        left = _new_threads(before)
        if left:
            self.thread_watch.note(rec, left)
        return rec, values, checks
