#!/usr/bin/env python3
"""PIL reference for bench/bench_crop_decode.cpp's `rrc` rows: torchvision's
PIL path of RandomResizedCrop(224, BICUBIC) + RandomHorizontalFlip +
ToTensor + Normalize (F.resized_crop is img.crop(box).resize(size, BICUBIC);
ToTensor + Normalize done with numpy, as torch is not needed for the
pixels), one process, one thread, on the original files and on copies
shrunk so the longer side is <= 512 (Pillow bicubic, JPEG q90 4:2:0, in a
temporary folder removed at exit), as the C++ bench makes them. Prints one
JSON line per folder: images/s on one core.

    python3 tools/bench_crop_decode_pil.py [root] [passes]

Needs Pillow and numpy (pip install pillow numpy into a venv).
"""
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def rrc_params(w, h, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision.transforms.RandomResizedCrop.get_params (0.8)."""
    area = w * h
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        cw = int(round(math.sqrt(target * aspect)))
        ch = int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, h - ch), rng.randint(0, w - cw), ch, cw
    in_ratio = w / h
    if in_ratio < ratio[0]:
        cw, ch = w, int(round(w / ratio[0]))
    elif in_ratio > ratio[1]:
        ch, cw = h, int(round(h * ratio[1]))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def transform(path, rng):
    with open(path, "rb") as f:
        img = Image.open(f).convert("RGB")
    top, left, ch, cw = rrc_params(img.width, img.height, rng)
    img = img.crop((left, top, left + cw, top + ch)).resize((224, 224), Image.BICUBIC)
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    x = np.asarray(img, np.float32) / 255.0
    return ((x - MEAN) / STD).transpose(2, 0, 1)


def files_of(root):
    out = []
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            out += [os.path.join(p, f) for f in sorted(os.listdir(p))]
    return out


def shrink_copy(files, root, dst, max_side=512):
    out = []
    for p in files:
        img = Image.open(p).convert("RGB")
        k = max_side / max(img.size)
        if k < 1:
            img = img.resize((max(1, round(img.width * k)), max(1, round(img.height * k))), Image.BICUBIC)
        q = os.path.join(dst, os.path.relpath(p, root))
        os.makedirs(os.path.dirname(q), exist_ok=True)
        img.save(q, "JPEG", quality=90, subsampling=2)
        out.append(q)
    return out


def run(files, passes):
    rng = random.Random(0)
    for p in files:  # warm
        transform(p, rng)
    t0 = time.perf_counter()
    for _ in range(passes):
        for p in files:
            transform(p, rng)
    return passes * len(files) / (time.perf_counter() - t0)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else "../shared/data/imagenet-samples"
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    files = files_of(root)
    tmp = tempfile.mkdtemp(prefix="vt_bench_crop_pil_")
    try:
        small = shrink_copy(files, root, tmp)
        for tag, fs in (("original", files), ("max512", small)):
            print(json.dumps({"bench": "crop_decode_pil", "config": "rrc_" + tag + "_pil", "threads": 1,
                              "images": passes * len(fs), "images_per_s_per_core": round(run(fs, passes), 1)}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
