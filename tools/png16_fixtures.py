#!/usr/bin/env python3
"""Writes the 16-bit PNG fixtures to tests/fixtures/data/png16/.

torchvision's default loader opens a file with Pillow and calls
convert('RGB'). For 16-bit PNGs Pillow keeps the high byte of each sample
(RGB, RGBA, gray + alpha) but reads 16-bit gray as mode I;16, whose
conversion clips to [0, 255] (25700 -> 255, not 100). The PNGs are encoded
here (zlib + struct: Pillow writes no 16-bit RGB PNG); the expected pixels
are what Pillow's convert('RGB') gives for them:

- rgb16.png, gray16.png, la16.png, rgba16.png: one row each, samples that
  cover the edges (0, 1, 255, 256, 257, 32767, 32768, 65279, 65280, 65535)
  and a few others;
- png16_pillow.json: {file: {"mode": Pillow's mode, "rgb": [[[r, g, b]]]}}.

Needs Pillow and numpy. Run from the repository root:
python3 tools/png16_fixtures.py
"""
import json
import os
import struct
import zlib

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "data", "png16")

EDGES = [0, 1, 255, 256, 257, 32767, 32768, 65279, 65280, 65535, 25700, 1000, 511, 512]


def png16(arr, color_type):
    """A PNG of big-endian 16-bit samples, arr: [H, W, C] (filter 0 per row)."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    os.makedirs(OUT, exist_ok=True)
    n = len(EDGES)
    e = np.array(EDGES, dtype=np.uint16)
    cases = {
        "rgb16.png": (np.stack([e, e[::-1], np.roll(e, 3)], axis=-1)[None], 2),
        "gray16.png": (e[None, :, None], 0),
        "la16.png": (np.stack([e, e[::-1]], axis=-1)[None], 4),
        "rgba16.png": (np.stack([e, np.roll(e, 5), e[::-1], np.roll(e, 7)], axis=-1)[None], 6),
    }
    expected = {}
    for name, (arr, color_type) in cases.items():
        assert arr.shape[:2] == (1, n)
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(png16(arr, color_type))
        im = Image.open(path)
        expected[name] = {"mode": im.mode, "rgb": np.asarray(im.convert("RGB")).tolist()}
    with open(os.path.join(OUT, "png16_pillow.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
