#!/usr/bin/env python3
"""AutoencoderKL parity fixtures for vae/autoencoder_kl.h.

Builds diffusers' AutoencoderKL (PyPI `diffusers`) with seeded random weights
(the library's own initialisation, then every GroupNorm affine parameter
randomised so that the C++ side must apply them), runs real photos from
../shared/data/imagenet-samples, ADM center-cropped exactly as DiT's
center_crop_arr (train.py) and mapped to [-1, 1], through encode (the
posterior's mean and logvar, logvar clamped to [-30, 20]) and decode (of the
posterior mean) on the CPU. References are computed in float64 (the float32
weights and inputs, cast), since diffusers' own float32 decode already differs
from that by more than the 1e-4 tolerance at full size.

  python3 tools/vae_fixture.py --narrow
      -> tests/fixtures/vae/narrow/ (committed, < 1 MB): config.json,
         diffusion_pytorch_model.safetensors (block_out_channels [8, 8, 16, 16],
         4 groups, layers_per_block 2: the real structure, 8x downsampling),
         io.safetensors with "images" F32 [2, 3, 64, 64] in [-1, 1], "crops"
         U8 [2, 64, 64, 3] (the ADM crops), "mean", "logvar" [2, 4, 8, 8],
         "decoded" F32 [2, 3, 64, 64]
  python3 tools/vae_fixture.py --full DIR [--images 2]
      -> DIR/ with the same files for the sd-vae-ft-ema configuration
         (block_out_channels [128, 256, 512, 512], 32 groups; ~335 MB of
         weights, not committed) on 256x256 crops; run the C++ test with
         VT_VAE_FIXTURE=DIR (skipped otherwise).
"""
import argparse
import json
import os

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from diffusers import AutoencoderKL

from dit_crop_fixture import center_crop_arr  # DiT train.py's, verbatim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data", "imagenet-samples")
# Photos with a clear subject, in this order (a goldfish, a tench, ...).
IMAGES = ["n01443537", "n01440764", "n01484850", "n01491361"]

SD_VAE = dict(block_out_channels=[128, 256, 512, 512], layers_per_block=2, latent_channels=4, norm_num_groups=32,
              in_channels=3, out_channels=3, act_fn="silu",
              down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4)
NARROW = dict(SD_VAE, block_out_channels=[8, 8, 16, 16], norm_num_groups=4)


def load_crops(n, size):
    crops = []
    for wnid in IMAGES[:n]:
        d = os.path.join(SHARED, wnid)
        f = sorted(os.listdir(d))[0]
        crops.append(np.array(center_crop_arr(Image.open(os.path.join(d, f)).convert("RGB"), size)))
    return np.stack(crops)  # [N, S, S, 3] uint8


def build(cfg, seed):
    torch.manual_seed(seed)
    vae = AutoencoderKL(**cfg).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in vae.modules():
            if isinstance(m, torch.nn.GroupNorm):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=g))
                m.bias.copy_(0.4 * torch.rand(m.bias.shape, generator=g) - 0.2)
    return vae


def write(out, cfg, n, size, seed):
    os.makedirs(out, exist_ok=True)
    vae = build(cfg, seed)
    crops = load_crops(n, size)
    # transforms.ToTensor() then Normalize([0.5]*3, [0.5]*3), as DiT's train.py.
    images = torch.from_numpy(crops).permute(0, 3, 1, 2).float().div(255.0).sub(0.5).div(0.5).contiguous()
    sd = {k: v.contiguous() for k, v in vae.state_dict().items()}
    with torch.no_grad():
        post32 = vae.encode(images).latent_dist
        dec32 = vae.decode(post32.mean).sample
        # The references are diffusers' network evaluated in float64 on the
        # float32 weights and inputs: diffusers' own float32 decode of the
        # full-size VAE differs from it by ~1.6e-4 relative (summation order
        # over ~30 convolutions), more than the 1e-4 the C++ side must meet.
        vae64 = vae.double()
        p64 = vae64.encode(images.double()).latent_dist
        mean = p64.mean.float().contiguous()
        logvar = p64.logvar.float().contiguous()
        decoded = vae64.decode(mean.double()).sample.float().contiguous()

    def rel(a, b):
        return ((a - b).abs() / (b.abs() + b.pow(2).mean().sqrt())).max().item()
    save_file(sd, os.path.join(out, "diffusion_pytorch_model.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(dict(_class_name="AutoencoderKL", scaling_factor=0.18215, **cfg), f, indent=2)
        f.write("\n")
    save_file({"images": images, "crops": torch.from_numpy(crops).contiguous(), "mean": mean, "logvar": logvar,
               "decoded": decoded}, os.path.join(out, "io.safetensors"))
    print(f"{out}: {sum(v.numel() for v in sd.values())} parameters, mean std {mean.std():.3f}, "
          f"logvar range [{logvar.min():.2f}, {logvar.max():.2f}], decoded std {decoded.std():.3f}; "
          f"diffusers float32 vs float64: mean {rel(post32.mean, mean):.2e}, logvar {rel(post32.logvar, logvar):.2e}, "
          f"decoded {rel(dec32, decoded):.2e} (relative to |ref| + rms(ref))")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--narrow", action="store_true", help="write the committed narrow fixture")
    ap.add_argument("--full", metavar="DIR", help="write the sd-vae-configuration fixture to DIR")
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--size", type=int, default=None, help="crop size (default 64 narrow, 256 full)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if a.narrow:
        write(os.path.join(ROOT, "tests", "fixtures", "vae", "narrow"), NARROW, a.images, a.size or 64, a.seed)
    if a.full:
        write(a.full, SD_VAE, a.images, a.size or 256, a.seed)
    if not a.narrow and not a.full:
        ap.error("give --narrow and/or --full DIR")


if __name__ == "__main__":
    main()
