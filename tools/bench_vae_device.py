#!/usr/bin/env python3
"""AutoencoderKL encode/decode images/s on a GPU: diffusers (PyTorch, same
GPU, same precision) against vtrain's bench/gpu/check_vae_device, in one
invocation (gpu_check's `vae` stage runs it when diffusers imports).

  python3 tools/bench_vae_device.py [--bin build-gpu/bench/check_vae_device]
        [--batch 16] [--size 256] [--repeats 2] [--compile]

Both sides: the sd-vae-ft structure (tools/vae_fixture.py's SD_VAE) with
random weights, random images in [-1, 1] of size x size, a batch of --batch;
timed (best of --repeats after a warm-up call): encode (the posterior, its
mean copied to the host) and decode of the means (the images copied to the
host), as check_vae_device does. Precisions: fp32 (TF32 off for cuDNN and
matmuls: torch.backends.cudnn.allow_tf32 = False, as vae.precision fp32),
tf32 (both allowed: DiT's sample.py, vae.precision's CUDA default) and bf16
(a copy of the model after vae.to(torch.bfloat16), the images converted to
bf16 on entry and the results to float32 before the copy to the host, as
vae.precision bf16 returns F32).
--compile also times torch.compile'd encode/decode and keeps PyTorch's
faster figure per call (the reference is PyTorch at its best). Prints one
JSON line per implementation and the ratios vtrain / diffusers.
Needs torch with CUDA and diffusers.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import time

import torch
from diffusers import AutoencoderKL

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vae_fixture import SD_VAE  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRECISIONS = ("fp32", "tf32", "bf16")


def best(f, repeats):
    f()
    times = []
    for _ in range(max(1, repeats)):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()  # ends with a copy to the host, which synchronises
        times.append(time.perf_counter() - t0)
    return min(times)


def diffusers_rates(a):
    torch.manual_seed(0)
    vae = AutoencoderKL(**SD_VAE).cuda().eval()
    x = (torch.rand(a.batch, 3, a.size, a.size, device="cuda") * 2 - 1).contiguous()
    out = {}
    for prec in PRECISIONS:
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        m, xin = vae, x
        if prec == "bf16":
            m, xin = copy.deepcopy(vae).to(torch.bfloat16), x.to(torch.bfloat16)
        variants = [("eager", m.encode, m.decode)]
        if a.compile:
            variants.append(("compile", torch.compile(m.encode), torch.compile(m.decode)))
        rates = {}
        with torch.inference_mode():
            mean = m.encode(xin).latent_dist.mean
            for name, enc, dec in variants:
                e = best(lambda: enc(xin).latent_dist.mean.float().cpu(), a.repeats)
                d = best(lambda: dec(mean).sample.float().cpu(), a.repeats)
                rates[name] = {"encode_images_per_s": a.batch / e, "decode_images_per_s": a.batch / d}
        out[prec] = {k: max(r[k] for r in rates.values()) for k in ("encode_images_per_s", "decode_images_per_s")}
        out[prec]["variants"] = rates
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-gpu", "bench", "check_vae_device"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_vae_device: torch sees no CUDA device")
    # vtrain first (its own process; VT_BENCH_LD_LIBRARY_PATH, when set, is
    # its library path: scripts/gpu_check.sh's bundle), then diffusers.
    env = dict(os.environ)
    if os.environ.get("VT_BENCH_LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["VT_BENCH_LD_LIBRARY_PATH"]
    line = subprocess.run([a.bin, str(a.batch), str(a.size), "1", "0", str(a.repeats)], check=True, env=env,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cpp = json.loads(line)
    print(line)
    ref = diffusers_rates(a)
    print(json.dumps({"impl": "diffusers", "batch": a.batch, "size": a.size, "torch": torch.__version__, **ref}))
    ratios = {p: {k.split("_")[0] + "_ratio": round(cpp[p][k] / ref[p][k], 3)
                  for k in ("encode_images_per_s", "decode_images_per_s")} for p in PRECISIONS}
    print(json.dumps({"bench": "vae_device_vs_diffusers", "vtrain_over_diffusers": ratios, "target": 1.2}))


if __name__ == "__main__":
    main()
