#!/usr/bin/env python3
"""Writes a synthetic ADM-style sample batch, arr_0 uint8 [N, H, W, 3], a
batch of rows at a time (Python's zipfile, ZIP64, stored), so that files
larger than memory can be made to measure veval's peak memory
(docs/evaluation.md).

    make_synthetic_samples.py OUT.npz N [SIZE] [--deflate]

Pixels are a fixed function of (image, row, column, channel); with numpy
installed np.load reads the file back (checked on the first rows).
"""
import struct
import sys
import zipfile


def npy_header(shape):
    # numpy's format 1.0 header, padded so that the data start at a multiple of 64.
    d = "{'descr': '|u1', 'fortran_order': False, 'shape': (%s), }" % ", ".join(str(s) for s in shape)
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode("latin1")


def image(i, size):
    row = bytes(((i * 7 + x * 3 + c * 11) & 0xFF) for x in range(size) for c in range(3))
    return b"".join(row[(y * 3) % len(row):] + row[:(y * 3) % len(row)] for y in range(size))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2 or "--help" in sys.argv:
        print(__doc__)
        return 0 if "--help" in sys.argv else 2
    out, n = args[0], int(args[1])
    size = int(args[2]) if len(args) > 2 else 256
    method = zipfile.ZIP_DEFLATED if "--deflate" in sys.argv else zipfile.ZIP_STORED
    # 256 distinct images, repeated: making 50 000 in pure Python would take longer than scoring them.
    pool = [image(i, size) for i in range(min(n, 256))]
    with zipfile.ZipFile(out, "w", method) as z:
        with z.open("arr_0.npy", "w", force_zip64=True) as f:
            f.write(npy_header((n, size, size, 3)))
            for i in range(n):
                f.write(pool[i % len(pool)])
    try:
        import numpy as np
    except ImportError:
        return 0
    a = np.load(out, mmap_mode=None)["arr_0"] if n * size * size * 3 < (1 << 30) else None
    if a is not None:
        assert a.shape == (n, size, size, 3) and a.dtype == np.uint8
        assert a[1].tobytes() == pool[1 % len(pool)]
    print("%s: arr_0 uint8 [%d, %d, %d, 3]" % (out, n, size, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
