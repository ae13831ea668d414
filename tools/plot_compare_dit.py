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
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_common import (list_runs, plot_loss_panel, read_jsonl, read_result, run_pattern,  # noqa: E402
                            save_figure, write_csv, write_text)

RUN = run_pattern("cmpdit")


def read_losses(path):
    """[(step, loss)] of a dittrain metrics.jsonl ([] if missing); a non-finite
    loss (written as null) is NaN."""
    return [(m["step"], float("nan") if m["loss"] is None else m["loss"]) for m in read_jsonl(path)
            if "loss" in m and "step" in m and m.get("split", "train") == "train"]


def collect(out):
    rows = []
    for run, m in list_runs(out, RUN):
        status, (div_step, _, _) = read_result(out, run)
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
    write_csv(os.path.join(out, "results.csv"), cols, rows)
    text = "| scheme | lr | depth x width | steps | final loss (MSE+VB) | FID (classifier features) | diverged |\n"
    text += "|---|---|---|---|---|---|---|\n"
    for r in sorted(rows, key=lambda r: (float(r["lr"]), r["scheme"])):
        div = {"diverged": f"yes (non-finite at step {r['diverged_step']})",
               "unfinished": f"not finished (step {r['steps']})"}.get(r["status"], "no")
        text += (f"| {r['scheme']} | {r['lr']} | {r['depth']} x {r['dim']} | {r['steps']} | "
                 f"{r['final_loss'] or '-'} | {r['fid'] or '-'} | {div} |\n")
    write_text(os.path.join(out, "results.md"), text)


def plot(out, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lrs = sorted({r["lr"] for r in rows}, key=float)
    fig, axes = plt.subplots(1, len(lrs), figsize=(6 * len(lrs), 4), squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        plot_loss_panel(ax, sorted((r for r in rows if r["lr"] == lr), key=lambda r: r["scheme"]),
                        lambda r: r["scheme"] + (f" (FID {float(r['fid']):.1f})" if r["fid"] else ""),
                        log_scale=True)
        ax.set_ylabel("training loss (MSE + VB)")
        ax.set_title(f"DiT on CIFAR-10, lr {lr}")
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "loss.png"))
    plt.close(fig)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: tools/plot_compare_dit.py OUT  (the folder of scripts/compare_norms_dit.sh)")
    out = sys.argv[1]
    rows = collect(out)
    if not rows:
        sys.exit(f"plot_compare_dit: no runs (cmpdit_* directories or *.result files) in {out}")
    write_tables(out, rows)
    plot(out, rows)
    print(f"{len(rows)} runs -> {out}/results.md, results.csv, loss.png")


if __name__ == "__main__":
    main()
