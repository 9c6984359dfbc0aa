#!/usr/bin/env python3
"""The trainer's training step in plain PyTorch from Python, to time against `cudal1 train
bench-step` (src/trainer/step_bench.h) on the same model, batch shapes and dtype.

The model math is src/trainer/model.cpp's, written out with torch functions: RMSNorm in float32,
rotary positions with float32 angles, grouped-query attention, SwiGLU, optional q/k/v (and llama
o_proj/MLP) biases, tied embeddings; LoRA as src/trainer/lora.cpp places and scales it (float32
factors, A Kaiming-uniform from a CPU generator seeded like the C++ one, B zero, alpha / r). The
step is the C++ one: log-probabilities of every token after the first (log_softmax in float32),
the SFT loss (per-row mean, then the batch mean), backward, gradient-norm clipping, AdamW with a
constant learning rate. Attention follows the same switch as the C++ build: the fused
scaled_dot_product_attention from torch 2.0 (causal, GQA inside it from 2.5), else matmul, mask and
softmax by hand; --attention forces one. Only torch is imported (no transformers, peft or
safetensors): weights are read from the .safetensors header and torch.frombuffer.

  bench:  train_step_torch.py --model DIR [--full | --lora-r 16] --batch 4 --seq 512 --steps 10
              --warmup 2 -d cuda --dtype bfloat16 [--json]
  check:  train_step_torch.py --model DIR --check DUMP [same options as the C++ run]
              replays `cudal1 train bench-step ... --dump DUMP` (its token ids and initial adapter)
              and compares every step's loss and gradient norm with the C++ ones
  check, running the C++ side too (CPU, float32; what the ctest does):
          train_step_torch.py --model DIR --cudal1 build/cudal1 [--batch 2 --seq 16 --steps 3]

Exit status: 0, 1 when the check finds a mismatch, 2 for bad arguments, 77 without torch.
"""

import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("train_step_torch.py: this Python has no torch", file=sys.stderr)
    sys.exit(77)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
HAS_SDPA = TORCH_VERSION >= (2, 0)
HAS_SDPA_GQA = TORCH_VERSION >= (2, 5)


def read_safetensors(path):
    """{name: tensor} and the metadata of one .safetensors file (CPU tensors, their file dtype)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())  # writable, so torch.frombuffer shares it without a warning
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        dtype = DTYPES[e["dtype"]]
        count = (end - begin) // torch.empty(0, dtype=dtype).element_size()
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=8 + n + begin) if count else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"])
    return out, meta


def read_weights(folder):
    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return read_safetensors(os.path.join(folder, "model.safetensors"))[0]
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    weights = {}
    for name in files:
        weights.update(read_safetensors(os.path.join(folder, name))[0])
    return weights


class Config:
    """The fields of config.json src/trainer/model_config.cpp interprets, with its defaults."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            j = json.load(f)
        self.model_type = j["model_type"]
        self.vocab_size = j["vocab_size"]
        self.hidden_size = j["hidden_size"]
        self.layers = j["num_hidden_layers"]
        self.heads = j["num_attention_heads"]
        self.kv_heads = j.get("num_key_value_heads") or self.heads
        self.head_dim = j.get("head_dim") or self.hidden_size // self.heads
        self.eps = j.get("rms_norm_eps", 1e-6)
        self.rope_theta = j.get("rope_theta", 10000.0)
        self.tied = j.get("tie_word_embeddings", False)
        if self.model_type == "qwen2":
            self.qkv_bias, self.o_bias, self.mlp_bias = True, False, False
        else:
            self.qkv_bias = self.o_bias = j.get("attention_bias", False)
            self.mlp_bias = j.get("mlp_bias", False)


LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


class Model:
    """The decoder as plain tensors under Hugging Face's names, plus LoRA factors."""

    def __init__(self, folder, dtype, device, attention):
        self.c = Config(folder)
        self.attention = attention
        self.w = {k: v.to(device=device, dtype=dtype) for k, v in read_weights(folder).items()}
        self.lora = {}  # linear name -> (A, B, scaling)
        c = self.c
        exponents = torch.arange(0, c.head_dim, 2, dtype=torch.int64).to(torch.float32) / c.head_dim
        self.inv_freq = (1.0 / torch.pow(torch.tensor(c.rope_theta, dtype=torch.float32), exponents)).to(device)

    def linear_names(self):
        """In the order of the C++ model's named_modules(), which apply_lora draws in."""
        names = [f"model.layers.{i}.{n}" for i in range(self.c.layers) for n in LINEARS]
        return names + ([] if self.c.tied else ["lm_head"])

    def add_lora(self, r, alpha, targets, seed, init=None):
        gen = torch.Generator().manual_seed(seed)
        for name in self.linear_names():
            if name.rsplit(".", 1)[-1] not in targets:
                continue
            out_f, in_f = self.w[name + ".weight"].shape
            bound = 1.0 / math.sqrt(in_f)
            a = torch.empty(r, in_f, dtype=torch.float32).uniform_(-bound, bound, generator=gen)
            if init is not None:
                a = init["init." + name + ".lora_A.weight"].to(torch.float32)
            device = self.w[name + ".weight"].device
            A = a.to(device).requires_grad_(True)
            B = torch.zeros(out_f, r, dtype=torch.float32, device=device, requires_grad=True)
            self.lora[name] = (A, B, alpha / r)
        return [t for A, B, _ in self.lora.values() for t in (A, B)]

    def linear(self, x, name):
        y = F.linear(x, self.w[name + ".weight"], self.w.get(name + ".bias"))
        if name in self.lora:
            A, B, scaling = self.lora[name]
            update = F.linear(F.linear(x.to(A.dtype), A), B) * scaling
            y = y + update.to(y.dtype)
        return y

    def rms_norm(self, x, name):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.c.eps)
        return self.w[name + ".weight"] * h.to(x.dtype)

    def attend(self, x, prefix, cos, sin):
        c = self.c
        B, T, _ = x.shape
        groups = c.heads // c.kv_heads
        q = self.linear(x, prefix + ".q_proj").view(B, T, c.heads, c.head_dim).transpose(1, 2)
        k = self.linear(x, prefix + ".k_proj").view(B, T, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.linear(x, prefix + ".v_proj").view(B, T, c.kv_heads, c.head_dim).transpose(1, 2)

        def rope(t):
            half = t.shape[-1] // 2
            return t * cos + torch.cat([-t[..., half:], t[..., :half]], -1) * sin

        q, k = rope(q), rope(k)
        if self.attention == "sdpa":  # every row full length: plain causal, as the C++ step passes no mask
            if HAS_SDPA_GQA:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                out = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1),
                                                     is_causal=True)
            out = out.transpose(1, 2).reshape(B, T, c.heads * c.head_dim)
        else:
            idx = torch.arange(T, device=x.device)
            allowed = (idx[None, :] <= idx[:, None])[None, None, None]  # [1, 1, 1, T, T]
            qg = q.reshape(B, c.kv_heads, groups * T, c.head_dim)
            scores = torch.matmul(qg, k.transpose(2, 3)) * (1.0 / math.sqrt(c.head_dim))
            scores = scores.view(B, c.kv_heads, groups, T, T).to(torch.float32)
            scores = scores.masked_fill(~allowed, float("-inf"))
            probs = torch.softmax(scores, -1).to(v.dtype).view(B, c.kv_heads, groups * T, T)
            out = torch.matmul(probs, v).view(B, c.heads, T, c.head_dim).transpose(1, 2).reshape(
                B, T, c.heads * c.head_dim)
        return self.linear(out, prefix + ".o_proj")

    def forward(self, ids):
        B, T = ids.shape
        dtype = self.w["model.embed_tokens.weight"].dtype
        pos = torch.arange(T, device=ids.device).unsqueeze(0).expand(B, T)
        freqs = pos.to(torch.float32).unsqueeze(-1) * self.inv_freq
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().to(dtype).unsqueeze(1), emb.sin().to(dtype).unsqueeze(1)
        h = F.embedding(ids, self.w["model.embed_tokens.weight"])
        for i in range(self.c.layers):
            p = f"model.layers.{i}"
            h = h + self.attend(self.rms_norm(h, p + ".input_layernorm"), p + ".self_attn", cos, sin)
            x = self.rms_norm(h, p + ".post_attention_layernorm")
            h = h + self.linear(F.silu(self.linear(x, p + ".mlp.gate_proj")) * self.linear(x, p + ".mlp.up_proj"),
                                p + ".mlp.down_proj")
        h = self.rms_norm(h, "model.norm")
        return self.linear(h, "lm_head") if not self.c.tied else F.linear(h, self.w["model.embed_tokens.weight"])


def step_loss(model, ids):
    """train.h's completion_logprobs with the whole row as completion, then objectives.h's sft_loss."""
    logits = model.forward(ids)
    lp = torch.log_softmax(logits[:, :-1].to(torch.float32), -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = torch.ones_like(lp)
    return -((lp * mask).sum(1) / mask.sum(1).clamp_min(1.0)).mean()


def run(args, dump=None):
    """The timed steps; with `dump` (a C++ run's), its token ids and initial adapter."""
    device = torch.device(args.device)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16}[args.dtype]
    attention = args.attention if args.attention != "auto" else ("sdpa" if HAS_SDPA else "matmul")
    model = Model(args.model, dtype, device, attention)
    parameters = sum(t.numel() for t in model.w.values())
    if args.full:
        trainable = [t.requires_grad_(True) for t in model.w.values()]
    else:
        trainable = model.add_lora(args.lora_r, args.lora_alpha, set(args.lora_targets.split(",")), args.seed, dump)
    optim_kw = {}
    if args.optimizer_impl in ("for-loop", "foreach"):
        optim_kw["foreach"] = args.optimizer_impl == "foreach"
    elif args.optimizer_impl == "fused":
        optim_kw["fused"] = True
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=args.weight_decay, **optim_kw)

    if dump is not None:
        ids = dump["input_ids"].to(torch.int64)
    else:
        ids = torch.randint(model.c.vocab_size, (args.batch, args.seq), generator=torch.Generator().manual_seed(args.seed))
    ids = ids.to(device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    losses, norms, step_ms = [], [], []
    for i in range(args.warmup + args.steps):
        sync()
        start = time.perf_counter()
        loss = step_loss(model, ids)
        loss.backward()
        if args.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(trainable, args.max_grad_norm)
        else:
            norm = torch.sqrt(sum(t.grad.detach().double().pow(2).sum() for t in trainable if t.grad is not None))
        optimizer.step()
        optimizer.zero_grad()
        sync()
        ms = (time.perf_counter() - start) * 1000.0
        if i >= args.warmup:
            step_ms.append(ms)
        losses.append(loss.item())
        norms.append(float(norm))
    mean = statistics.fmean(step_ms)
    return {
        "implementation": "python (PyTorch)",
        "torch_version": torch.__version__,
        "attention": attention,
        "device": str(device),
        "dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype],
        "mode": "full" if args.full else "lora",
        "lora_r": None if args.full else args.lora_r,
        "batch": ids.shape[0],
        "seq": ids.shape[1],
        "steps": args.steps,
        "warmup": args.warmup,
        "parameters": parameters,
        "trainable": sum(t.numel() for t in trainable),
        "median_ms": statistics.median(step_ms),
        "mean_ms": mean,
        "tokens_per_s": ids.numel() / (mean / 1000.0),
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "step_ms": step_ms,
        "optimizer_impl": args.optimizer_impl,
    }, losses, norms


def cpp_options(args):
    """The options of `cudal1 train bench-step` that make the same step."""
    opts = ["--model", args.model, "--batch", str(args.batch), "--seq", str(args.seq), "--steps", str(args.steps),
            "--warmup", str(args.warmup), "-d", args.device, "--dtype", args.dtype, "--lr", repr(args.lr),
            "--weight-decay", repr(args.weight_decay), "--max-grad-norm", repr(args.max_grad_norm),
            "--seed", str(args.seed)]
    if args.full:
        return opts + ["--full"]
    return opts + ["--lora-r", str(args.lora_r), "--lora-alpha", repr(args.lora_alpha),
                   "--lora-targets", args.lora_targets]


def check(args):
    tmp = None
    dump_path = args.check
    if args.cudal1:
        tmp = tempfile.TemporaryDirectory(prefix="cudal1-step-check-")
        dump_path = os.path.join(tmp.name, "dump.safetensors")
        cmd = [args.cudal1, "train", "bench-step"] + cpp_options(args) + ["--dump", dump_path, "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print("train_step_torch.py: " + " ".join(cmd) + " failed:\n" + done.stderr, file=sys.stderr)
            return 1
    dump, meta = read_safetensors(dump_path)
    cpp_losses = dump["loss"].tolist()
    cpp_norms = dump["grad_norm"].tolist()
    if len(cpp_losses) != args.warmup + args.steps:
        print(f"train_step_torch.py: the dump has {len(cpp_losses)} steps, these options make "
              f"{args.warmup + args.steps}: pass the C++ run's --steps and --warmup", file=sys.stderr)
        return 2
    result, losses, norms = run(args, dump)
    ok = True
    rows = []
    for i, (a, b, na, nb) in enumerate(zip(cpp_losses, losses, cpp_norms, norms)):
        loss_ok = abs(a - b) <= args.rtol * max(1.0, abs(a))
        norm_ok = abs(na - nb) <= 10 * args.rtol * max(1e-3, abs(na))
        ok = ok and loss_ok and norm_ok
        rows.append({"step": i, "cpp_loss": a, "python_loss": b, "cpp_grad_norm": na, "python_grad_norm": nb,
                     "ok": loss_ok and norm_ok})
    summary = {"match": ok, "rtol": args.rtol, "cpp_attention": meta.get("attention"),
               "cpp_torch_version": meta.get("torch_version"), "python_attention": result["attention"],
               "python_torch_version": result["torch_version"], "steps": rows}
    print(json.dumps(summary, indent=None if args.json else 2))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="Hugging Face model folder (config.json, safetensors)")
    p.add_argument("--full", action="store_true", help="train every weight instead of a LoRA adapter")
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--lora-alpha", type=float, default=32.0)
    p.add_argument("--lora-targets", default="q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-d", "--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "bf16", "float16"])
    p.add_argument("--attention", default="auto", choices=["auto", "sdpa", "matmul"],
                   help="auto: sdpa from torch 2.0, as the C++ build decides")
    p.add_argument("--optimizer-impl", default="for-loop", choices=["for-loop", "foreach", "fused"],
                   help="AdamW's implementation; for-loop is libtorch's C++ AdamW's way, one tensor at a time")
    p.add_argument("--check", metavar="DUMP", help="compare with a `cudal1 train bench-step --dump DUMP` run")
    p.add_argument("--cudal1", metavar="BIN", help="run BIN train bench-step with these options first, then --check")
    p.add_argument("--rtol", type=float, default=1e-4, help="--check's tolerance on each step's loss")
    p.add_argument("--json", action="store_true", help="one JSON object on one line")
    args = p.parse_args()
    if args.check or args.cudal1:
        sys.exit(check(args))
    result, _, _ = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps({k: v for k, v in result.items() if k != "step_ms"}, indent=2))


if __name__ == "__main__":
    main()
