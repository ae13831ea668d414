#!/usr/bin/env python3
"""Writes the tiny reference files that tests/core/ reads with the C++
readers: a safetensors file from the Python `safetensors` library and .npy/.npz
files from numpy (np.save, np.savez, np.savez_compressed).

Every value is a closed form that tests/core/test_fixtures_py.cpp recomputes
independently; keep the two in sync.

    python3 tools/make_core_fixtures.py   # writes tests/fixtures/core/
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "core")


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors = {
        "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1.0,  # i/2 - 1
        "bf16": (torch.arange(4, dtype=torch.float32) / 4).to(torch.bfloat16),  # i/4
        "f16": (torch.arange(5, dtype=torch.float32) * 0.25 - 0.5).to(torch.float16),  # i/4 - 1/2
        "i64": torch.tensor([-1, 0, 2**40], dtype=torch.int64),
        "i32": torch.arange(4, dtype=torch.int32) * -7,  # -7 i
        "u8": (torch.arange(6, dtype=torch.int32) * 50).to(torch.uint8).reshape(3, 2),  # 50 i
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }
    # One metadata entry: the Python library writes metadata from a hash map,
    # so only a single entry has a deterministic byte layout.
    save_file(tensors, os.path.join(OUT, "py_tensors.safetensors"), metadata={"format": "pt"})

    arrays = {
        "a": np.arange(12, dtype=np.float64).reshape(3, 4) / 8,  # i/8
        "b": (np.arange(10) * 25).astype(np.uint8),  # 25 i
        "c": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,  # i - 5/2
        "d": np.array([-(2**40), 0, 7], dtype=np.int64),
        "e": np.arange(4, dtype=np.int32) * 3,  # 3 i
        "s": np.array(1.25, dtype=np.float64),  # 0-d
    }
    np.savez(os.path.join(OUT, "py_stored.npz"), **arrays)
    np.savez_compressed(os.path.join(OUT, "py_deflated.npz"), **arrays)
    np.save(os.path.join(OUT, "py_a.npy"), arrays["a"])
    np.save(os.path.join(OUT, "py_fortran.npy"), np.asfortranarray(arrays["a"]))


if __name__ == "__main__":
    main()
