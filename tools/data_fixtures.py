#!/usr/bin/env python3
"""Writes the data-pipeline test fixtures to tests/fixtures/data/ (JSON).

- imagefolder_<name>.json: torchvision.datasets.ImageFolder's class list and
  sample order for ../shared/data/cifar10/train and imagenet-samples (count,
  classes, the first/last/every 997th sample), plus the names of the images
  PIL opens in mode 'L' (grayscale).
- pil_ops.json: Pillow reference outputs on a small deterministic RGB image:
  antialiased resize (BICUBIC, BOX, with and without a box), the point-op
  tables (posterize, solarize, solarize-add as in timm's auto_augment), the
  ImageOps / ImageEnhance ops, and affine transforms (rotate, shear,
  translate) with bicubic resampling and timm's fill colour.

Run from the repository root: python3 tools/data_fixtures.py
"""
import json
import os
import sys

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "data")
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
FILL = (124, 116, 104)


def imagefolder_fixture(name, root, find_gray):
    from torchvision.datasets import ImageFolder

    ds = ImageFolder(root)
    rel = lambda p: os.path.relpath(p, root)
    n = len(ds.samples)
    picks = sorted(set(list(range(5)) + list(range(n - 5, n)) + list(range(0, n, 997))))
    out = {
        "root": os.path.relpath(root, DATA),
        "num_classes": len(ds.classes),
        "classes": ds.classes,
        "count": n,
        "samples": [[i, rel(ds.samples[i][0]), ds.samples[i][1]] for i in picks],
    }
    if find_gray:
        gray = []
        for p, _ in ds.samples:
            with Image.open(p) as im:
                if im.mode == "L":
                    gray.append(rel(p))
        out["grayscale"] = gray
    with open(os.path.join(OUT, f"imagefolder_{name}.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(name, n, "samples", len(ds.classes), "classes", len(out.get("grayscale", [])), "grayscale")


def test_image(w, h, seed):
    rng = np.random.RandomState(seed)
    # Smooth gradients plus noise so that every op changes something.
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255.0 / (w - 1), y * 255.0 / (h - 1), (x + y) * 127.0 / (w + h)], -1)
    arr = np.clip(base + rng.randint(-40, 41, size=(h, w, 3)), 0, 255).astype(np.uint8)
    return arr


def flat(im):
    return np.asarray(im, dtype=np.uint8).reshape(-1).tolist()


def pil_ops_fixture():
    w, h = 19, 14
    arr = test_image(w, h, 0)
    img = Image.fromarray(arr, "RGB")
    ramp = Image.fromarray(np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 3, axis=2), "RGB")
    out = {"width": w, "height": h, "input": flat(img), "fill": list(FILL)}

    out["resize"] = []
    for (ow, oh, filt, box) in [
        (7, 5, "bicubic", None),
        (31, 23, "bicubic", None),
        (12, 14, "bicubic", None),
        (9, 6, "bicubic", (2.5, 1.25, 17.0, 12.5)),
        (9, 7, "box", None),
        (8, 8, "bilinear", (1.0, 2.0, 15.0, 13.0)),
    ]:
        f = {"bicubic": Image.BICUBIC, "box": Image.BOX, "bilinear": Image.BILINEAR}[filt]
        r = img.resize((ow, oh), resample=f, box=box)
        out["resize"].append({"w": ow, "h": oh, "filter": filt, "box": list(box) if box else None, "out": flat(r)})

    # Point tables as timm's auto_augment applies them (on a 0..255 ramp).
    # Pillow >= 10 rejects bits=0; the Pillow that timm 0.3.2 ran applied
    # the same mask lut (i & ~(2**(8-bits)-1)), which blackens everything.
    def posterize(im, bits):
        if bits >= 1:
            return ImageOps.posterize(im, bits)
        mask = ~(2 ** (8 - bits) - 1)
        return im.point([i & mask for i in range(256)] * 3)
    out["posterize"] = {str(b): flat(posterize(ramp, b))[0::3] for b in range(0, 5)}
    out["solarize"] = {str(t): flat(ImageOps.solarize(ramp, t))[0::3] for t in (256, 230, 128, 26, 0)}
    def solarize_add(im, add, thresh=128):
        lut = [min(255, i + add) if i < thresh else i for i in range(256)]
        return im.point(lut * 3)
    out["solarize_add"] = {str(a): flat(solarize_add(ramp, a))[0::3] for a in (0, 33, 99, 110)}

    ops = {}
    ops["autocontrast"] = flat(ImageOps.autocontrast(img))
    ops["equalize"] = flat(ImageOps.equalize(img))
    ops["invert"] = flat(ImageOps.invert(img))
    for fac in (0.19, 1.0, 1.73):
        ops[f"color_{fac}"] = flat(ImageEnhance.Color(img).enhance(fac))
        ops[f"contrast_{fac}"] = flat(ImageEnhance.Contrast(img).enhance(fac))
        ops[f"brightness_{fac}"] = flat(ImageEnhance.Brightness(img).enhance(fac))
        ops[f"sharpness_{fac}"] = flat(ImageEnhance.Sharpness(img).enhance(fac))
    kw = dict(resample=Image.BICUBIC, fillcolor=FILL)
    for deg in (17.0, -25.5):
        ops[f"rotate_{deg}"] = flat(img.rotate(deg, **kw))
    for s in (0.2, -0.27):
        ops[f"shearx_{s}"] = flat(img.transform(img.size, Image.AFFINE, (1, s, 0, 0, 1, 0), **kw))
        ops[f"sheary_{s}"] = flat(img.transform(img.size, Image.AFFINE, (1, 0, 0, s, 1, 0), **kw))
    for t in (3.4, -6.0):
        ops[f"translatex_{t}"] = flat(img.transform(img.size, Image.AFFINE, (1, 0, t, 0, 1, 0), **kw))
        ops[f"translatey_{t}"] = flat(img.transform(img.size, Image.AFFINE, (1, 0, 0, 0, 1, t), **kw))
    out["ops"] = ops
    # Grayscale (ITU-R 601-2 luma, Pillow's L24) for the Color op's reference.
    out["gray"] = np.asarray(img.convert("L")).reshape(-1).tolist()
    with open(os.path.join(OUT, "pil_ops.json"), "w") as f:
        json.dump(out, f)
    print("pil_ops.json written")


def main():
    os.makedirs(OUT, exist_ok=True)
    pil_ops_fixture()
    if "--no-folders" not in sys.argv:
        imagefolder_fixture("cifar10_train", os.path.join(DATA, "cifar10", "train"), False)
        imagefolder_fixture("imagenet_samples", os.path.join(DATA, "imagenet-samples"), True)


if __name__ == "__main__":
    main()
