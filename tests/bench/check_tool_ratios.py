#!/usr/bin/env python3
"""The GPU path of tools/bench_timm_step.py and tools/bench_dit_step.py
without PyTorch (tools/step_bench_common.py): runs a step benchmark's GPU
mode through run_vtrain_gpu (the emulator's build, tiny model), then checks
vs_torch_line against a stand-in PyTorch record: speed and memory ratios
are vtrain's figures over PyTorch's, siamese/pre copied from the program's
ratio line, and targets_met judged on them. A missing program gives [] (the
tools then print PyTorch's figures alone).

usage: check_tool_ratios.py BIN   (bench_train_step_emu or bench_dit_step_emu)
"""
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from step_bench_common import run_vtrain_gpu, vs_torch_line  # noqa: E402


def main():
    binary = sys.argv[1]
    dit = "dit" in os.path.basename(binary)
    fails = []
    vt = run_vtrain_gpu(binary, "dit_step" if dit else "vtrain_train_step", 4, 2, 1, True, 0.001, ["--tiny"])
    if not vt:
        print("check_tool_ratios: FAIL (the program did not run)")
        return 1
    pt = {"img_per_s": 2.0, "peak_gpu_mb": 0.5}  # a stand-in PyTorch record
    a = types.SimpleNamespace(batch=4, bf16=True, compile=True, compile_mode="default")
    target = 1.3 if dit else 1.5
    line = vs_torch_line("dit_vs_torch" if dit else "vtrain_vs_timm", vt, pt, target, a, "torch")
    print(line)
    by = {j["scheme"]: j for j in vt if "step_ms" in j}
    ratio = next(j for j in vt if "step_time_siamese_over_pre" in j)
    for s in ("pre", "siamese"):
        if abs(line[f"speed_ratio_{s}"] - by[s]["img_per_s"] / 2.0) > 1e-3 * line[f"speed_ratio_{s}"] + 1e-3:
            fails.append(f"speed_ratio_{s}")
        if abs(line[f"memory_ratio_{s}"] - by[s]["peak_gib"] * 1024 / 0.5) > 1e-3 * line[f"memory_ratio_{s}"] + 1e-3:
            fails.append(f"memory_ratio_{s}")
    met = line["targets_met"]
    if met.get(f"speed_pre_>={target}x") != (line["speed_ratio_pre"] >= target):
        fails.append("speed target verdict")
    if met.get("siamese_activation_<=1.10") != (ratio["saved_activation_siamese_over_pre"] <= 1.10):
        fails.append("activation target verdict")
    if ("mfu_pre_>=0.40" in met) == dit:  # the MFU target is DeiT-S's
        fails.append("MFU target present for the wrong model")
    if run_vtrain_gpu("/nonexistent/bench", "x", 4, 1, 1, True, 0) != []:
        fails.append("a missing program is not []")
    for f in fails:
        print("FAIL", f)
    print("check_tool_ratios:", "FAIL" if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
