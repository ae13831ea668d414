#!/usr/bin/env python3
"""Writes tests/fixtures/eval/frechet_cases.npz: feature sets, their numpy
statistics (float64, np.cov with N - 1) and pytorch-fid's Frechet distance
(scipy.linalg.sqrtm) for the C++ tests of eval/frechet.h.

Cases (name prefix):
  well   : D=16, N=300/250, different means and covariances
  sing   : D=32, N=20/24 < D, singular covariances (rank N - 1)
  illc   : D=24, N=400, one near-degenerate direction (condition ~1e9)
  offset : D=8, features around 1e4 (tests the shifted accumulation)

Usage: python3 tools/fid_fixture.py   (needs numpy, scipy, pytorch-fid)
"""
import os

import numpy as np
from pytorch_fid.fid_score import calculate_frechet_distance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "eval", "frechet_cases.npz")


def features(rng, n, d, kind):
    if kind == "well":
        a = rng.normal(size=(d, d)) * 0.4 + np.eye(d)
        return (rng.normal(size=(n, d)) @ a + rng.normal(size=d)).astype(np.float32)
    if kind == "sing":
        return (rng.gamma(2.0, size=(n, d)) @ rng.normal(size=(d, d)) * 0.3).astype(np.float32)
    if kind == "illc":
        x = rng.normal(size=(n, d))
        x[:, -1] = x[:, 0] + 3e-5 * rng.normal(size=n)  # nearly collinear column
        return (x @ (np.eye(d) + 0.1 * rng.normal(size=(d, d)))).astype(np.float32)
    if kind == "offset":
        return (1e4 + rng.normal(size=(n, d)) * 0.5).astype(np.float32)
    raise ValueError(kind)


def main():
    rng = np.random.default_rng(20260208)
    out = {}
    for name, d, n1, n2 in [("well", 16, 300, 250), ("sing", 32, 20, 24), ("illc", 24, 400, 400),
                            ("offset", 8, 500, 400)]:
        f1 = features(rng, n1, d, name)
        f2 = features(rng, n2, d, name) + np.float32(0.25)
        s = []
        for i, f in ((1, f1), (2, f2)):
            f64 = f.astype(np.float64)
            mu, sigma = f64.mean(axis=0), np.cov(f64, rowvar=False)
            out[f"{name}_feat{i}"] = f
            out[f"{name}_mu{i}"] = mu
            out[f"{name}_sigma{i}"] = sigma
            s.append((mu, sigma))
        fid = calculate_frechet_distance(s[0][0], s[0][1], s[1][0], s[1][1])
        out[f"{name}_fid"] = np.array([fid], dtype=np.float64)
        print(f"{name}: D={d} N={n1}/{n2} FID={fid:.12g}")
    np.savez(OUT, **out)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
