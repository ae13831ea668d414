#!/usr/bin/env python3
"""Writes the committed seed inputs of the fuzz targets (fuzz/corpus/<target>/).

Tiny files only, one per structural variant the readers handle, so that
libFuzzer starts from every code path; scripts/fuzz.sh adds the test
fixtures, configs/ and real images at fuzz time.

  python3 tools/make_fuzz_seeds.py          # needs Pillow and numpy
"""
import io
import json
import os
import struct
import tarfile
import zipfile

import numpy as np
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def image_seeds():
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8), "RGB")
    gray = rgb.convert("L")

    def save(img, fmt, **kw):
        b = io.BytesIO()
        img.save(b, fmt, **kw)
        return b.getvalue()

    write("image", "rgb.png", save(rgb, "PNG"))
    write("image", "gray.png", save(gray, "PNG"))
    write("image", "la.png", save(rgb.convert("LA"), "PNG"))
    write("image", "rgba.png", save(rgb.convert("RGBA"), "PNG"))
    write("image", "palette.png", save(rgb.convert("P"), "PNG"))
    write("image", "gray16.png", save(Image.fromarray((np.arange(30).reshape(6, 5) * 2000).astype(np.uint16)), "PNG"))
    write("image", "rgb.bmp", save(rgb, "BMP"))
    write("image", "palette.bmp", save(rgb.convert("P"), "BMP"))
    write("image", "rgb.ppm", save(rgb, "PPM"))
    write("image", "gray.pgm", save(gray, "PPM"))
    write("image", "bw.pbm", save(gray.convert("1"), "PPM"))
    write("image", "ascii.ppm", b"P3\n# comment\n2 1\n255\n255 0 0  0 255 0\n")
    write("image", "rgb.tiff", save(rgb, "TIFF"))
    write("image", "rgba_lzw.tiff", save(rgb.convert("RGBA"), "TIFF", compression="tiff_lzw"))
    write("image", "cmyk.tiff", save(rgb.convert("CMYK"), "TIFF"))
    write("image", "lossy.webp", save(rgb, "WEBP", quality=80))
    write("image", "lossless.webp", save(rgb.convert("RGBA"), "WEBP", lossless=True))
    write("image", "rgb.jpg", save(rgb, "JPEG", quality=90))
    write("image", "gray.jpg", save(gray, "JPEG", quality=90))
    write("image", "cmyk.jpg", save(rgb.convert("CMYK"), "JPEG", quality=90))  # Adobe APP14, inverted
    write("image", "progressive.jpg", save(rgb, "JPEG", quality=90, progressive=True))


def safetensors_bytes(entries, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, payload in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    f32 = np.arange(6, dtype=np.float32).tobytes()
    write("safetensors", "f32.safetensors", safetensors_bytes([("w", "F32", [2, 3], f32)]))
    write("safetensors", "dtypes_meta.safetensors", safetensors_bytes(
        [("a", "I64", [2], np.array([-1, 7], np.int64).tobytes()),
         ("b", "I32", [1], np.array([5], np.int32).tobytes()),
         ("c", "BF16", [2], b"\x80\x3f\x00\x40"),
         ("d", "F16", [1, 1], np.array([1.5], np.float16).tobytes()),
         ("e", "U8", [3], b"\x01\x02\x03")],
        {"format": "pt", "step": "12"}))
    write("safetensors", "empty_and_scalar.safetensors", safetensors_bytes(
        [("empty", "F32", [0, 4], b""), ("scalar", "F32", [], np.array([2.5], np.float32).tobytes())]))
    write("safetensors", "no_tensors.safetensors", safetensors_bytes([], {}))


def npy_bytes(arr, version=None):
    b = io.BytesIO()
    np.lib.format.write_array(b, arr, version=version)
    return b.getvalue()


def npy_seeds():
    write("npy", "f8.npy", npy_bytes(np.linspace(-1, 1, 6).reshape(2, 3)))
    write("npy", "u8.npy", npy_bytes(np.arange(12, dtype=np.uint8).reshape(2, 2, 3)))
    write("npy", "i4_v2.npy", npy_bytes(np.array([1, -2], np.int32), version=(2, 0)))
    write("npy", "i8_scalar.npy", npy_bytes(np.array(7, np.int64)))
    write("npy", "bool.npy", npy_bytes(np.array([True, False])))
    write("npy", "f4_empty.npy", npy_bytes(np.zeros((0, 3), np.float32)))
    for name, comp in (("stored.npz", zipfile.ZIP_STORED), ("deflated.npz", zipfile.ZIP_DEFLATED)):
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", comp) as z:
            z.writestr("mu.npy", npy_bytes(np.arange(3, dtype=np.float64)))
            z.writestr("arr_0.npy", npy_bytes(np.zeros((1, 2, 2, 3), np.uint8)))
        write("npy", name, b.getvalue())


def shards_seeds():
    """fuzz_shards inputs: u16 index length, a shard index, the tar, written
    here from the layout data_pipeline/packed_shards.h documents (tarfile's
    USTAR writer for the tar). The harness fills in the shard number and the
    options digest."""
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 256, (4, 3, 3), dtype=np.uint8), "RGB")
    jpg, png = io.BytesIO(), io.BytesIO()
    rgb.save(jpg, "JPEG", quality=90)
    rgb.save(png, "PNG")
    samples = [(0, "jpg", 0, 0, jpg.getvalue()), (1, "png", 1, 1, png.getvalue())]  # pos, ext, label, format, bytes
    tar = io.BytesIO()
    offsets = []
    with tarfile.open(fileobj=tar, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for pos, ext, label, _, data in samples:
            for name, payload in (("%09d.%s" % (pos, ext), data), ("%09d.cls" % pos, str(label).encode())):
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(payload), 0
                if name.endswith(ext):
                    offsets.append(tar.tell() + 512)
                t.addfile(info, io.BytesIO(payload))
    tar_bytes = tar.getvalue()
    names = b"".join(b"%s/%d\0" % (ext.encode(), pos) for pos, ext, *_ in samples)
    idx = b"VTSHIDX1" + struct.pack("<7Q", 0, len(samples), len(tar_bytes), 0, 0, 0, len(names))
    for (pos, _, label, fmt, data), off in zip(samples, offsets):
        idx += struct.pack("<QQQiHH", off, len(data), pos, label, fmt, 0)
    idx += names
    write("shards", "two_samples.bin", struct.pack("<H", len(idx)) + idx + tar_bytes)


def config_seeds():
    write("config", "vtrain_small.yaml", b"""_base_: cifar10_vit_tiny_siamese.yaml
name: seed
train:
  epochs: 1
  lr: 1.0e-3
model:
  norm: {scheme: pre, normalized_input: false}
data:
  mixup: .8
""")
    write("config", "dittrain_small.yaml", b"""_base_: [cifar10_dit_siamese.yaml]
train: {steps: 10, lr: 0x10}
model: {preset: DiT-S/4}
data: {kind: images, root: "../x", on_corrupt: skip}
""")
    write("config", "anchors_tags.yaml", b"""defaults: &d {epochs: 3}
train: *d
name: !!str 12
seed: ~
list: [1, 2.5, "s", null, .inf]
""")


if __name__ == "__main__":
    image_seeds()
    safetensors_seeds()
    npy_seeds()
    config_seeds()
    shards_seeds()
