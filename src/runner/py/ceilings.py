"""The two ceilings of a device, measured once: the matrix-multiply rate per dtype and the copy
bandwidth (bytes read plus bytes written), and the default math settings that pick between
float32 and TF32 rates. A task's speed-of-light time is the larger of its
FLOPs over the rate and its minimum bytes over the bandwidth (METHOD.md's "two numbers")."""
import torch

from timing import Timer


def _median_ms(timer, fn, args, calls):
    dev_ms, _, _ = timer.run(fn, [args], calls, settle=2)
    dev_ms.sort()
    return dev_ms[len(dev_ms) // 2]


def measure(device):
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    timer = Timer(dev)
    rates = {}
    n = 8192 if cuda else 1024
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        try:
            a = torch.randn(n, n, device=dev).to(dtype)  # random data: zeros run faster
            b = torch.randn(n, n, device=dev).to(dtype)
            ms = _median_ms(timer, torch.mm, (a, b), 10 if cuda else 3)
            rates[str(dtype).replace("torch.", "")] = 2 * n ** 3 / (ms * 1e-3)
        except RuntimeError:  # e.g. no half matmul on this CPU build
            continue
    size = (1 << 30) if cuda else (1 << 27)  # bytes per buffer
    src = torch.randn(size // 4, device=dev)
    dst = torch.empty_like(src)
    ms = _median_ms(timer, lambda s, d: d.copy_(s), (src, dst), 10 if cuda else 5)
    if cuda:
        # TF32: what cuDNN uses for float32 convolutions by default (torch.backends.cudnn.allow_tf32),
        # and float32 matmuls when a program turns it on.
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            a = torch.randn(n, n, device=dev)
            b = torch.randn(n, n, device=dev)
            rates["tfloat32"] = 2 * n ** 3 / (_median_ms(timer, torch.mm, (a, b), 10) * 1e-3)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
    return {"flops_per_s": rates, "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32), "bytes_per_s": 2 * size / (ms * 1e-3),
            "matmul_n": n, "copy_bytes": size}
