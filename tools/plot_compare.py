#!/usr/bin/env python3
"""Results of scripts/compare_norms.sh: table, Markdown and PNG plots.

Reads OUT/<run>.result (written by the script when a run finished or
diverged) and OUT/<run>/metrics.jsonl (vtrain: lines {"step", ..., "split"};
split "train" carries "loss", split "val" carries "top1"). Runs are named
cmp_<scheme>_lr<lr>_d<depth>w<dim>. Writes into OUT:
  results.csv   scheme, lr, status, steps, final / best top-1, diverged step
                (status: finished | diverged (non-finite loss or gradient;
                vtrain stopped at that step) | collapsed (finished, but the
                final test top-1 is within 1 point of chance, 10%: a Post-Norm
                ViT at a too-high rate often ends there without a NaN)
  results.md    the same as a Markdown table
  loss.png      training loss per scheme, one panel per learning rate
  top1.png      test top-1 per scheme (final, as bars, one group per lr)

Usage: tools/plot_compare.py OUT
"""
import csv
import json
import math
import os
import re
import sys

CHANCE_TOP1 = 10.0  # CIFAR-10
RUN = re.compile(r"^cmp_(?P<scheme>.+)_lr(?P<lr>[^_]+)_d(?P<depth>\d+)w(?P<dim>\d+)$")


def read_metrics(path):
    train, val = [], []
    if not os.path.exists(path):
        return train, val
    with open(path) as f:
        for line in f:
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interrupted run
            if m.get("split") == "train" and "loss" in m:
                train.append((m["step"], m["loss"]))
            elif m.get("split") == "val" and "top1" in m:
                val.append((m["step"], m["top1"]))
    return train, val


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
        train, val = read_metrics(os.path.join(out, run, "metrics.jsonl"))
        finite = [v for _, v in val if math.isfinite(v)]
        if status == "finished" and val and val[-1][1] <= CHANCE_TOP1 + 1.0:
            status = "collapsed"
        rows.append({
            "run": run, "scheme": m["scheme"], "lr": m["lr"], "depth": m["depth"], "dim": m["dim"],
            "status": status, "steps": train[-1][0] if train else 0,
            "final_top1": f"{val[-1][1]:.2f}" if val else "",
            "best_top1": f"{max(finite):.2f}" if finite else "",
            "diverged_step": div_step, "train": train, "val": val,
        })
    return rows


def write_tables(out, rows):
    cols = ["scheme", "lr", "depth", "dim", "status", "steps", "final_top1", "best_top1", "diverged_step"]
    tmp = os.path.join(out, "results.csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols])
    os.replace(tmp, os.path.join(out, "results.csv"))
    head = "| scheme | peak lr | depth x width | steps | final top-1 | best top-1 | diverged |\n"
    head += "|---|---|---|---|---|---|---|\n"
    body = ""
    for r in sorted(rows, key=lambda r: (float(r["lr"]), r["scheme"])):
        div = {"diverged": f"yes (non-finite at step {r['diverged_step']})",
               "collapsed": "collapsed to chance"}.get(r["status"], "no")
        body += (f"| {r['scheme']} | {r['lr']} | {r['depth']} x {r['dim']} | {r['steps']} | "
                 f"{r['final_top1'] or '-'} | {r['best_top1'] or '-'} | {div} |\n")
    tmp = os.path.join(out, "results.md.tmp")
    with open(tmp, "w") as f:
        f.write(head + body)
    os.replace(tmp, os.path.join(out, "results.md"))


def plot(out, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lrs = sorted({r["lr"] for r in rows}, key=float)
    fig, axes = plt.subplots(1, len(lrs), figsize=(6 * len(lrs), 4), squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        for r in sorted((r for r in rows if r["lr"] == lr), key=lambda r: r["scheme"]):
            pts = [(s, v) for s, v in r["train"] if math.isfinite(v)]
            if pts:
                label = r["scheme"] + (f" ({r['status']})" if r["status"] != "finished" else "")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, linewidth=1)
        ax.set_title(f"training loss, peak lr {lr}")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loss.png"), dpi=90)
    plt.close(fig)

    schemes = sorted({r["scheme"] for r in rows})
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(schemes)), 4))
    width = 0.8 / max(1, len(lrs))
    for i, lr in enumerate(lrs):
        vals = []
        for s in schemes:
            r = next((r for r in rows if r["lr"] == lr and r["scheme"] == s), None)
            vals.append(float(r["final_top1"]) if r and r["final_top1"] and r["status"] != "diverged" else 0.0)
        ax.bar([k + i * width for k in range(len(schemes))], vals, width, label=f"lr {lr}")
    ax.set_xticks([k + width * (len(lrs) - 1) / 2 for k in range(len(schemes))])
    ax.set_xticklabels(schemes, rotation=30, fontsize=8)
    ax.set_ylabel("final test top-1 (%), 0 = diverged")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "top1.png"), dpi=90)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_compare.py OUT")
    out = sys.argv[1]
    if not os.path.isdir(out):
        sys.exit(f"plot_compare.py: no such directory '{out}'")
    rows = collect(out)
    if not rows:
        sys.exit(f"plot_compare.py: no finished runs (*.result) in '{out}'")
    write_tables(out, rows)
    plot(out, rows)
    print(f"{len(rows)} runs -> {out}/results.md, results.csv, loss.png, top1.png")


if __name__ == "__main__":
    main()
