#!/usr/bin/env python3
"""DeiT-S training step on CPU: vtrain vs timm in PyTorch eager (issue 5).

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
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def torch_side(batch, iters, threads):
    import torch
    import timm

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = timm.create_model("deit_small_patch16_224", pretrained=False, drop_path_rate=0.1)
    model.train()
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or n in ("pos_embed", "cls_token") else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=5e-4, betas=(0.9, 0.999), eps=1e-8)
    ema = [p.detach().clone() for p in model.parameters()]
    crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(0, 1000, (batch,))
    times = []
    for it in range(iters + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_mul_(ema, 0.99996)
            torch._foreach_add_(ema, [p.detach() for p in model.parameters()], alpha=1 - 0.99996)
        if it > 0:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"bench": "timm_train_step", "model": "deit_small_patch16_224", "batch": batch,
                      "threads": torch.get_num_threads(), "torch": torch.__version__, "timm": timm.__version__,
                      "median_s": round(med, 4), "best_s": round(times[0], 4),
                      "img_per_s": round(batch / med, 2), "peak_rss_mb": round(rss, 1)}))


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin", default=os.path.join(root, "build", "bench", "bench_train_step"))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_only:
        return torch_side(a.batch, a.iters, a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
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


if __name__ == "__main__":
    sys.exit(main())
