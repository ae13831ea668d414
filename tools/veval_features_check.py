#!/usr/bin/env python3
"""Independent check of `veval fid --features CKPT` with PyTorch and scipy.

Loads a vtrain checkpoint strictly into the PyTorch reference model
(tools/vtrain_check_timm_load.py: timm VisionTransformer for pre, the
released SiameseNorm DeiT structure for siamese), takes the input of the
head (the final normed class token) as the embedding of every image of two
folders (PIL preprocessing of that script = vtrain's DeiT eval transform),
and computes pytorch-fid's Frechet distance (float64 mean/covariance,
scipy.linalg.sqrtm, real part). The figure should equal veval's.

usage: tools/veval_features_check.py CKPT_DIR --scheme siamese --img 32 --patch 4 --dim 96 --depth 5
       --heads 3 --mlp-ratio 2 --classes 10 --samples DIR --ref DIR [--crop-pct 1.0] [--ema]
"""
import argparse
import os
import sys

import numpy as np
import torch
from scipy import linalg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vtrain_check_timm_load import add_model_args, image_folder, load_reference_model, preprocess  # noqa: E402


def features(model, root, img, crop_pct):
    files = [p for p, _ in image_folder(root)]
    got = []
    hook = model.head.register_forward_hook(lambda m, inp, out: got.append(inp[0].double().numpy()))
    with torch.no_grad():
        for s in range(0, len(files), 500):
            model(torch.stack([preprocess(p, img, crop_pct) for p in files[s:s + 500]]))
    hook.remove()
    return np.concatenate(got)


def fid(f1, f2):
    mu1, mu2 = f1.mean(0), f2.mean(0)
    s1, s2 = np.cov(f1, rowvar=False), np.cov(f2, rowvar=False)
    covmean = linalg.sqrtm(s1.dot(s2))
    if not np.isfinite(covmean).all():
        off = np.eye(s1.shape[0]) * 1e-6
        covmean = linalg.sqrtm((s1 + off).dot(s2 + off))
    covmean = covmean.real
    d = mu1 - mu2
    return d.dot(d) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean)


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--ref", required=True)
    a = ap.parse_args()
    model = load_reference_model(a)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    f1 = features(model, a.samples, a.img, a.crop_pct)
    f2 = features(model, a.ref, a.img, a.crop_pct)
    print(f"FID (PyTorch features, scipy sqrtm): {fid(f1, f2):.9f}  ({len(f1)} vs {len(f2)} images, {f1.shape[1]}-d)")


if __name__ == "__main__":
    sys.exit(main())
