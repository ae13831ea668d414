#!/usr/bin/env python3
"""Converts pytorch-fid's FID Inception weights to safetensors for veval.

  python3 tools/convert_inception.py pt_inception-2015-12-05-6726825d.pth \
      [--out ~/.cache/vtrain/pt_inception-2015-12-05.safetensors]

The .pth is pytorch-fid's release (FID_WEIGHTS_URL in
pytorch_fid/inception.py); fetch it yourself, veval never downloads. Tensor
names are kept (the inner Inception3 state dict: "Conv2d_1a_3x3.conv.weight",
...); values are stored as float32; num_batches_tracked is dropped.
"""
import argparse
import os

import torch
from safetensors.torch import save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pth")
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/vtrain/pt_inception-2015-12-05.safetensors"))
    a = ap.parse_args()
    sd = torch.load(a.pth, map_location="cpu", weights_only=True)
    out = {k: v.float().contiguous() for k, v in sd.items() if not k.endswith("num_batches_tracked")}
    if "Conv2d_1a_3x3.conv.weight" not in out or "Mixed_7c.branch_pool.bn.running_var" not in out:
        raise SystemExit(f"{a.pth}: not pytorch-fid's Inception state dict")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    save_file(out, a.out)
    print(f"wrote {a.out} ({len(out)} tensors)")


if __name__ == "__main__":
    main()
