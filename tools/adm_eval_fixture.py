#!/usr/bin/env python3
"""Reference values for veval's ADM evaluation suite (eval/inception_score.h,
eval/manifold.h, eval/tf_resize.h, sFID through eval/frechet.h).

A numpy reimplementation, written from openai/guided-diffusion's
evaluations/evaluator.py (Evaluator.compute_inception_score,
ManifoldEstimator.manifold_radii / evaluate_pr, DistanceBlock,
FIDStatistics.frechet_distance) and from TensorFlow 1's legacy
resize_bilinear (align_corners=False, half_pixel_centers=False), applied to
fixed, seeded feature sets. Nothing here is a runtime dependency of veval.

  python3 tools/adm_eval_fixture.py            # writes tests/fixtures/eval/adm_suite.npz
  python3 tools/adm_eval_fixture.py --measure [--adm-evaluator PATH/evaluator.py]
      # fp16 vs fp32/fp64 distances on 2048-d sets; with ADM's evaluator.py
      # (and tensorflow-cpu installed) also its own ManifoldEstimator
  python3 tools/adm_eval_fixture.py --check ACTS.npz REF.npz [--is-split 5000]
      # the five numbers in numpy from `veval fid --save-activations ACTS.npz`
      # and a reference written by `veval stats` (mu, sigma, mu_s, sigma_s, pool)
  python3 tools/adm_eval_fixture.py --with-fc IN.safetensors OUT.safetensors
      # IN plus a seeded random "fc.weight" [1008, D] (for trying the
      # Inception Score with test networks such as inception_w16)

With TensorFlow installed (pip install tensorflow-cpu), its own
resize_bilinear output is stored next to the float64 reference
(resize*_tf). With torch-fidelity installed (pip install --no-deps torch-fidelity; torch
is optional, see inception_score_torch_fidelity), the Inception Score cases
whose N is a multiple of the split size are also computed by
torch_fidelity.metric_isc.isc_features_to_metric (shuffle off, splits =
N / split size) and stored next to the numpy values (is_*_torch_fidelity).
"""
import argparse
import os

import numpy as np
from scipy import linalg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "eval", "adm_suite.npz")


# --- Frechet distance (FIDStatistics.frechet_distance) ----------------------
def frechet(mu1, s1, mu2, s2, eps=1e-6):
    diff = mu1 - mu2
    covmean = linalg.sqrtm(s1.dot(s2))  # evaluator.py: disp=False (deprecated in SciPy 1.17), same value
    if not np.isfinite(covmean).all():
        off = np.eye(s1.shape[0]) * eps
        covmean = linalg.sqrtm((s1 + off).dot(s2 + off))
    if np.iscomplexobj(covmean):
        assert np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3)
        covmean = covmean.real
    return float(diff.dot(diff) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))


def stats(acts):
    return np.mean(acts, axis=0), np.cov(acts, rowvar=False)


# --- Inception Score (Evaluator.compute_inception_score) --------------------
def softmax64(logits):
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def inception_score(logits, split_size):
    """Splits of split_size in sample order (the last one may be shorter, as
    evaluator.py's range(0, N, split_size)); mean over splits of
    exp(mean_i KL(p_i || mean p))."""
    preds = softmax64(logits)
    scores = []
    for i in range(0, len(preds), split_size):
        part = preds[i:i + split_size]
        kl = part * (np.log(part) - np.log(np.mean(part, 0, keepdims=True)))
        scores.append(np.exp(np.mean(np.sum(kl, 1))))
    return float(np.mean(scores)), np.array(scores)


class _NumpyTensor:
    """The handful of torch.Tensor methods torch-fidelity's
    isc_features_to_metric calls, on a numpy array (torch itself is not
    installable on this machine; torch-fidelity's code runs unchanged)."""

    def __init__(self, a):
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    dim = lambda self: self.a.ndim  # noqa: E731
    double = lambda self: _NumpyTensor(self.a.astype(np.float64))  # noqa: E731
    __getitem__ = lambda self, k: _NumpyTensor(self.a[k])  # noqa: E731
    __mul__ = lambda self, o: _NumpyTensor(self.a * o.a)  # noqa: E731
    __sub__ = lambda self, o: _NumpyTensor(self.a - o.a)  # noqa: E731
    log = lambda self: _NumpyTensor(np.log(self.a))  # noqa: E731
    exp = lambda self: _NumpyTensor(np.exp(self.a))  # noqa: E731
    item = lambda self: float(self.a)  # noqa: E731

    def mean(self, dim=None, keepdim=False):
        return _NumpyTensor(np.mean(self.a, axis=dim, keepdims=keepdim))

    def sum(self, dim=None):
        return _NumpyTensor(np.sum(self.a, axis=dim))

    def log_softmax(self, dim):
        z = self.a - self.a.max(axis=dim, keepdims=True)
        return _NumpyTensor(z - np.log(np.exp(z).sum(axis=dim, keepdims=True)))

    def softmax(self, dim):
        return _NumpyTensor(np.exp(self.log_softmax(dim).a))


def inception_score_torch_fidelity(logits, splits):
    """torch_fidelity.metric_isc.isc_features_to_metric(logits, splits,
    shuffle=False): with torch installed, called directly; otherwise its
    source is taken from the installed torch-fidelity package and run with
    _NumpyTensor standing in for torch tensors. None when torch-fidelity is
    absent."""
    try:
        import torch
        from torch_fidelity.metric_isc import isc_features_to_metric
        return float(isc_features_to_metric(torch.from_numpy(logits), splits=splits, shuffle=False)["inception_score_mean"])
    except ImportError:
        pass
    import ast
    import importlib.util
    import types
    spec = importlib.util.find_spec("torch_fidelity")
    if spec is None:
        return None
    src = open(os.path.join(spec.submodule_search_locations[0], "metric_isc.py")).read()
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "isc_features_to_metric")
    fake_torch = types.SimpleNamespace(is_tensor=lambda t: isinstance(t, _NumpyTensor))
    ns = {"np": np, "torch": fake_torch, "KEY_METRIC_ISC_MEAN": "mean", "KEY_METRIC_ISC_STD": "std"}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "torch_fidelity/metric_isc.py", "exec"), ns)
    return float(ns["isc_features_to_metric"](_NumpyTensor(logits), splits=splits, shuffle=False)["mean"])


# --- Precision / recall (ManifoldEstimator, DistanceBlock) -----------------
def pairwise_sq(u, v, dtype):
    """_batch_pairwise_distances: max(|u|^2 - 2 u.v + |v|^2, 0).
    dtype float16 emulates TensorFlow's half graph: inputs cast to half, each
    op's output rounded to half (accumulation inside an op in float32); a
    non-finite half result falls back to float32 (the tf.cond)."""
    if dtype == np.float16:
        h = lambda x: x.astype(np.float16).astype(np.float32)  # noqa: E731
        u16, v16 = h(u), h(v)
        nu = h(np.sum(h(u16 * u16), 1))[:, None]
        nv = h(np.sum(h(v16 * v16), 1))[None, :]
        mm = h(u16 @ v16.T)
        d = h(np.maximum(h(h(nu - h(2 * mm)) + nv), 0))
        if np.all(np.isfinite(d)):
            return d.astype(np.float64)
        dtype = np.float32
    u, v = u.astype(dtype), v.astype(dtype)
    nu = np.sum(u * u, 1)[:, None]
    nv = np.sum(v * v, 1)[None, :]
    return np.maximum(nu - 2 * (u @ v.T) + nv, 0).astype(np.float64)


def manifold_radii(feats, k, dtype, block=10000):
    n = len(feats)
    radii = np.zeros(n)
    for b in range(0, n, block):
        d = np.concatenate([pairwise_sq(feats[b:b + block], feats[c:c + block], dtype)
                            for c in range(0, n, block)], axis=1)
        radii[b:b + block] = np.partition(d, k, axis=1)[:, k]
    if dtype != np.float64:
        radii = radii.astype(np.float32).astype(np.float64)  # evaluator.py keeps float32 radii
    return radii


def precision_recall(ref, samples, k=3, dtype=np.float64, block=10000):
    """(precision, recall) as compute_prec_recall(ref, samples): precision =
    share of samples inside some reference ball, recall = share of
    references inside some sample ball (balls: squared k-NN radius)."""
    r1 = manifold_radii(ref, k, dtype, block)
    r2 = manifold_radii(samples, k, dtype, block)
    s1 = np.zeros(len(ref), bool)
    s2 = np.zeros(len(samples), bool)
    for b in range(0, len(ref), block):
        for c in range(0, len(samples), block):
            d = pairwise_sq(ref[b:b + block], samples[c:c + block], dtype)
            s1[b:b + block] |= np.any(d <= r2[None, c:c + block], axis=1)
            s2[c:c + block] |= np.any(d <= r1[b:b + block, None], axis=0)
    return float(np.mean(s2)), float(np.mean(s1)), r1, r2


# --- TF1 resize_bilinear (legacy: align_corners=False, no half-pixel) ------
def tf1_resize_bilinear(img, oh, ow):
    """img [H, W, C] any real dtype -> float64 [oh, ow, C]. Source position
    of output index i is i * (in / out), both float32 as TensorFlow computes
    them (CalculateResizeScale, LegacyScaler); the interpolation is float64."""
    ih, iw = img.shape[:2]
    x = img.astype(np.float64)

    def axis(n_in, n_out):
        scale = np.float32(n_in) / np.float32(n_out)
        pos = (np.arange(n_out, dtype=np.float32) * scale).astype(np.float32).astype(np.float64)
        lo = np.floor(pos)
        hi = np.minimum(np.ceil(pos), n_in - 1).astype(np.int64)
        return np.maximum(lo, 0).astype(np.int64), hi, pos - lo

    y0, y1, fy = axis(ih, oh)
    x0, x1, fx = axis(iw, ow)
    tl, tr = x[y0][:, x0], x[y0][:, x1]
    bl, br = x[y1][:, x0], x[y1][:, x1]
    fx = fx[None, :, None]
    top = tl + (tr - tl) * fx
    bot = bl + (br - bl) * fx
    return top + (bot - top) * fy[:, None, None]


def tf1_resize_tensorflow(img, oh, ow):
    """TensorFlow's own kernel (tf.compat.v1.image.resize_bilinear,
    align_corners=False, half_pixel_centers=False) on float32 [0, 255]
    values as ADM feeds them; None without TensorFlow."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    x = tf.constant(img[None].astype(np.float32))
    return tf.compat.v1.image.resize_bilinear(x, (oh, ow), align_corners=False).numpy()[0]


def make_fixture():
    rng = np.random.default_rng(20240611)
    out = {}
    # Inception Score: a partial last split (64 = 4 x 15 + 4) and an exact
    # 2 x 20 with large logits (softmax stability).
    la = rng.normal(size=(64, 1008)).astype(np.float32) * 3
    lb = (rng.normal(size=(40, 1008)) * 8 + rng.normal(size=(1, 1008)) * 4).astype(np.float32)
    for name, logits, split in (("a", la, 15), ("b", lb, 20), ("c", la[:60], 15)):
        m, s = inception_score(logits, split)
        out[f"is_{name}_logits"], out[f"is_{name}_split"] = logits, np.array(split, np.int64)
        out[f"is_{name}"], out[f"is_{name}_scores"] = np.array(m), s
        if len(logits) % split == 0:
            tf = inception_score_torch_fidelity(logits, len(logits) // split)
            if tf is not None:
                out[f"is_{name}_torch_fidelity"] = np.array(tf)
                print(f"IS {name}: numpy {m!r}, torch-fidelity {tf!r}")
    # Precision / recall: overlapping Gaussians with an outlier tail.
    d = 64
    ref = rng.normal(size=(300, d)).astype(np.float32)
    smp = (rng.normal(size=(250, d)) * 1.08 + 0.12).astype(np.float32)
    smp[:20] += 4.0  # far samples: lower precision
    for name, dt in (("fp64", np.float64), ("fp32", np.float32), ("fp16", np.float16)):
        p, r, r1, r2 = precision_recall(ref, smp, 3, dt, block=128)
        out[f"pr_precision_{name}"], out[f"pr_recall_{name}"] = np.array(p), np.array(r)
        if name == "fp64":
            out["pr_radii_ref"], out["pr_radii_samples"] = r1, r2
        print(f"P/R {name}: {p!r} {r!r}")
    out["pr_ref"], out["pr_samples"] = ref, smp
    # sFID-shaped case: 7 channels of a 3 x 3 map, (h, w, c) flattened.
    s1 = np.maximum(rng.normal(size=(80, 63)), 0).astype(np.float32)
    s2 = np.maximum(rng.normal(size=(70, 63)) * 1.2 + 0.1, 0).astype(np.float32)
    out["sfid_feat1"], out["sfid_feat2"] = s1, s2
    out["sfid"] = np.array(frechet(*stats(s1.astype(np.float64)), *stats(s2.astype(np.float64))))
    # TF1 resize, odd sizes, up and down (and the 256 -> 299 row of DiT samples).
    for i, (ih, iw, oh, ow) in enumerate(((5, 7, 299, 3), (120, 97, 7, 9), (9, 13, 17, 29), (2, 256, 3, 299))):
        img = rng.integers(0, 256, size=(ih, iw, 3), dtype=np.uint8)
        out[f"resize{i}_in"], out[f"resize{i}_out"] = img, tf1_resize_bilinear(img, oh, ow)
        t = tf1_resize_tensorflow(img, oh, ow)
        if t is not None:
            out[f"resize{i}_tf"] = t
            print(f"resize {i}: TensorFlow vs float64 reference max |diff| {np.abs(t - out[f'resize{i}_out']).max():.3g}")
    np.savez(OUT, **out)
    print("wrote", OUT)


def adm_precision_recall(evaluator_path, ref, samples):
    """(precision, recall) by evaluator.py's own ManifoldEstimator (TensorFlow,
    float16 distances), imported from `evaluator_path`."""
    import importlib.util
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    spec = importlib.util.spec_from_file_location("adm_evaluator", evaluator_path)
    ev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ev)
    me = ev.ManifoldEstimator(tf.Session())
    r1, r2 = me.manifold_radii(ref), me.manifold_radii(samples)
    p, r = me.evaluate_pr(ref, r1, samples, r2)
    return float(p[0]), float(r[0])


def measure(adm_evaluator=None):
    """fp16 (evaluator.py's DistanceBlock) against fp32 / fp64 distances on
    2048-d non-negative features shaped like pool3 activations."""
    rng = np.random.default_rng(7)
    d = 2048
    base = rng.gamma(0.6, 0.5, size=(1, d))
    ref = (base * rng.gamma(2.0, 0.5, size=(3000, d))).astype(np.float32)
    smp = (base * rng.gamma(2.2, 0.48, size=(2500, d)) + 0.01).astype(np.float32)
    for name, dt in (("fp64", np.float64), ("fp32", np.float32), ("fp16", np.float16)):
        p, r, r1, _ = precision_recall(ref, smp, 3, dt, block=1000)
        print(f"{name}: precision {p:.6f} recall {r:.6f}  median radius {np.median(r1):.3f}")
    if adm_evaluator:
        p, r = adm_precision_recall(adm_evaluator, ref, smp)
        print(f"evaluator.py (TensorFlow fp16): precision {p:.6f} recall {r:.6f}")
        fx = np.load(OUT)
        p, r = adm_precision_recall(adm_evaluator, fx["pr_ref"], fx["pr_samples"])
        print(f"evaluator.py on the committed 64-d fixture: precision {p!r} recall {r!r} "
              f"(fixture fp16 emulation {float(fx['pr_precision_fp16'])!r} {float(fx['pr_recall_fp16'])!r})")
    u, v = ref[:500], smp[:500]
    d64 = pairwise_sq(u, v, np.float64)
    for name, dt in (("fp32", np.float32), ("fp16", np.float16)):
        e = np.abs(pairwise_sq(u, v, dt) - d64) / d64
        print(f"{name} squared-distance relative error: median {np.median(e):.2e} max {e.max():.2e}")


def check(acts_path, ref_path, split):
    """FID, sFID, IS, precision, recall of saved sample activations against
    a reference .npz, computed here (float64 distances)."""
    a, r = np.load(acts_path), np.load(ref_path)
    pool = a["pool"].astype(np.float64)
    print("FID:", frechet(*stats(pool), r["mu"], r["sigma"]))
    if "mu_s" in r and "spatial" in a:
        print("sFID:", frechet(*stats(a["spatial"].astype(np.float64)), r["mu_s"], r["sigma_s"]))
    if "logits" in a and len(a["logits"]) >= 2 * split:
        print("IS:", inception_score(a["logits"], split)[0])
    if "pool" in r:
        p, rc, _, _ = precision_recall(r["pool"], a["pool"])
        print("precision:", p)
        print("recall:", rc)


def with_fc(src, dst, seed=1008):
    """Copies a safetensors file and appends fc.weight [1008, D] (float32,
    N(0, 1/D)), D from Mixed_7c's output channels."""
    import json
    import struct
    raw = open(src, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    d = sum(header[f"Mixed_7c.{b}.conv.weight"]["shape"][0] for b in
            ("branch1x1", "branch3x3_2a", "branch3x3_2b", "branch3x3dbl_3a", "branch3x3dbl_3b", "branch_pool"))
    w = (np.random.default_rng(seed).normal(size=(1008, d)) / np.sqrt(d)).astype("<f4")
    header["fc.weight"] = {"dtype": "F32", "shape": [1008, d], "data_offsets": [len(data), len(data) + w.nbytes]}
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data + w.tobytes())
    print("wrote", dst, "fc.weight", (1008, d))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--with-fc", nargs=2, metavar=("IN", "OUT"))
    ap.add_argument("--check", nargs=2, metavar=("ACTS", "REF"))
    ap.add_argument("--adm-evaluator", metavar="EVALUATOR_PY")
    ap.add_argument("--is-split", type=int, default=5000)
    a = ap.parse_args()
    if a.check:
        check(*a.check, a.is_split)
    elif a.with_fc:
        with_fc(*a.with_fc)
    elif a.measure:
        measure(a.adm_evaluator)
    else:
        make_fixture()
