"""Shared by tools/bench_timm_step.py and tools/bench_dit_step.py on a GPU:
running vtrain's step benchmark in its GPU mode (bench/step_bench.h) and
the line of ratios against PyTorch and the project's performance goals
(docs/performance.md): vtrain >= 1.5x timm + torch.compile on DeiT-S and
>= 40% MFU, >= 1.3x DiT + torch.compile on DiT-L/4, SiameseNorm / Pre-Norm
step time <= 1.03 and saved activations <= 1.10.
"""
import json
import os
import subprocess
import sys


def find_bin(root, name):
    """bench/NAME of build/ (a development tree), else build-gpu/ (the GPU bundle)."""
    for b in ("build", "build-gpu"):
        p = os.path.join(root, b, "bench", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return os.path.join(root, "build", "bench", name)


def run_vtrain_gpu(binary, bench, batch, iters, warmup, bf16, peak, extra=()):
    """The program's GPU mode for pre and siamese: its JSON lines (echoed); [] when not built, None when it failed.
    VT_BENCH_LD_LIBRARY_PATH, when set, is its library path (scripts/gpu_check.sh: the bundle's)."""
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(json.dumps({"bench": bench, "device": "cuda", "status": f"not built ({binary})"}), flush=True)
        return []
    cmd = [binary, "--device", "cuda", "--precision", "bf16" if bf16 else "fp32", "--batch", str(batch),
           "--iters", str(iters), "--warmup", str(warmup), "--scheme", "pre,siamese"]
    if peak:
        cmd += ["--peak-tflops", str(peak)]
    cmd += list(extra)  # tests: --tiny
    env = dict(os.environ)
    if os.environ.get("VT_BENCH_LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["VT_BENCH_LD_LIBRARY_PATH"]
    print("running: " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    for j in lines:
        print(json.dumps(j), flush=True)
    if r.returncode != 0:
        print(json.dumps({"bench": bench, "status": f"failed (exit {r.returncode})"}), flush=True)
        return None
    return lines


def vs_torch_line(bench, vt, pt, speed_target, a, torch_name):
    """One line: vtrain (Pre-Norm, the same model as PyTorch's; SiameseNorm beside it) over PyTorch's img/s and
    peak memory, MFU, siamese/pre, and which targets are met (targets_met; MFU >= 0.40 for DeiT-S only)."""
    by = {j["scheme"]: j for j in vt if "step_ms" in j}
    ratio = next((j for j in vt if "step_time_siamese_over_pre" in j), {})
    out = {"bench": bench, "batch": a.batch, "precision": "bf16" if a.bf16 else "fp32",
           "torch": torch_name + (f" + torch.compile({a.compile_mode})" if a.compile else " eager")}
    met = {}
    for name in ("pre", "siamese"):
        j = by.get(name)
        if j:
            out[f"speed_ratio_{name}"] = round(j["img_per_s"] / pt["img_per_s"], 3)
            out[f"memory_ratio_{name}"] = round(j["peak_gib"] * 1024 / pt["peak_gpu_mb"], 3)
            if "mfu" in j:
                out[f"mfu_{name}"] = round(j["mfu"], 4)
    if "pre" in by:
        met[f"speed_pre_>={speed_target}x"] = out["speed_ratio_pre"] >= speed_target
        if bench == "vtrain_vs_timm" and "mfu" in by["pre"]:
            met["mfu_pre_>=0.40"] = by["pre"]["mfu"] >= 0.40
    if ratio:
        out["step_time_siamese_over_pre"] = round(ratio["step_time_siamese_over_pre"], 4)
        out["activation_siamese_over_pre"] = round(ratio["saved_activation_siamese_over_pre"], 4)
        met["siamese_step_time_<=1.03"] = ratio["step_time_siamese_over_pre"] <= 1.03
        met["siamese_activation_<=1.10"] = ratio["saved_activation_siamese_over_pre"] <= 1.10
    out["targets_met"] = met
    return out
