#!/usr/bin/env python3
"""Checks the JSON of the training-step benchmarks' GPU mode (bench/step_bench.h).

usage: check_step_json.py BIN ARGS...   runs BIN ARGS (bench_train_step or
                                        bench_dit_step, GPU mode) and checks
                                        every line it prints
       check_step_json.py --flops BIN   checks BIN --flops against the papers

Per figure line: every field present; img/s = batch / median step; the
best step <= the median; the forward multiply-adds equal an independent
layer-by-layer count of the printed model (every GEMM listed with its rows,
and attention per head); MFU = img/s x 6 x MACs / peak; saved activations
> 0 and below the peak memory; finite positive losses (a classifier's first
loss near ln K at initialisation). With pre and siamese: the ratio line
equals the ratios of their lines, and SiameseNorm saves more activations
(its second stream). --flops: DeiT-S 4.6 GMAC (DeiT, Table 1) within 1%,
DiT-L/4 19.70 GMAC (DiT, Table 4) within 0.5%.
Exit 0 when all hold, 1 with every failure listed.
"""
import json
import math
import subprocess
import sys

FAILS = []


def expect(cond, what):
    if not cond:
        FAILS.append(what)


def close(a, b, rel, what):
    expect(abs(a - b) <= rel * max(abs(a), abs(b), 1e-30), f"{what}: {a} vs {b} (rel tol {rel})")


def attention_macs(tokens, dim, heads):
    hd = dim // heads
    return sum(tokens * hd * tokens + tokens * tokens * hd for _ in range(heads))  # q.k^T, attn.v per head


def vit_macs(j):
    """Layer list of a timm VisionTransformer: (rows, in, out) per GEMM."""
    D, T, p, C = j["dim"], j["tokens"], j["patch"], j["in_chans"]
    gemms = [(T - 1, C * p * p, D)]  # patch_embed.proj as a GEMM over the patches
    for _ in range(j["depth"]):
        gemms += [(T, D, 3 * D), (T, D, D), (T, D, j["mlp_hidden"]), (T, j["mlp_hidden"], D)]  # qkv proj fc1 fc2
    gemms.append((1, D, j["classes"]))  # head on the class token
    return sum(r * i * o for r, i, o in gemms) + j["depth"] * attention_macs(T, D, j["heads"])


def dit_macs(j):
    """Layer list of the DiT repository's model: (rows, in, out) per GEMM."""
    D, T, p, C = j["dim"], j["tokens"], j["patch"], j["in_chans"]
    gemms = [(T, C * p * p, D), (1, 256, D), (1, D, D)]  # x_embedder, t_embedder.mlp.0/.2
    for _ in range(j["depth"]):
        gemms += [(1, D, 6 * D), (T, D, 3 * D), (T, D, D), (T, D, j["mlp_hidden"]), (T, j["mlp_hidden"], D)]
    gemms += [(1, D, 2 * D), (T, D, p * p * j["out_chans"])]  # final_layer adaLN, linear
    return sum(r * i * o for r, i, o in gemms) + j["depth"] * attention_macs(T, D, j["heads"])


FIELDS = ["bench", "device", "gpu", "precision", "scheme", "batch", "warmup", "iters", "step_ms", "step_ms_best",
          "img_per_s", "fwd_gmac_per_img", "fwd_gflop_per_img", "peak_gib", "saved_activation_gib",
          "saved_activation_bytes", "params", "loss_first", "loss_last", "dim", "depth", "heads", "tokens",
          "cuda_graph", "graph_replays"]


def check_figures(j):
    tag = f"{j.get('bench')} {j.get('scheme')}"
    missing = [f for f in FIELDS if f not in j]
    expect(not missing, f"{tag}: fields missing: {missing}")
    if missing:
        return
    expect(j["step_ms"] > 0 and 0 < j["step_ms_best"] <= j["step_ms"], f"{tag}: step times {j['step_ms_best']}, {j['step_ms']}")
    close(j["img_per_s"], j["batch"] / (j["step_ms"] / 1e3), 1e-6, f"{tag}: img/s vs batch / step")
    count = vit_macs(j) if j["bench"] == "vtrain_train_step" else dit_macs(j)
    close(j["fwd_gmac_per_img"] * 1e9, count, 1e-9, f"{tag}: closed-form forward MACs vs the layer count")
    close(j["fwd_gflop_per_img"], 2 * j["fwd_gmac_per_img"], 1e-12, f"{tag}: GFLOP = 2 GMAC")
    if "mfu" in j:
        close(j["mfu"], j["img_per_s"] * 6 * j["fwd_gmac_per_img"] * 1e9 / (j["peak_tflops"] * 1e12), 1e-6, f"{tag}: MFU")
    expect(0 < j["saved_activation_gib"] < j["peak_gib"], f"{tag}: saved activations {j['saved_activation_gib']} GiB "
           f"not within (0, peak {j['peak_gib']} GiB)")
    close(j["saved_activation_gib"] * 2**30, j["saved_activation_bytes"], 1e-9, f"{tag}: activation GiB vs bytes")
    expect(j["params"] > 0, f"{tag}: params {j['params']}")
    for k in ("loss_first", "loss_last"):
        expect(math.isfinite(j[k]) and j[k] > 0, f"{tag}: {k} {j[k]}")
    # train.cuda_graph auto: the first step is eager and the second captures, so with a warm-up
    # (--warmup >= 1) every timed step is a launch of the graph; off: none is.
    want = j["iters"] if j["cuda_graph"] == "auto" else 0
    expect(j["graph_replays"] == want, f"{tag}: {j['graph_replays']} timed CUDA Graph launches, expected {want} "
           f"(cuda_graph {j['cuda_graph']})")
    if j["bench"] == "vtrain_train_step":  # near-uniform logits at initialisation: cross-entropy ~ ln K
        expect(abs(j["loss_first"] - math.log(j["classes"])) < 1.0, f"{tag}: first loss {j['loss_first']} far from ln K")


def check_run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
    expect(out.returncode == 0, f"exit status {out.returncode}")
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    figs = [j for j in lines if "step_ms" in j]
    expect(figs, "no figure line")
    for j in figs:
        check_figures(j)
    by = {j["scheme"]: j for j in figs if "scheme" in j}
    ratios = [j for j in lines if "step_time_siamese_over_pre" in j]
    if "pre" in by and "siamese" in by:
        expect(len(ratios) == 1, "no ratio line with pre and siamese")
        if ratios and not FAILS:
            r, p, s = ratios[0], by["pre"], by["siamese"]
            close(r["step_time_siamese_over_pre"], s["step_ms"] / p["step_ms"], 1e-9, "step time ratio")
            close(r["saved_activation_siamese_over_pre"], s["saved_activation_bytes"] / p["saved_activation_bytes"],
                  1e-9, "activation ratio")
            expect(s["saved_activation_bytes"] > p["saved_activation_bytes"],
                   "SiameseNorm saves no more activations than Pre-Norm")


def check_flops(binary):
    out = subprocess.run([binary, "--flops"], capture_output=True, text=True, timeout=60)
    expect(out.returncode == 0, f"{binary} --flops: exit {out.returncode}")
    j = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(j))
    if j["bench"] == "vtrain_flops":
        close(j["fwd_gmac_per_img"], 4.6, 0.01, "DeiT-S forward GMAC vs DeiT's 4.6")
    else:
        close(j["fwd_gmac_per_img"], 19.70, 0.005, "DiT-L/4 forward GMAC vs DiT's 19.70")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--flops":
        check_flops(sys.argv[2])
    elif len(sys.argv) >= 2:
        check_run(sys.argv[1:])
    else:
        print(__doc__)
        return 2
    for f in FAILS:
        print("FAIL", f)
    print("check_step_json:", "FAIL" if FAILS else "PASS")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
