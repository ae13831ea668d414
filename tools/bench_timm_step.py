#!/usr/bin/env python3
"""DeiT-S training step: vtrain vs timm in PyTorch (eager on the CPU; on a
GPU with --device cuda, optionally bf16 autocast and torch.compile).

Runs, one after the other in fresh processes with the same thread count:
  1. bench/bench_train_step (vtrain: forward with drop-path, label-smoothing
     CE, backward, AdamW, EMA) on synthetic 224x224 images;
  2. timm's deit_small_patch16_224 (drop_path 0.1) doing the same step:
     forward, LabelSmoothing CE (0.1), backward, torch.optim.AdamW (wd 0.05),
     and an EMA update of the weights, in fp32 eager mode.
Both report the median seconds per step over ITERS timed steps after one
warm-up, and their peak resident memory (ru_maxrss of the process). Prints
one JSON line per side and one with the ratio (vtrain images/s over
PyTorch's; >= 1.0 means vtrain is at least as fast).

usage: tools/bench_timm_step.py [--bin build/bench/bench_train_step]
       [--batch 32] [--iters 5] [--threads N (default: all cores)]
       [--device cpu|cuda] [--bf16] [--compile] [--compile-mode M]
       [--warmup 3] [--peak-tflops T]

On a GPU (--device cuda), one invocation runs, one after the other:
  1. bench_train_step's GPU mode (vtrain's own step under its training loop,
     CUDA-event timing; bench/step_bench.h) for Pre-Norm and SiameseNorm,
     bf16 (or fp32 without --bf16), same batch;
  2. timm's deit_small_patch16_224 with torch.compile (--compile; mode
     --compile-mode, default "default") and bf16 autocast (--bf16):
     synchronised CUDA steps, memory torch.cuda.max_memory_allocated, model
     FLOP utilisation 3 x forward FLOPs (2 x 4.6 G multiply-adds per image)
     over the GPU's dense bf16 peak (--peak-tflops; known for A100/H100/H200);
and prints one ratio line against the targets: vtrain (Pre-Norm, the same
model as timm's; SiameseNorm beside it) >= 1.5x timm's img/s and >= 40% MFU,
SiameseNorm / Pre-Norm step time <= 1.03 and saved activations <= 1.10.
The C++ program runs with VT_BENCH_LD_LIBRARY_PATH as its library path when
set (scripts/gpu_check.sh: the bundle's libraries; Python keeps its own).
Without the program (not built) timm's figures are printed alone.

torch.compile's mode: "default" (what timm's train.py --torchcompile uses).
"max-autotune-no-cudagraphs" benchmarks Triton GEMM configurations for every
shape at the first step, which takes minutes on a machine without a warm
cache, beyond the time scripts/gpu_check.sh gives the stage; pass it with
--compile-mode to measure it on its own.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

from step_bench_common import find_bin, run_vtrain_gpu, vs_torch_line


# DeiT-S forward: 4.6 G multiply-adds per 224 px image (timm/DeiT's "GFLOPs").
DEIT_S_FWD_FLOP = 2 * 4.6e9
# Dense bf16 tensor-core peaks, TFLOP/s (NVIDIA data sheets, SXM parts).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}


def peak_tflops(name, given):
    if given:
        return given
    for k, v in PEAK_BF16_TFLOPS.items():
        if k in name:
            return v
    return 0.0


def torch_side(batch, iters, threads, device="cpu", bf16=False, compile_=False, peak=0.0, mode="default", warmup=3):
    import torch
    import timm

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cuda = device == "cuda"
    model = timm.create_model("deit_small_patch16_224", pretrained=False, drop_path_rate=0.1).to(device)
    model.train()
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or n in ("pos_embed", "cls_token") else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=5e-4, betas=(0.9, 0.999), eps=1e-8)
    ema = [p.detach().clone() for p in model.parameters()]
    crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    fwd = torch.compile(model, mode=mode) if compile_ else model
    times = []
    warmup = warmup if cuda else 1  # torch.compile compiles in the first step
    for it in range(iters + warmup):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            loss = crit(fwd(x), y)
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_mul_(ema, 0.99996)
            torch._foreach_add_(ema, [p.detach() for p in model.parameters()], alpha=1 - 0.99996)
        if cuda:
            torch.cuda.synchronize()
        if it >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out = {"bench": "timm_train_step", "model": "deit_small_patch16_224", "batch": batch, "device": device,
           "bf16": bf16, "compile": compile_, "compile_mode": mode if compile_ else None,
           "threads": torch.get_num_threads(), "torch": torch.__version__,
           "timm": timm.__version__, "median_s": round(med, 4), "best_s": round(times[0], 4),
           "img_per_s": round(batch / med, 2), "peak_rss_mb": round(rss, 1)}
    if cuda:
        name = torch.cuda.get_device_name()
        peak = peak_tflops(name, peak)
        out.update(gpu=name, peak_gpu_mb=round(torch.cuda.max_memory_allocated() / 2**20, 1))
        if peak:
            out.update(mfu=round(batch / med * 3 * DEIT_S_FWD_FLOP / (peak * 1e12), 4), peak_tflops=peak)
    print(json.dumps(out), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin", default="", help="bench_train_step (default: build/bench/, else build-gpu/bench/)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (GPU)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="dense bf16 peak for the MFU (default: by GPU name)")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (see above)")
    ap.add_argument("--warmup", type=int, default=3, help="GPU: untimed steps first (compilation, plans)")
    ap.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.device == "cuda" and not a.torch_only:
        return gpu_main(a, root)
    if a.torch_only:
        torch_side(a.batch, a.iters, a.threads, a.device, a.bf16, a.compile, a.peak_tflops)
        return 0
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    a.bin = a.bin or find_bin(root, "bench_train_step")
    vt = subprocess.run([a.bin, "deit_small", str(a.batch), str(a.iters), "224", "pre"], env=env, check=True,
                        capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(vt, flush=True)
    pt = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-only", "--batch", str(a.batch),
                         "--iters", str(a.iters), "--threads", str(a.threads)], env=env, check=True,
                        capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(pt, flush=True)
    v, p = json.loads(vt), json.loads(pt)
    print(json.dumps({"bench": "vtrain_vs_timm", "batch": a.batch, "threads": a.threads,
                      "speed_ratio": round(v["img_per_s"] / p["img_per_s"], 3),
                      "memory_ratio": round(v["peak_rss_mb"] / p["peak_rss_mb"], 3)}))


def gpu_main(a, root):
    """vtrain's GPU step (pre, siamese), then timm + torch.compile, then the ratios against the targets."""
    vt = run_vtrain_gpu(a.bin or find_bin(root, "bench_train_step"), "vtrain_train_step", a.batch, a.iters,
                        a.warmup, a.bf16, a.peak_tflops)
    pt = torch_side(a.batch, a.iters, a.threads, "cuda", a.bf16, a.compile, a.peak_tflops, a.compile_mode, a.warmup)
    if not vt:  # [] not built (timm's figures alone), None failed
        return 0 if vt == [] else 1
    print(json.dumps(vs_torch_line("vtrain_vs_timm", vt, pt, 1.5, a, "timm deit_small_patch16_224")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
