"""Where a candidate's GPU time goes: its kernels' names and times over a few calls, recorded by
torch.profiler in the candidate's process. The parent sorts them into the candidate's own
kernels, library kernels and PyTorch's (ATen) kernels, and flags a compiled kernel that never
runs (a decoy)."""
import torch


def profile(host, requested):
    try:
        from torch.profiler import ProfilerActivity, profile as _profile
    except ImportError as e:
        return {"ok": True, "skipped": f"torch.profiler unavailable: {e}"}
    if host.device.type != "cuda":
        return {"ok": True, "skipped": "attribution needs CUDA"}
    try:
        with _profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i, c in enumerate(requested):
                init, values = host.cases[c["case"]]
                args = host.runner.inputs(values, c.get("variant"), i)
                with torch.no_grad():
                    host.models[init](*args)
            torch.cuda.synchronize()
        kernels = {}
        for e in prof.events():
            if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
                continue
            k = kernels.setdefault(e.name, {"name": e.name[:300], "us": 0.0, "count": 0})
            k["us"] += float(e.time_range.elapsed_us())
            k["count"] += 1
    except Exception as e:  # noqa: BLE001 — no CUPTI, a profiler quirk: report, do not fail
        return {"ok": True, "skipped": f"profiler failed: {type(e).__name__}: {str(e)[:300]}"}
    return {"ok": True, "kernels": sorted(kernels.values(), key=lambda k: -k["us"])[:200],
            **host.candidate_report()}
