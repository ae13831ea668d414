#!/usr/bin/env python3
"""DiT-S/4 training step in PyTorch eager on CPU: the reference for
bench/bench_dit_step.cpp.

The model is the DiT repository's models.py (facebookresearch/DiT: DiTBlock,
TimestepEmbedder, LabelEmbedder, FinalLayer over timm's PatchEmbed,
Attention and Mlp), restated here; the step runs q_sample, forward, DiT's
learned-sigma loss (MSE + VB with detached eps, t = 0 NLL), backward, AdamW
(lr 1e-4, wd 0) and the EMA update, like train.py.

usage: python3 tools/bench_dit_step.py [--batch 32] [--iters 5] [--threads N]
       [--cpp build/bench_dit_step]   # also runs the C++ bench, prints the ratio
       [--model DiT-S/4|DiT-L/4] [--device cpu|cuda] [--bf16] [--compile]
       [--compile-mode M] [--warmup 3] [--bin build/bench/bench_dit_step]
Prints one JSON line (and the ratio line with --cpp).

On a GPU (--device cuda): synchronised CUDA step times, peak memory
(torch.cuda.max_memory_allocated) and model FLOP utilisation, 3 x forward
FLOPs over the dense bf16 peak (--peak-tflops; known for A100/H100/H200).
Forward FLOPs are 2 x DiT's published multiply-adds: DiT-S/4 1.41 G,
DiT-L/4 19.7 G per 32x32x4 latent (DiT paper, Table 4).
With --model DiT-L/4 it first runs bench_dit_step's GPU mode (dittrain's
own step under its training loop, CUDA-event timing; bench/step_bench.h)
for Pre-Norm and SiameseNorm at the same batch and precision, then
DiT's model, and prints one ratio line against the targets (vtrain
Pre-Norm >= 1.3x DiT + torch.compile; SiameseNorm / Pre-Norm step time
<= 1.03, saved activations <= 1.10; tools/step_bench_common.py). The
torch.compile mode defaults to "default" (tools/bench_timm_step.py says why).
"""
import argparse
import copy
import json
import math
import os
import subprocess
import sys
import time

from step_bench_common import find_bin, run_vtrain_gpu, vs_torch_line

try:
    import numpy as np
    import torch
    import torch.nn as nn
    from timm.models.vision_transformer import Attention, Mlp, PatchEmbed
except ImportError as e:
    sys.exit(f"bench_dit_step.py: needs torch, timm and numpy ({e})")


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden, freq=256):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(freq, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.freq = freq

    @staticmethod
    def timestep_embedding(t, dim, max_period=10000):
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, t):
        return self.mlp(self.timestep_embedding(t, self.freq))


class LabelEmbedder(nn.Module):
    def __init__(self, num_classes, hidden, dropout_prob):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + (dropout_prob > 0), hidden)
        self.num_classes, self.dropout_prob = num_classes, dropout_prob

    def forward(self, labels, train):
        if train and self.dropout_prob > 0:
            drop = torch.rand(labels.shape[0], device=labels.device) < self.dropout_prob
            labels = torch.where(drop, self.num_classes, labels)
        return self.embedding_table(labels)


class DiTBlock(nn.Module):
    def __init__(self, hidden, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(hidden, num_heads=heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.mlp = Mlp(in_features=hidden, hidden_features=int(hidden * mlp_ratio),
                       act_layer=lambda: nn.GELU(approximate="tanh"), drop=0)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x, c):
        sm, cm, gm, sp, cp, gp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gm.unsqueeze(1) * self.attn(modulate(self.norm1(x), sm, cm))
        return x + gp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), sp, cp))


class FinalLayer(nn.Module):
    def __init__(self, hidden, patch, out_ch):
        super().__init__()
        self.norm_final = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden, patch * patch * out_ch)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class DiT(nn.Module):
    def __init__(self, input_size=32, patch=4, in_ch=4, hidden=384, depth=12, heads=6, num_classes=1000):
        super().__init__()
        self.in_ch, self.out_ch, self.patch = in_ch, 2 * in_ch, patch
        self.x_embedder = PatchEmbed(input_size, patch, in_ch, hidden, bias=True)
        self.t_embedder = TimestepEmbedder(hidden)
        self.y_embedder = LabelEmbedder(num_classes, hidden, 0.1)
        n = self.x_embedder.num_patches
        self.pos_embed = nn.Parameter(torch.zeros(1, n, hidden), requires_grad=False)
        self.blocks = nn.ModuleList([DiTBlock(hidden, heads) for _ in range(depth)])
        self.final_layer = FinalLayer(hidden, patch, self.out_ch)

    def forward(self, x, t, y):
        x = self.x_embedder(x) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y, self.training)
        for b in self.blocks:
            x = b(x, c)
        x = self.final_layer(x, c)
        c_, p = self.out_ch, self.patch
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(x.shape[0], h, w, p, p, c_)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(x.shape[0], c_, h * p, h * p)


class Diffusion:
    def __init__(self):
        b = np.linspace(1e-4, 0.02, 1000, dtype=np.float64)
        ac = np.cumprod(1 - b)
        acp = np.append(1.0, ac[:-1])
        pv = b * (1 - acp) / (1 - ac)
        f = lambda a: torch.tensor(a, dtype=torch.float32)
        self.sqrt_ac, self.sqrt_1mac = f(np.sqrt(ac)), f(np.sqrt(1 - ac))
        self.sr, self.srm1 = f(np.sqrt(1 / ac)), f(np.sqrt(1 / ac - 1))
        self.c1, self.c2 = f(b * np.sqrt(acp) / (1 - ac)), f((1 - acp) * np.sqrt(1 - b) / (1 - ac))
        self.minlog, self.maxlog = f(np.log(np.append(pv[1], pv[1:]))), f(np.log(b))

    def to(self, device):
        for k, v in vars(self).items():
            setattr(self, k, v.to(device))
        return self

    def loss(self, model, x0, t, y, noise):
        e = lambda a: a[t].view(-1, 1, 1, 1)
        xt = e(self.sqrt_ac) * x0 + e(self.sqrt_1mac) * noise
        out = model(xt, t, y)
        C = x0.shape[1]
        eps, v = out[:, :C], out[:, C:]
        mse = ((noise - eps) ** 2).mean(dim=(1, 2, 3))
        fr = (v + 1) / 2
        lv = fr * e(self.maxlog) + (1 - fr) * e(self.minlog)
        x0h = e(self.sr) * xt - e(self.srm1) * eps.detach()
        mean = e(self.c1) * x0h + e(self.c2) * xt
        tm, tl = e(self.c1) * x0 + e(self.c2) * xt, e(self.minlog)
        kl = 0.5 * (-1 + lv - tl + torch.exp(tl - lv) + (tm - mean) ** 2 * torch.exp(-lv))
        kl = kl.mean(dim=(1, 2, 3)) / math.log(2)
        cdf = lambda z: 0.5 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
        inv = torch.exp(-0.5 * lv)
        cp, cm = cdf(inv * (x0 - mean + 1 / 255)), cdf(inv * (x0 - mean - 1 / 255))
        lp = torch.where(x0 < -0.999, torch.log(cp.clamp(min=1e-12)),
                         torch.where(x0 > 0.999, torch.log((1 - cm).clamp(min=1e-12)),
                                     torch.log((cp - cm).clamp(min=1e-12))))
        nll = -lp.mean(dim=(1, 2, 3)) / math.log(2)
        vb = torch.where(t == 0, nll, kl)
        return (mse + vb).mean()


# name: (DiT constructor arguments, forward multiply-adds per latent)
MODELS = {"DiT-S/4": (dict(hidden=384, depth=12, heads=6), 1.41e9),
          "DiT-L/4": (dict(hidden=1024, depth=24, heads=16), 19.7e9)}
# Dense bf16 tensor-core peaks, TFLOP/s (NVIDIA data sheets, SXM parts).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--cpp", default="")
    ap.add_argument("--model", default="DiT-S/4", choices=sorted(MODELS))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (GPU)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="dense bf16 peak for the MFU (default: by GPU name)")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode")
    ap.add_argument("--warmup", type=int, default=3, help="GPU: untimed steps first (compilation, plans)")
    ap.add_argument("--bin", default="", help="bench_dit_step for the GPU mode (default: build/bench/, else build-gpu/bench/)")
    a = ap.parse_args()
    vt = None
    if a.device == "cuda" and a.model == "DiT-L/4":  # the C++ GPU mode benchmarks DiT-L/4
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        vt = run_vtrain_gpu(a.bin or find_bin(root, "bench_dit_step"), "dit_step", a.batch, a.iters, a.warmup,
                            a.bf16, a.peak_tflops)
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev, cuda = a.device, a.device == "cuda"
    kwargs, macs = MODELS[a.model]
    model = DiT(**kwargs).to(dev)
    ema = copy.deepcopy(model).requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    diff = Diffusion().to(dev)
    B = a.batch
    x0, noise = torch.randn(B, 4, 32, 32, device=dev), torch.randn(B, 4, 32, 32, device=dev)
    t, y = torch.randint(0, 1000, (B,), device=dev), torch.randint(0, 1000, (B,), device=dev)
    model.train()
    fwd = torch.compile(model, mode=a.compile_mode) if a.compile else model
    secs = []
    warmup = a.warmup if cuda else 1  # torch.compile compiles in the first step
    for it in range(a.iters + warmup):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=a.bf16):
            loss = diff.loss(fwd, x0, t, y, noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9999).add_(pm, alpha=1 - 0.9999)
        if cuda:
            torch.cuda.synchronize()
        if it >= warmup:
            secs.append(time.perf_counter() - t0)
    med = sorted(secs)[len(secs) // 2]
    ref = {"bench": "dit_step_torch", "model": a.model, "batch": B, "device": dev, "bf16": a.bf16,
           "compile": a.compile, "compile_mode": a.compile_mode if a.compile else None,
           "threads": torch.get_num_threads(),
           "sec_per_step": round(med, 4), "img_per_s": round(B / med, 2), "torch": torch.__version__}
    if cuda:
        name = torch.cuda.get_device_name()
        peak = a.peak_tflops or next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), 0.0)
        ref.update(gpu=name, peak_gpu_mb=round(torch.cuda.max_memory_allocated() / 2**20, 1))
        if peak:
            ref.update(mfu=round(B / med * 3 * 2 * macs / (peak * 1e12), 4), peak_tflops=peak)
    print(json.dumps(ref), flush=True)
    if vt:
        print(json.dumps(vs_torch_line("dit_vs_torch", vt, ref, 1.3, a, "DiT " + a.model)), flush=True)
    elif vt is None and a.device == "cuda" and a.model == "DiT-L/4":
        return 1  # the C++ side failed (its message is above)
    if a.cpp:
        out = subprocess.run([a.cpp, str(B), str(a.iters)], capture_output=True, text=True, check=True).stdout
        cpp = json.loads(out.strip().splitlines()[-1])
        print(json.dumps({"ratio_cpp_over_torch": round(cpp["img_per_s"] / ref["img_per_s"], 3),
                          "cpp_img_per_s": cpp["img_per_s"], "torch_img_per_s": ref["img_per_s"]}))


if __name__ == "__main__":
    sys.exit(main())
