#!/usr/bin/env python3
"""Loads a vtrain checkpoint into the PyTorch reference model and evaluates it.

  pre      -> timm.models.vision_transformer.VisionTransformer
  siamese  -> the released SiameseNorm DeiT structure (tools/vtrain_timm_fixture.py)

The state dict is loaded with strict=True (every name and shape must match),
then top-1 is measured on an ImageFolder split with a fixed preprocessing
(PIL RGB, resize shorter side to int(img / crop_pct) bicubic when the image
is not already img x img, center crop, /255, ImageNet Normalize), which
for 32x32 CIFAR-10 with crop_pct 1 is vtrain's eval transform exactly. The
figure should equal the top-1 vtrain logged for the same checkpoint.

usage: tools/vtrain_check_timm_load.py CKPT_DIR --scheme pre|siamese --img 32 --patch 4
       --dim 96 --depth 5 --heads 3 --mlp-ratio 2 --classes 10
       --data ../shared/data/cifar10/test [--limit N] [--ema]
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from safetensors.torch import load_file
from timm.models.vision_transformer import VisionTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vtrain_timm_fixture import SiameseDeiT  # noqa: E402

MEAN, STD = np.array((0.485, 0.456, 0.406), np.float32), np.array((0.229, 0.224, 0.225), np.float32)
EXTS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def image_folder(root):
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    samples = []
    for i, c in enumerate(classes):
        for dp, dns, fns in sorted(os.walk(os.path.join(root, c), followlinks=True)):
            dns.sort()
            for f in sorted(fns):
                if f.lower().endswith(EXTS):
                    samples.append((os.path.join(dp, f), i))
    return samples


def preprocess(path, img, crop_pct):
    im = Image.open(path).convert("RGB")
    if im.size != (img, img):
        size = int(img / crop_pct)
        w, h = im.size
        if w < h:
            im = im.resize((size, int(size * h / w)), Image.BICUBIC)
        else:
            im = im.resize((int(size * w / h), size), Image.BICUBIC)
        w, h = im.size
        top, left = int(round((h - img) / 2.0)), int(round((w - img) / 2.0))
        im = im.crop((left, top, left + img, top + img))
    a = (np.asarray(im, np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(a.transpose(2, 0, 1).copy())


def add_model_args(ap):
    """Arguments naming a vtrain checkpoint and the model it holds (DeiT-S by default)."""
    ap.add_argument("ckpt")
    ap.add_argument("--scheme", choices=["pre", "siamese"], required=True)
    ap.add_argument("--img", type=int, default=224)
    ap.add_argument("--patch", type=int, default=16)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--mlp-ratio", type=float, default=4.0)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--crop-pct", type=float, default=1.0)
    ap.add_argument("--ema", action="store_true")


def load_reference_model(a):
    """The PyTorch reference model of a vtrain checkpoint, loaded strictly, in eval mode."""
    if a.scheme == "pre":
        model = VisionTransformer(img_size=a.img, patch_size=a.patch, num_classes=a.classes, embed_dim=a.dim,
                                  depth=a.depth, num_heads=a.heads, mlp_ratio=a.mlp_ratio, qkv_bias=True,
                                  norm_layer=lambda d, **kw: nn.LayerNorm(d, eps=1e-6, **kw))
    else:
        model = SiameseDeiT(a.img, a.patch, a.dim, a.depth, a.heads, a.classes, a.mlp_ratio)
    sd = load_file(os.path.join(a.ckpt, "ema.safetensors" if a.ema else "model.safetensors"))
    model.load_state_dict(sd, strict=True)
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--data", required=True)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    model = load_reference_model(a)
    samples = image_folder(a.data)
    if a.limit:
        samples = [samples[i * len(samples) // a.limit] for i in range(a.limit)]
    correct = 0
    with torch.no_grad():
        for s in range(0, len(samples), 500):
            chunk = samples[s:s + 500]
            x = torch.stack([preprocess(p, a.img, a.crop_pct) for p, _ in chunk])
            pred = model(x).argmax(1)
            correct += sum(int(p) == y for p, (_, y) in zip(pred, chunk))
    print(f"{a.ckpt}: strict load into the PyTorch {a.scheme} model OK; top-1 {100.0 * correct / len(samples):.2f}% "
          f"on {len(samples)} images of {a.data}")


if __name__ == "__main__":
    sys.exit(main())
