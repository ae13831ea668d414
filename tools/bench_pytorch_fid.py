#!/usr/bin/env python3
"""pytorch-fid's feature extraction throughput on CPU, same protocol as
bench/bench_inception.cpp: the first N images of IMAGE_DIR (recursive,
sorted) decoded once with PIL; timed: ToTensor -> InceptionV3([3]) (which
resizes to 299 bilinearly and scales to [-1, 1]) in batches; best of
REPEATS after one warm-up pass.

  python3 tools/bench_pytorch_fid.py WEIGHTS.safetensors IMAGE_DIR [N] [BATCH] [REPEATS]

WEIGHTS: the same safetensors state dict the C++ benchmark loads.
"""
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision.transforms.functional as TF
from PIL import Image
from safetensors.torch import load_file

import pytorch_fid.inception as pfi


def main():
    weights, image_dir = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    sd = load_file(weights)
    pfi.load_state_dict_from_url = lambda *a, **k: sd
    model = pfi.InceptionV3([3]).eval()
    files = sorted(f for f in glob.glob(os.path.join(image_dir, "**", "*"), recursive=True) if os.path.isfile(f))[:n]
    images = [Image.open(f).convert("RGB") for f in files]
    best = float("inf")
    with torch.no_grad():
        for r in range(repeats + 1):
            t0 = time.perf_counter()
            for s in range(0, len(images), batch):
                # Images differ in size: resize each like pytorch-fid's model does, then run the batch.
                xs = [torch.nn.functional.interpolate(TF.to_tensor(im)[None], size=(299, 299), mode="bilinear",
                                                      align_corners=False) for im in images[s:s + batch]]
                model(torch.cat(xs))[0]
            sec = time.perf_counter() - t0
            if r > 0:
                best = min(best, sec)
    print(json.dumps({"bench": "pytorch_fid_cpu", "images": len(images), "batch": batch,
                      "threads": torch.get_num_threads(), "seconds": round(best, 3),
                      "images_per_s": round(len(images) / best, 2)}))


if __name__ == "__main__":
    main()
