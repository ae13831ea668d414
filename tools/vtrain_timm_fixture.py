#!/usr/bin/env python3
"""Load-compatibility fixtures for vtrain's DeiT/ViT (timm state-dict names).

Builds two TINY classifiers in PyTorch with random (non-trivial) weights:

  pre      : timm.models.vision_transformer.VisionTransformer (Pre-Norm, timm's
             own code and state-dict names)
  siamese  : the released SiameseNorm DeiT (Qwen-Applications/SiameseNorm,
             deit-model-siamesenorm.py), reimplemented here from docs/design.md
             §3 on top of timm's Attention / Mlp modules, with the
             released state-dict names

and runs them (eval mode, float64) on a few real CIFAR-10 test images from
../shared/data/cifar10/test, preprocessed by a fixed transform applied here
(PIL decode -> RGB -> /255 -> Normalize(ImageNet mean/std); the images are
already 32x32). The C++ test loads the weights strictly into
vision/vit.h's VisionTransformer and compares logits.

Writes tests/fixtures/vision/vit_{pre,siamese}.safetensors with the model's
state dict plus "input.images" [B,3,32,32] and "output.logits" [B,K] (float32)
and metadata listing the image files.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from safetensors.torch import save_file
from timm.models.vision_transformer import Attention, Mlp, VisionTransformer

IMG, PATCH, DIM, DEPTH, HEADS, CLASSES, EPS = 32, 8, 32, 2, 2, 10, 1e-6
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "cifar10", "test")
FILES = ["airplane/0000.jpg", "cat/0001.jpg", "ship/0002.jpg", "frog/0003.jpg"]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def load_images():
    out = []
    for f in FILES:
        a = np.asarray(Image.open(os.path.join(DATA, f)).convert("RGB"), dtype=np.float32) / 255.0
        assert a.shape == (IMG, IMG, 3), (f, a.shape)
        a = (a - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
        out.append(torch.from_numpy(a.transpose(2, 0, 1).copy()))
    return torch.stack(out).float()


def ln(dim=DIM):
    return nn.LayerNorm(dim, eps=EPS)


class SiameseBlock(nn.Module):
    """One block of deit-model-siamesenorm.py (docs/design.md §3)."""

    def __init__(self, l, dim=DIM, heads=HEADS, mlp_ratio=4.0):
        super().__init__()
        self.post_norm1, self.pre_norm1, self.input_norm1 = ln(dim), ln(dim), ln(dim)
        self.attn = Attention(dim, num_heads=heads, qkv_bias=True)
        self.post_norm2, self.pre_norm2, self.input_norm2 = ln(dim), ln(dim), ln(dim)
        self.mlp = Mlp(dim, hidden_features=int(dim * mlp_ratio))  # nn.GELU: exact erf
        self.c = math.sqrt(2 * (l + 1))

    def forward(self, xy):
        x, y = xy
        for k, F in ((1, self.attn), (2, self.mlp)):
            x = getattr(self, f"post_norm{k}")(x)
            z = getattr(self, f"input_norm{k}")(x + getattr(self, f"pre_norm{k}")(y))
            o = F(z)
            x, y = x + o / self.c, y + o
        return x, y


class SiameseDeiT(nn.Module):
    def __init__(self, img=IMG, patch=PATCH, dim=DIM, depth=DEPTH, heads=HEADS, classes=CLASSES, mlp_ratio=4.0):
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, dim, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        self.blocks = nn.ModuleList([SiameseBlock(l, dim, heads, mlp_ratio) for l in range(depth)])
        # As released: pre_norm is applied to x, post_norm to y.
        self.pre_norm, self.post_norm, self.final_norm = ln(dim), ln(dim), ln(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        h = self.patch_embed.proj(img).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls_token.expand(h.shape[0], -1, -1), h], dim=1) + self.pos_embed
        x, y = h, h
        for b in self.blocks:
            x, y = b((x, y))
        out = self.final_norm(self.pre_norm(x) + self.post_norm(y))
        return self.head(out[:, 0])


def randomize(model, gen):
    # Every parameter random and away from its init, so a swapped or
    # transposed tensor cannot go unnoticed.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 1
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(max(fan_in, 1)))
        for name in ("cls_token", "pos_embed"):
            getattr(model, name).mul_(10.0)  # std ~0.3 after / sqrt(fan_in)


def main():
    out_dir = os.path.join(ROOT, "tests", "fixtures", "vision")
    os.makedirs(out_dir, exist_ok=True)
    images = load_images()
    gen = torch.Generator().manual_seed(1234)
    models = {
        "pre": VisionTransformer(img_size=IMG, patch_size=PATCH, in_chans=3, num_classes=CLASSES,
                                 embed_dim=DIM, depth=DEPTH, num_heads=HEADS, mlp_ratio=4.0, qkv_bias=True,
                                 norm_layer=lambda d, **kw: nn.LayerNorm(d, eps=EPS, **kw)),
        "siamese": SiameseDeiT(),
    }
    for scheme, model in models.items():
        randomize(model, gen)
        model.eval()
        # Round weights to float32 first, then run in float64 for a precise reference.
        sd = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
        model.double()
        with torch.no_grad():
            logits = model(images.double()).float()
        tensors = dict(sd)
        tensors["input.images"] = images.contiguous()
        tensors["output.logits"] = logits.contiguous()
        meta = {"files": ",".join(FILES), "img": str(IMG), "patch": str(PATCH), "dim": str(DIM),
                "depth": str(DEPTH), "heads": str(HEADS), "classes": str(CLASSES), "scheme": scheme}
        path = os.path.join(out_dir, f"vit_{scheme}.safetensors")
        save_file(tensors, path, metadata=meta)
        print(path, "params:", len(sd), "logits[0,:3]:", logits[0, :3].tolist())


if __name__ == "__main__":
    sys.exit(main())
