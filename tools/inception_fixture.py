#!/usr/bin/env python3
"""Inception parity fixtures for eval/inception.h.

Builds pytorch-fid's FID Inception (pytorch_fid.inception.InceptionV3 with
fid_inception_v3(), from PyPI) with seeded random weights instead of the
released ones: pytorch-fid's own weight download is redirected to a random
state dict (conv weights He-normal, BatchNorm affine random, running stats
calibrated on the fixture images so activations stay O(1); all variances
positive). The same topology with every channel count divided by k is built
from pytorch-fid's block classes (their forward methods, unchanged) and, for
k = 1, checked to reproduce pytorch-fid's network exactly.

  python3 tools/inception_fixture.py --small
      -> tests/fixtures/eval/inception_w16.safetensors (k = 16, < 1 MB,
         committed): weights, "images" U8 [N, H, W, 3], "features" F32 [N, 128]
  python3 tools/inception_fixture.py --full DIR
      -> DIR/weights.safetensors (k = 1, ~95 MB) and DIR/fixture.safetensors
         ("images", "features" [N, 2048]); run the C++ test with
         VT_INCEPTION_FIXTURE=DIR (skipped otherwise).

Images: real photos from ../shared/data/imagenet-samples, decoded by PIL
(RGB) and resized (PIL bicubic) to a common, non-square size.
"""
import argparse
import glob
import os

import numpy as np
import torch
import torch.nn as nn
import torchvision
from PIL import Image
from safetensors.torch import save_file

import pytorch_fid.inception as pfi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data", "imagenet-samples")
BasicConv2d = torchvision.models.inception.BasicConv2d


def make_block(cls, convs):
    """An instance of pytorch-fid's block class `cls` holding `convs`."""
    m = cls.__new__(cls)
    nn.Module.__init__(m)
    for name, conv in convs.items():
        setattr(m, name, conv)
    return m


def reduced_inception(d):
    """torchvision Inception3 topology (no aux, 1008 classes) with channels / d,
    using pytorch-fid's FID block forwards."""
    C = lambda ci, co, **kw: BasicConv2d(ci, co, **kw)  # noqa: E731

    def A(cin, pool):
        return make_block(pfi.FIDInceptionA, dict(
            branch1x1=C(cin, 64 // d, kernel_size=1), branch5x5_1=C(cin, 48 // d, kernel_size=1),
            branch5x5_2=C(48 // d, 64 // d, kernel_size=5, padding=2),
            branch3x3dbl_1=C(cin, 64 // d, kernel_size=1),
            branch3x3dbl_2=C(64 // d, 96 // d, kernel_size=3, padding=1),
            branch3x3dbl_3=C(96 // d, 96 // d, kernel_size=3, padding=1),
            branch_pool=C(cin, pool // d, kernel_size=1)))

    def Cb(c7):
        cin, c7 = 768 // d, c7 // d
        return make_block(pfi.FIDInceptionC, dict(
            branch1x1=C(cin, 192 // d, kernel_size=1), branch7x7_1=C(cin, c7, kernel_size=1),
            branch7x7_2=C(c7, c7, kernel_size=(1, 7), padding=(0, 3)),
            branch7x7_3=C(c7, 192 // d, kernel_size=(7, 1), padding=(3, 0)),
            branch7x7dbl_1=C(cin, c7, kernel_size=1),
            branch7x7dbl_2=C(c7, c7, kernel_size=(7, 1), padding=(3, 0)),
            branch7x7dbl_3=C(c7, c7, kernel_size=(1, 7), padding=(0, 3)),
            branch7x7dbl_4=C(c7, c7, kernel_size=(7, 1), padding=(3, 0)),
            branch7x7dbl_5=C(c7, 192 // d, kernel_size=(1, 7), padding=(0, 3)),
            branch_pool=C(cin, 192 // d, kernel_size=1)))

    def E(cls, cin):
        return make_block(cls, dict(
            branch1x1=C(cin, 320 // d, kernel_size=1), branch3x3_1=C(cin, 384 // d, kernel_size=1),
            branch3x3_2a=C(384 // d, 384 // d, kernel_size=(1, 3), padding=(0, 1)),
            branch3x3_2b=C(384 // d, 384 // d, kernel_size=(3, 1), padding=(1, 0)),
            branch3x3dbl_1=C(cin, 448 // d, kernel_size=1),
            branch3x3dbl_2=C(448 // d, 384 // d, kernel_size=3, padding=1),
            branch3x3dbl_3a=C(384 // d, 384 // d, kernel_size=(1, 3), padding=(0, 1)),
            branch3x3dbl_3b=C(384 // d, 384 // d, kernel_size=(3, 1), padding=(1, 0)),
            branch_pool=C(cin, 192 // d, kernel_size=1)))

    B = make_block(torchvision.models.inception.InceptionB, dict(
        branch3x3=C(288 // d, 384 // d, kernel_size=3, stride=2),
        branch3x3dbl_1=C(288 // d, 64 // d, kernel_size=1),
        branch3x3dbl_2=C(64 // d, 96 // d, kernel_size=3, padding=1),
        branch3x3dbl_3=C(96 // d, 96 // d, kernel_size=3, stride=2)))
    D = make_block(torchvision.models.inception.InceptionD, dict(
        branch3x3_1=C(768 // d, 192 // d, kernel_size=1),
        branch3x3_2=C(192 // d, 320 // d, kernel_size=3, stride=2),
        branch7x7x3_1=C(768 // d, 192 // d, kernel_size=1),
        branch7x7x3_2=C(192 // d, 192 // d, kernel_size=(1, 7), padding=(0, 3)),
        branch7x7x3_3=C(192 // d, 192 // d, kernel_size=(7, 1), padding=(3, 0)),
        branch7x7x3_4=C(192 // d, 192 // d, kernel_size=3, stride=2)))
    net = nn.Module()
    net.Conv2d_1a_3x3 = C(3, 32 // d, kernel_size=3, stride=2)
    net.Conv2d_2a_3x3 = C(32 // d, 32 // d, kernel_size=3)
    net.Conv2d_2b_3x3 = C(32 // d, 64 // d, kernel_size=3, padding=1)
    net.Conv2d_3b_1x1 = C(64 // d, 80 // d, kernel_size=1)
    net.Conv2d_4a_3x3 = C(80 // d, 192 // d, kernel_size=3)
    net.Mixed_5b, net.Mixed_5c, net.Mixed_5d = A(192 // d, 32), A(256 // d, 64), A(288 // d, 64)
    net.Mixed_6a = B
    net.Mixed_6b, net.Mixed_6c, net.Mixed_6d, net.Mixed_6e = Cb(128), Cb(160), Cb(160), Cb(192)
    net.Mixed_7a = D
    net.Mixed_7b = E(pfi.FIDInceptionE_1, 1280 // d)
    net.Mixed_7c = E(pfi.FIDInceptionE_2, 2048 // d)
    net.fc = nn.Linear(2048 // d, 1008)
    return net


def wrap_like_pytorch_fid(inc):
    """pytorch_fid.inception.InceptionV3(output_blocks=[3]) around `inc`."""
    m = pfi.InceptionV3.__new__(pfi.InceptionV3)
    nn.Module.__init__(m)
    m.resize_input, m.normalize_input, m.output_blocks, m.last_needed_block = True, True, [3], 3
    mp = lambda: nn.MaxPool2d(kernel_size=3, stride=2)  # noqa: E731
    m.blocks = nn.ModuleList([
        nn.Sequential(inc.Conv2d_1a_3x3, inc.Conv2d_2a_3x3, inc.Conv2d_2b_3x3, mp()),
        nn.Sequential(inc.Conv2d_3b_1x1, inc.Conv2d_4a_3x3, mp()),
        nn.Sequential(inc.Mixed_5b, inc.Mixed_5c, inc.Mixed_5d, inc.Mixed_6a, inc.Mixed_6b, inc.Mixed_6c,
                      inc.Mixed_6d, inc.Mixed_6e),
        nn.Sequential(inc.Mixed_7a, inc.Mixed_7b, inc.Mixed_7c, nn.AdaptiveAvgPool2d((1, 1)))])
    return m


def randomize(net, images01, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=g))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=g))
                m.momentum = None  # cumulative average: running stats = batch stats
                m.reset_running_stats()
            elif isinstance(m, nn.Linear):
                m.weight.copy_(0.01 * torch.randn(m.weight.shape, generator=g))
                m.bias.zero_()
        # Calibrate running statistics on the images (train-mode BN), then
        # perturb them so inference differs from batch normalisation.
        wrapped = wrap_like_pytorch_fid(net)
        wrapped.train()
        wrapped(images01)
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.add_(0.05 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.mul_(0.8 + 0.4 * torch.rand(m.running_var.shape, generator=g))
                assert (m.running_var > 0).all()
    net.eval()


def load_images(n, h, w):
    files = sorted(glob.glob(os.path.join(SHARED, "*", "*.JPEG")))[:: 997 // n][:n]
    arr = np.stack([np.asarray(Image.open(f).convert("RGB").resize((w, h), Image.BICUBIC)) for f in files])
    return arr, files  # uint8 [N, H, W, 3]


def to_unit(arr):
    # torchvision ToTensor: float(v) / 255, NCHW.
    return torch.from_numpy(arr).permute(0, 3, 1, 2).float().div(255)


def features(net, x):
    with torch.no_grad():
        return wrap_like_pytorch_fid(net).eval()(x)[0].squeeze(-1).squeeze(-1)


def state_dict_f32(net, with_fc=True):
    return {k: v.detach().float().contiguous() for k, v in net.state_dict().items()
            if not k.endswith("num_batches_tracked") and (with_fc or not k.startswith("fc."))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--full", metavar="DIR")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if args.small:
        arr, files = load_images(3, 75, 90)
        x = to_unit(arr)
        net = reduced_inception(16)
        randomize(net, x, seed=16)
        f = features(net, x)
        out = state_dict_f32(net, with_fc=False)
        out["images"] = torch.from_numpy(arr.copy())
        out["features"] = f.contiguous()
        path = os.path.join(ROOT, "tests", "fixtures", "eval", "inception_w16.safetensors")
        save_file(out, path)
        print("wrote", path, os.path.getsize(path), "bytes; features", tuple(f.shape), "std", f.std().item())
    if args.full:
        os.makedirs(args.full, exist_ok=True)
        arr, files = load_images(6, 240, 320)
        x = to_unit(arr)
        mine = reduced_inception(1)
        randomize(mine, x, seed=1)
        sd = {k: v.clone() for k, v in mine.state_dict().items()}
        # pytorch-fid's own constructor, its download replaced by our weights.
        pfi.load_state_dict_from_url = lambda *a, **k: sd
        ref = pfi.InceptionV3([3]).eval()
        with torch.no_grad():
            f = ref(x)[0].squeeze(-1).squeeze(-1)
        diff = (features(mine, x) - f).abs().max().item()
        assert diff == 0.0, f"reduced_inception(1) differs from pytorch-fid by {diff}"
        save_file(state_dict_f32(mine), os.path.join(args.full, "weights.safetensors"))
        save_file({"images": torch.from_numpy(arr.copy()), "features": f.contiguous()},
                  os.path.join(args.full, "fixture.safetensors"))
        print("wrote", args.full, "features", tuple(f.shape), "mean", f.mean().item(), "std", f.std().item())


if __name__ == "__main__":
    main()
