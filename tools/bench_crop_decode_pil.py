#!/usr/bin/env python3
"""References for bench/bench_crop_decode.cpp's `rrc` rows (host cost of
decode + RandomResizedCrop 224 + flip + normalize per image, one core), on
the original files and on copies shrunk so the longer side is <= 512
(Pillow bicubic, JPEG q90 4:2:0, in a temporary folder removed at exit), as
the C++ bench makes them:
  pil          torchvision's PIL path: RandomResizedCrop(224, BICUBIC) +
               RandomHorizontalFlip + ToTensor + Normalize
               (F.resized_crop is img.crop(box).resize(size, BICUBIC);
               ToTensor + Normalize with numpy, so torch is not needed);
  torchvision  (if torch/torchvision import) the tensor path DALI-less
               loaders use: torchvision.io.decode_jpeg, v2.RandomResizedCrop
               (bicubic, antialias) + RandomHorizontalFlip on uint8, then
               ToDtype + Normalize; torch.set_num_threads(1);
  dali         (if nvidia.dali imports) DALI's CPU pipeline, one thread,
               device_id=None: fn.decoders.image_random_crop (the crop
               decoded from the header's size, as data.decode: crop) +
               fn.resize(224, cubic) + fn.crop_mirror_normalize (random
               mirror, normalize, CHW float), batches of 50.
With --bin build/bench/bench_crop_decode it also runs the C++ bench's `rrc`
configurations in the same invocation and prints each reference's ratio
(C++ img/s / reference img/s). Prints one JSON line per measurement.

    python3 tools/bench_crop_decode_pil.py [root] [passes] [--bin PATH]

Needs Pillow and numpy; torch + torchvision and nvidia-dali-cuda130 (PyPI;
its CPU pipeline runs without a GPU) are optional.
"""
import glob
import json
import math
import subprocess
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


def run_torchvision(files, passes):
    import torch
    from torchvision.io import decode_jpeg, read_file, ImageReadMode
    from torchvision.transforms import v2, InterpolationMode
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t = v2.Compose([v2.RandomResizedCrop(224, interpolation=InterpolationMode.BICUBIC, antialias=True),
                    v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize(MEAN.tolist(), STD.tolist())])

    def one(p):
        return t(decode_jpeg(read_file(p), mode=ImageReadMode.RGB))
    for p in files:
        one(p)
    t0 = time.perf_counter()
    for _ in range(passes):
        for p in files:
            one(p)
    return passes * len(files) / (time.perf_counter() - t0)


def run_dali(files, passes, batch=50):
    from nvidia.dali import pipeline_def, fn, types

    @pipeline_def(batch_size=batch, num_threads=1, device_id=None, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(files=files, random_shuffle=False, name="r")
        img = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                            random_area=[0.08, 1.0], random_aspect_ratio=[3 / 4, 4 / 3])
        img = fn.resize(img, resize_x=224, resize_y=224, interp_type=types.INTERP_CUBIC)
        return fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW",
                                        mean=(MEAN * 255).tolist(), std=(STD * 255).tolist(),
                                        mirror=fn.random.coin_flip())
    p = pipe()
    p.build()
    iters = max(1, len(files) // batch)
    for _ in range(iters):  # warm: one epoch
        p.run()
    t0 = time.perf_counter()
    for _ in range(passes * iters):
        p.run()
    return passes * iters * batch / (time.perf_counter() - t0)


def cpp_rrc(binary, root, passes):
    """The C++ bench's rrc rows (data.decode full / crop), same images."""
    out = subprocess.run([binary, root, str(passes), "rrc"], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "config" in j:
            print(json.dumps(j))
            rows[j["config"]] = j.get("images_per_s_per_core") or j.get("images_per_s")
    return rows


def main():
    args = [a for a in sys.argv[1:]]
    binary = None
    if "--bin" in args:
        i = args.index("--bin")
        binary = args[i + 1]
        del args[i:i + 2]
    root = args[0] if len(args) > 0 and args[0] else "../shared/data/imagenet-samples"
    passes = int(args[1]) if len(args) > 1 else 2
    files = files_of(root)
    tmp = tempfile.mkdtemp(prefix="vt_bench_crop_pil_")
    runners = [("pil", run)]
    try:
        import torchvision  # noqa: F401
        runners.append(("torchvision", run_torchvision))
    except ImportError:
        print(json.dumps({"bench": "crop_decode_ref", "skipped": "torchvision (torch/torchvision not importable)"}))
    try:
        import nvidia.dali  # noqa: F401
        runners.append(("dali", run_dali))
    except ImportError:
        print(json.dumps({"bench": "crop_decode_ref", "skipped": "dali (nvidia.dali not importable)"}))
    try:
        small = shrink_copy(files, root, tmp)
        refs = {}
        for tag, fs in (("original", files), ("max512", small)):
            for name, f in runners:
                v = round(f(fs, passes), 1)
                refs[(tag, name)] = v
                print(json.dumps({"bench": "crop_decode_ref", "config": "rrc_" + tag + "_" + name, "threads": 1,
                                  "images": passes * len(fs), "images_per_s_per_core": v}))
        if binary:
            rows = cpp_rrc(binary, root, passes)
            for cfg, v in rows.items():
                if not cfg.startswith("rrc") or not v:
                    continue
                tag = "max512" if "512" in cfg else "original"
                ratios = {name: round(v / refs[(tag, name)], 2) for name, _ in runners if refs.get((tag, name))}
                print(json.dumps({"bench": "crop_decode_ref", "cpp_config": cfg, "cpp_images_per_s_per_core": v,
                                  "ratio_over": ratios}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
