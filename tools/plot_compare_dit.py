#!/usr/bin/env python3
"""Results of scripts/compare_norms_dit.sh: table, Markdown and PNG loss curves.

Reads OUT/<run>.result ("finished", or "diverged" and vtrain/dittrain's
non-finite message), OUT/<run>.fid (one number: FID of the run's EMA samples in
a CIFAR-10 classifier's feature space) and OUT/<run>/metrics.jsonl (dittrain:
lines with "step" and "loss", MSE + VB). Runs are named
cmpdit_<scheme>_lr<lr>_d<depth>w<dim>. Writes into OUT:
  results.csv / results.md  scheme, lr, status, steps, final loss (mean of the
                            last 5 logged values), FID, diverged step
  loss.png                  training loss per scheme (log scale), one panel per lr

Usage: tools/plot_compare_dit.py OUT
"""
import csv
import json
import math
import os
import re
import sys

RUN = re.compile(r"^cmpdit_(?P<scheme>.+)_lr(?P<lr>[^_]+)_d(?P<depth>\d+)w(?P<dim>\d+)$")


def read_losses(path):
    """[(step, loss)] of a dittrain metrics.jsonl ([] if missing)."""
    pts = []
    if not os.path.exists(path):
        return pts
    with open(path) as f:
        for line in f:
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interrupted run
            if "loss" in m and "step" in m and m.get("split", "train") == "train":
                pts.append((m["step"], m["loss"]))
    return pts


def collect(out):
    rows = []
    for name in sorted(os.listdir(out)):
        if not name.endswith(".result"):
            continue
        run = name[: -len(".result")]
        m = RUN.match(run)
        if not m:
            continue
        with open(os.path.join(out, name)) as f:
            lines = f.read().splitlines()
        status = lines[0] if lines else "?"
        div_step = ""
        if status == "diverged" and len(lines) > 1:
            s = re.search(r"at step (\d+)", lines[1])
            div_step = s.group(1) if s else "?"
        loss = read_losses(os.path.join(out, run, "metrics.jsonl"))
        tail = [v for _, v in loss[-5:] if math.isfinite(v)]
        fid = ""
        fid_path = os.path.join(out, run + ".fid")
        if os.path.exists(fid_path):
            with open(fid_path) as f:
                fid = f.read().strip()
        rows.append({"run": run, "scheme": m["scheme"], "lr": m["lr"], "depth": m["depth"], "dim": m["dim"],
                     "status": status, "steps": loss[-1][0] if loss else 0,
                     "final_loss": f"{sum(tail) / len(tail):.4f}" if tail else "", "fid": fid,
                     "diverged_step": div_step, "loss": loss})
    return rows


def write_tables(out, rows):
    cols = ["scheme", "lr", "depth", "dim", "status", "steps", "final_loss", "fid", "diverged_step"]
    tmp = os.path.join(out, "results.csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols])
    os.replace(tmp, os.path.join(out, "results.csv"))
    text = "| scheme | lr | depth x width | steps | final loss (MSE+VB) | FID (classifier features) | diverged |\n"
    text += "|---|---|---|---|---|---|---|\n"
    for r in sorted(rows, key=lambda r: (float(r["lr"]), r["scheme"])):
        div = f"yes (non-finite at step {r['diverged_step']})" if r["status"] == "diverged" else "no"
        text += (f"| {r['scheme']} | {r['lr']} | {r['depth']} x {r['dim']} | {r['steps']} | "
                 f"{r['final_loss'] or '-'} | {r['fid'] or '-'} | {div} |\n")
    tmp = os.path.join(out, "results.md.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, "results.md"))


def plot(out, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lrs = sorted({r["lr"] for r in rows}, key=float)
    fig, axes = plt.subplots(1, len(lrs), figsize=(6 * len(lrs), 4), squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        for r in sorted((r for r in rows if r["lr"] == lr), key=lambda r: r["scheme"]):
            pts = [(s, v) for s, v in r["loss"] if math.isfinite(v) and v > 0]
            if not pts:
                continue
            label = r["scheme"] + (f" (FID {float(r['fid']):.1f})" if r["fid"] else "")
            (line,) = ax.plot([s for s, _ in pts], [v for _, v in pts], label=label)
            if r["status"] == "diverged":
                ax.axvline(pts[-1][0], color=line.get_color(), linestyle=":")
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (MSE + VB)")
        ax.set_title(f"DiT on CIFAR-10, lr {lr}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = os.path.join(out, "loss.tmp.png")
    fig.savefig(tmp, dpi=90)
    os.replace(tmp, os.path.join(out, "loss.png"))
    plt.close(fig)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: tools/plot_compare_dit.py OUT  (the folder of scripts/compare_norms_dit.sh)")
    out = sys.argv[1]
    rows = collect(out)
    if not rows:
        sys.exit(f"plot_compare_dit: no cmpdit_*.result files in {out}")
    write_tables(out, rows)
    plot(out, rows)
    print(f"{len(rows)} runs -> {out}/results.md, results.csv, loss.png")


if __name__ == "__main__":
    main()
