#!/usr/bin/env python3
"""AutoencoderKL encode/decode throughput: diffusers (PyTorch eager, CPU)
against build/bench/bench_vae on the same machine, images and threads.

  python3 tools/bench_vae_diffusers.py VAE_DIR [--images DIR] [--n 4] [--size 256]
        [--repeats 2] [--threads 2] [--bin build/bench/bench_vae]

VAE_DIR: a diffusers AutoencoderKL folder (e.g. tools/vae_fixture.py --full
DIR). The first N files of the image folder (recursive, sorted, as the C++
program) are center-cropped as DiT's center_crop_arr and mapped to [-1, 1];
timed (best of --repeats after a warm-up): vae.encode(x) (the posterior) and
vae.decode(mean). Prints one JSON line per implementation and the ratios
vtrain / diffusers (images/s).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image
from diffusers import AutoencoderKL

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vae_fixture import SHARED, center_crop_arr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def best(f, repeats):
    f()
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vae")
    ap.add_argument("--images", default=SHARED)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "bench_vae"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.images) for f in fs if f.lower().endswith(EXTS))
    crops = np.stack([np.array(center_crop_arr(Image.open(f).convert("RGB"), a.size)) for f in files[:a.n]])
    x = torch.from_numpy(crops).permute(0, 3, 1, 2).float().div(255.0).sub(0.5).div(0.5).contiguous()
    vae = AutoencoderKL.from_pretrained(a.vae).eval()
    out = {}
    with torch.inference_mode():
        out["encode_s"] = best(lambda: out.__setitem__("post", vae.encode(x).latent_dist), a.repeats)
        mean = out.pop("post").mean
        out["decode_s"] = best(lambda: vae.decode(mean), a.repeats)
    ref = {"impl": "diffusers", "images": a.n, "size": a.size, "threads": a.threads,
           "encode_img_s": a.n / out["encode_s"], "decode_img_s": a.n / out["decode_s"], **out}
    print(json.dumps(ref))
    if a.bin and os.path.exists(a.bin):
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
        line = subprocess.run([a.bin, a.vae, a.images, str(a.n), str(a.size), str(a.repeats)], env=env,
                              check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(line)
        cpp = json.loads(line)
        print(json.dumps({"encode_ratio": cpp["encode_img_s"] / ref["encode_img_s"],
                          "decode_ratio": cpp["decode_img_s"] / ref["decode_img_s"]}))


if __name__ == "__main__":
    main()
