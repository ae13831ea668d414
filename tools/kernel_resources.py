#!/usr/bin/env python3
"""Registers, stack, spills and static shared memory of every CUDA kernel, from ptxas.

Compiles each kernels/cuda/*.cu of a configured build once more for one
architecture (default sm_90, the H100/H200) with `nvcc --resource-usage`
(ptxas -v: "Used N registers", "N bytes stack frame, N bytes spill stores,
N bytes spill loads", "N bytes smem"), using the build's own compile lines
(compile_commands.json), and prints one row per kernel, most registers
first, then the kernels that spill and the kernels whose registers cap
their occupancy below half of the SM.

Occupancy by registers (CUDA C++ Programming Guide, "Compute Capabilities",
table "Technical Specifications per Compute Capability", 9.0): 64 K 32-bit
registers and at most 64 resident warps per SM; registers are allocated
per warp in units of 256 (the CUDA Occupancy Calculator's "register
allocation unit size" for 9.0). So a kernel of R registers keeps at most
floor(65536 / (ceil(32 R / 256) * 256)) warps resident: 64 up to 32
registers, 32 warps (50 %) at 64, 8 warps (12.5 %) at 255. This bound
ignores the block size and dynamic shared memory, which only lower it.

    usage: python3 tools/kernel_resources.py [--build build] [--arch 90] [--jobs N]
           python3 tools/kernel_resources.py --parse FILE   (a saved ptxas -v log)
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

REGS_PER_SM = 65536
MAX_WARPS = 64
REG_UNIT = 256  # registers allocated per warp in units of 256

ENTRY = re.compile(r"Compiling entry function '([^']+)' for 'sm_(\d+)'")
PROPS = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")


def warps_by_registers(regs):
    per_warp = math.ceil(regs * 32 / REG_UNIT) * REG_UNIT
    return min(MAX_WARPS, REGS_PER_SM // per_warp) if per_warp else MAX_WARPS


def parse(text, source=""):
    """Kernels of one ptxas -v log: dicts of name (mangled), regs, stack, spill_st, spill_ld, smem."""
    kernels, cur, props_for = [], None, None
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            cur = {"mangled": m.group(1), "sm": int(m.group(2)), "source": source, "regs": 0, "stack": 0,
                   "spill_st": 0, "spill_ld": 0, "smem": 0}
            kernels.append(cur)
            props_for = None
            continue
        m = PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = FRAME.search(line)
        if m and cur is not None and props_for == cur["mangled"]:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = (int(g) for g in m.groups())
            continue
        m = USED.search(line)
        if m and cur is not None:
            cur["regs"] = int(m.group(1))
            sm = SMEM.search(line)  # after the barriers and, when any, the cumulative stack size
            cur["smem"] = int(sm.group(1)) if sm else 0
            cur = None  # the entry's report ends here
    return kernels


def demangle(names):
    if not names:
        return []
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return list(names)


def short_name(demangled):
    """vt::cuda::(anonymous namespace)::k<T, 64>(args) -> k<T, 64>."""
    s = re.sub(r"^void ", "", demangled)
    depth, cut = 0, len(s)
    for i in range(len(s) - 1, -1, -1):  # drop the parameter list: the last top-level (...)
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    s = s[:cut]
    return re.sub(r"(\bvt::cuda::|\bvt::|\(anonymous namespace\)::|\bdetail::)", "", s)


def compile_for_usage(entry, arch, tmp):
    args = shlex.split(entry["command"])
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("--generate-code") or a.startswith("-gencode") or a.startswith("-arch"):
            continue
        if a == "-o":
            skip = True
            continue
        out.append(a)
    obj = os.path.join(tmp, os.path.basename(entry["file"]) + ".o")
    out += [f"--generate-code=arch=compute_{arch},code=sm_{arch}", "--resource-usage", "-o", obj]
    r = subprocess.run(out, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{entry['file']}: nvcc failed:\n{r.stderr[-2000:]}")
    return parse(r.stdout + r.stderr, os.path.relpath(entry["file"], start=os.path.dirname(entry["directory"])))


def print_table(kernels):
    names = demangle([k["mangled"] for k in kernels])
    for k, n in zip(kernels, names):
        k["name"] = short_name(n)
        k["occupancy"] = warps_by_registers(k["regs"]) / MAX_WARPS
    kernels.sort(key=lambda k: (-k["regs"], k["name"]))
    width = min(90, max([len(k["name"]) for k in kernels] + [6]))
    print(f"{'kernel':<{width}}  {'regs':>4}  {'stack B':>7}  {'spill st/ld B':>13}  {'smem B':>6}  {'occ. by regs':>12}  source")
    for k in kernels:
        name = k["name"] if len(k["name"]) <= width else k["name"][: width - 3] + "..."
        spill = f"{k['spill_st']}/{k['spill_ld']}"
        print(f"{name:<{width}}  {k['regs']:>4}  {k['stack']:>7}  {spill:>13}  {k['smem']:>6}  "
              f"{100 * k['occupancy']:>11.1f}%  {k['source']}")
    spills = [k for k in kernels if k["spill_st"] or k["spill_ld"]]
    capped = [k for k in kernels if k["occupancy"] < 0.5]
    print(f"\n{len(kernels)} kernels (sm_{kernels[0]['sm'] if kernels else '?'}).")
    print(f"Spilling ({len(spills)}): registers spilled to local memory (ptxas' spill stores/loads):")
    for k in spills:
        print(f"  {k['name']}: {k['regs']} registers, {k['spill_st']} B spill stores, {k['spill_ld']} B spill loads, "
              f"{k['stack']} B stack")
    print(f"Occupancy capped below 50% by registers ({len(capped)}): more than 64 registers per thread:")
    for k in capped:
        print(f"  {k['name']}: {k['regs']} registers, at most {warps_by_registers(k['regs'])} of 64 warps per SM")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under | head
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="a configured CUDA build (compile_commands.json)")
    ap.add_argument("--arch", default="90", help="compute capability without the dot (default 90)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--parse", metavar="FILE", help="print the table of a saved ptxas -v log instead")
    a = ap.parse_args()
    if a.parse:
        with open(a.parse) as f:
            kernels = parse(f.read(), os.path.basename(a.parse))
        if not kernels:
            sys.exit(f"kernel_resources: {a.parse}: no 'Compiling entry function' lines (a ptxas -v log?)")
        print_table(kernels)
        return
    db = os.path.join(a.build, "compile_commands.json")
    if not os.path.exists(db):
        sys.exit(f"kernel_resources: {db} missing: configure a CUDA build first (cmake -B {a.build} -DVT_CUDA=ON)")
    with open(db) as f:
        entries = [e for e in json.load(f) if re.search(r"kernels/cuda/[^/]+\.cu$", e["file"])]
    if not entries:
        sys.exit(f"kernel_resources: {db} has no kernels/cuda/*.cu: is {a.build} a VT_CUDA build?")
    kernels = []
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for ks in pool.map(lambda e: compile_for_usage(e, a.arch, tmp), entries):
            kernels += ks
    print_table(kernels)


if __name__ == "__main__":
    main()
