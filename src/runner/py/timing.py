"""The timed loop both workers run: the same code times the reference and the candidate.

Each timed call: flush the cache with a write of at least twice its size, synchronise the whole
device, start both clocks, call, synchronise the whole device again (so work on every stream is
inside the interval), stop both clocks. Inputs rotate among several copies so no call is served
from a cache warmed by the previous one. In the candidate's worker, each call ends with a check
that the harness is still as it was before the candidate loaded (guard.watch()).
"""
import os
import time
from itertools import compress as _compress

import torch

_perf_ns = time.perf_counter_ns
_no_grad = torch.no_grad


def _cpu_cache_bytes():
    """Largest CPU cache size from sysfs, or 32 MiB."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    text = f.read().strip()
                mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
                best = max(best, int(text.rstrip("KMG")) * mult)
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return best or (32 << 20)


class Timer:
    def __init__(self, device):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or (64 << 20)
            self._sync = torch._C._cuda_synchronize
            self._event_type = getattr(torch._C, "_CudaEventBase", None)
            self._record = self._event_type.record if self._event_type else None
            self._elapsed = self._event_type.elapsed_time if self._event_type else None
            self._ev_sync = self._event_type.synchronize if self._event_type else None
        else:
            l2 = _cpu_cache_bytes()
            self._sync = lambda: None
        # Twice the largest cache, but on a host at most 64 MiB: a server's L3 (260 MiB on the CI
        # machine) is shared with other tenants and never ours to empty, and filling 520 MiB
        # took 70 ms before every call, whose jitter swamped the parent's clock over 0.4 ms calls.
        self.flush_bytes = max(2 * l2, 8 << 20) if self.cuda else min(max(2 * l2, 8 << 20), 64 << 20)
        self._flush_buf = torch.empty(self.flush_bytes // 4, dtype=torch.float32, device=self.device)
        self.watch = ((), _compress, map)  # guard.watch() once a candidate is loaded; nothing to check before
        self.violations = []  # the first changes a check found, named as guard names them

    def flush(self):
        self._flush_buf.fill_(1.0)

    def sync(self):
        self._sync()

    def call(self, fn, args):
        """Times one call of fn(*args) after a flush and a device-wide sync. Returns device ms
        (all streams, to a device-wide sync), host ms, stream ms (to the point where the current
        stream, which the caller's next op would wait on, reaches the end of the call), and the
        call's result. As soon as the clocks stop, checks the harness against the snapshot in
        `watch` and keeps the first changes found in `violations`."""
        # Bound before fn runs: what runs between its return and the check cannot then be a
        # replacement that puts the original back as it is called.
        groups, compress, map_ = self.watch
        perf, sync = _perf_ns, self._sync
        self.flush()
        sync()
        cuda = self.cuda and self._record
        record = self._record if cuda else None
        if cuda:
            stream = torch.cuda.current_stream(self.device)
            start = self._event_type(enable_timing=True)
            mid = self._event_type(enable_timing=True)
            end = self._event_type(enable_timing=True)
            record(start, stream)
        with _no_grad():
            t0 = perf()
            out = fn(*args)
            if cuda:
                record(mid, stream)
            sync()
            t1 = perf()
            if cuda:  # before the check: the device's clock stops with the host's
                record(end, stream)
            # Written out here, not called: see guard.watch().
            changed = [label for read, holders, keys, expected, differs, labels in groups
                       for label in compress(labels, map_(differs, map_(read, holders, keys), expected))]
        if changed and not self.violations:
            self.violations += changed
        host = (t1 - t0) / 1e6
        if not cuda:
            return host, host, host, out
        self._ev_sync(end)
        return float(self._elapsed(start, end)), host, float(self._elapsed(start, mid)), out

    def run(self, fn, buffers, calls, settle=0):
        """Times `calls` calls of fn(*buffers[i % len]), after `settle` untimed ones (the other
        worker's context just had the GPU, and switching back costs the first calls of a batch
        whichever side runs second). Returns per-call lists: device, host and stream ms."""
        dev_ms, host_ms, stream_ms = [], [], []
        for i in range(settle):
            self.call(fn, buffers[i % len(buffers)])
        for i in range(calls):
            dev, host, stream, out = self.call(fn, buffers[i % len(buffers)])
            del out
            dev_ms.append(dev)
            host_ms.append(host)
            stream_ms.append(stream)
        return dev_ms, host_ms, stream_ms
