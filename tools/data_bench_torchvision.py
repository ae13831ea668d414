#!/usr/bin/env python3
"""torchvision/timm reference for bench/bench_data.cpp: the same DeiT train
transform (RandomResizedCrop 224 bicubic, flip, RandAugment
rand-m9-mstd0.5-inc1, ToTensor, Normalize, RandomErasing 0.25 pixel), without
RandAugment, and decode only (PIL open + convert('RGB')), through a
DataLoader (batch 50, shuffle) with 1 and 2 worker processes. One JSON line
per configuration.

  python3 tools/data_bench_torchvision.py [root] [epochs]
"""
import json
import os
import sys
import time

import torch
from PIL import Image, ImageOps
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from timm.data.auto_augment import rand_augment_transform
from timm.data.random_erasing import RandomErasing

# Pillow >= 10 rejects posterize(bits=0), which rand-m9 reaches at level 10;
# the Pillow of timm 0.3.2's era returned a black image.
_posterize = ImageOps.posterize
ImageOps.posterize = lambda img, bits: img.point([0] * 256 * len(img.getbands())) if bits < 1 else _posterize(img, bits)

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_transform(randaug):
    t = [transforms.RandomResizedCrop(224, interpolation=transforms.InterpolationMode.BICUBIC),
         transforms.RandomHorizontalFlip()]
    if randaug:
        hp = dict(translate_const=int(224 * 0.45), img_mean=tuple(round(255 * m) for m in MEAN),
                  interpolation=Image.BICUBIC)
        t.append(rand_augment_transform("rand-m9-mstd0.5-inc1", hp))
    t += [transforms.ToTensor(), transforms.Normalize(MEAN, STD),
          RandomErasing(0.25, mode="pixel", max_count=1, device="cpu")]
    return transforms.Compose(t)


def decode_only(img):
    return torch.zeros(1)


def init_worker(_):
    torch.set_num_threads(1)


def run(ds, workers, epochs):
    dl = DataLoader(ds, batch_size=50, shuffle=True, num_workers=workers, drop_last=True,
                    worker_init_fn=init_worker, persistent_workers=True, prefetch_factor=4)
    n = 0
    t0 = time.perf_counter()
    for _ in range(epochs):
        for x, _y in dl:
            n += x.shape[0]
    return n / (time.perf_counter() - t0)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "imagenet-samples")
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(1)
    cfgs = [("train_full", train_transform(True)), ("train_no_randaugment", train_transform(False)),
            ("decode_only", decode_only)]
    for name, tf in cfgs:
        ds = datasets.ImageFolder(root, transform=tf)
        for w in (1, 2):
            print(json.dumps({"bench": "data_torchvision", "config": name, "workers": w,
                              "images_per_s": round(run(ds, w, epochs), 1)}), flush=True)


if __name__ == "__main__":
    main()
