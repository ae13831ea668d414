#!/usr/bin/env python3
"""Results of scripts/compare_norms.sh: table, Markdown and PNG plots.

Reads OUT/<run>.result (written by the script when a run finished or
diverged) and OUT/<run>/metrics.jsonl (vtrain: lines {"step", ..., "split"};
split "train" carries "loss", split "val" carries "top1"). Runs are named
cmp_<scheme>_lr<lr>_d<depth>w<dim>; a run directory without a .result file
(still running, interrupted or failed) is listed as "unfinished" with what it
logged so far, so a scheme none of whose runs finished still has its rows.
Writes into OUT:
  results.csv   scheme, lr, status, steps, final / best top-1, diverged step
                and loss (status: finished | diverged (non-finite loss or
                gradient; vtrain stopped at that step) | collapsed (finished,
                but the final test top-1 is within 1 point of chance, 10%: a
                Post-Norm ViT at a too-high rate often ends there without a
                NaN) | unfinished)
  results.md    Markdown table: scheme | lr | final top-1 | best top-1 |
                diverged (step, loss), under a line naming the ViT's depth x width
  loss.png      training loss per scheme, one panel per learning rate; a
                diverged run ends in an x at its last finite loss with a dotted
                line at the step that went non-finite
  top1.png      test top-1 per scheme (final, as bars, one group per lr)
  stream_rms.png  the paper's Fig. 2: RMS of the x (solid) and y (dashed)
                streams after each block, at the last metrics line that has
                them (log.stream_rms), per scheme, one panel per lr
  norm_scales.png  mean |weight| of each block LayerNorm at the last
                evaluation (log.norm_scales), one line per norm of the block
                (e.g. SiameseNorm's post_norm1 vs pre_norm1: the streams'
                relative contribution), one panel per run
  prune.png     top-1 vs blocks removed from the end, per scheme, one panel
                per lr, from OUT/<run>.prune ("k top1" lines, written by
                compare_norms.sh PRUNE_LAST=k); only when such files exist

Usage: tools/plot_compare.py OUT
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_common import (list_runs, parse_divergence, plot_loss_panel, read_jsonl, read_result,  # noqa: E402
                            run_pattern, save_figure, write_csv, write_text)

CHANCE_TOP1 = 10.0  # CIFAR-10
RUN = run_pattern("cmp")


def stream_profile(m):
    """{"x": [(block, rms)], "y": [...]} of a metrics line's stream_rms/<s>/<l> keys."""
    prof = {"x": [], "y": []}
    for k, v in m.items():
        parts = k.split("/")
        if len(parts) == 3 and parts[0] == "stream_rms" and parts[1] in prof and v is not None:
            prof[parts[1]].append((int(parts[2]), v))
    for s in prof.values():
        s.sort()
    return prof


def read_metrics(path):
    """(train [(step, loss)], val [(step, top1)], last stream profile {x, y} or None,
    last evaluation's norm scales {state-dict name: mean |weight|})."""
    train, val, rms, scales = [], [], None, {}
    for m in read_jsonl(path):
        if m.get("split") == "train" and "loss" in m:
            train.append((m["step"], m["loss"]))
            prof = stream_profile(m)
            if prof["x"] or prof["y"]:
                rms = prof
        elif m.get("split") == "val" and isinstance(m.get("top1"), (int, float)):
            val.append((m["step"], m["top1"]))
            got = {k[len("norm_scale/"):]: v for k, v in m.items() if k.startswith("norm_scale/")}
            if got:
                scales = got
    return train, val, rms, scales


def read_prune(path):
    """[(blocks removed, top1)] from a compare_norms.sh .prune file, [] if none."""
    if not os.path.exists(path):
        return []
    pts = []
    with open(path) as f:
        for line in f:
            k, top1 = line.split()
            pts.append((int(k), float(top1)))
    return pts


def collect(out):
    rows = []
    for run, m in list_runs(out, RUN):
        status, (div_step, div_loss, div_gnorm) = read_result(out, run)
        train, val, rms, scales = read_metrics(os.path.join(out, run, "metrics.jsonl"))
        finite = [v for _, v in val if math.isfinite(v)]
        if status == "finished" and val and val[-1][1] <= CHANCE_TOP1 + 1.0:
            status = "collapsed"
        rows.append({
            "run": run, "scheme": m["scheme"], "lr": m["lr"], "depth": m["depth"], "dim": m["dim"],
            "status": status, "steps": train[-1][0] if train else 0,
            "final_top1": f"{val[-1][1]:.2f}" if val else "",
            "best_top1": f"{max(finite):.2f}" if finite else "",
            "diverged_step": div_step, "diverged_loss": div_loss, "diverged_grad_norm": div_gnorm,
            "loss": train, "val": val, "rms": rms, "scales": scales,
            "prune": read_prune(os.path.join(out, run + ".prune")),
        })
    return rows


def diverged_cell(r):
    """The Markdown table's "diverged (step, loss)" entry of a run."""
    if r["status"] == "diverged":
        cell = f"yes: step {r['diverged_step']}, loss {r['diverged_loss']}"
        try:
            loss_finite = math.isfinite(float(r["diverged_loss"]))
        except ValueError:
            loss_finite = False
        # A finite loss there means the gradient norm was the non-finite one.
        return cell + (f" (gradient norm {r['diverged_grad_norm']})" if loss_finite else "")
    return {"collapsed": "no (collapsed to chance)",
            "unfinished": f"not finished (step {r['steps']})"}.get(r["status"], "no")


def write_tables(out, rows):
    cols = ["scheme", "lr", "depth", "dim", "status", "steps", "final_top1", "best_top1", "diverged_step",
            "diverged_loss"]
    write_csv(os.path.join(out, "results.csv"), cols, rows)
    shapes = sorted({f"{r['depth']} x {r['dim']}" for r in rows})
    head = f"ViT depth x width: {', '.join(shapes)}; top-1 on the CIFAR-10 test set (%).\n\n"
    head += "| scheme | lr | final top-1 | best top-1 | diverged (step, loss) |\n"
    head += "|---|---|---|---|---|\n"
    body = ""
    for r in sorted(rows, key=lambda r: (float(r["lr"]), r["scheme"], int(r["depth"]), int(r["dim"]))):
        scheme = r["scheme"] + (f" (d{r['depth']}w{r['dim']})" if len(shapes) > 1 else "")
        body += (f"| {scheme} | {r['lr']} | {r['final_top1'] or '-'} | {r['best_top1'] or '-'} | "
                 f"{diverged_cell(r)} |\n")
    write_text(os.path.join(out, "results.md"), head + body)


def plot(out, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lrs = sorted({r["lr"] for r in rows}, key=float)
    fig, axes = plt.subplots(1, len(lrs), figsize=(6 * len(lrs), 4), squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        plot_loss_panel(ax, sorted((r for r in rows if r["lr"] == lr), key=lambda r: r["scheme"]),
                        lambda r: r["scheme"] + (f" ({r['status']})" if r["status"] != "finished" else ""))
        ax.set_title(f"training loss, peak lr {lr}")
        ax.set_ylabel("loss")
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "loss.png"))
    plt.close(fig)

    schemes = sorted({r["scheme"] for r in rows})
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(schemes)), 4))
    width = 0.8 / max(1, len(lrs))
    for i, lr in enumerate(lrs):
        vals = []
        for s in schemes:
            r = next((r for r in rows if r["lr"] == lr and r["scheme"] == s), None)
            if r and r["status"] == "diverged":
                vals.append(0.0)
            elif r and r["final_top1"] and r["status"] != "unfinished":
                vals.append(float(r["final_top1"]))
            else:
                vals.append(float("nan"))  # no run, or not finished: no bar
        ax.bar([k + i * width for k in range(len(schemes))], vals, width, label=f"lr {lr}")
    ax.set_xticks([k + width * (len(lrs) - 1) / 2 for k in range(len(schemes))])
    ax.set_xticklabels(schemes, rotation=30, fontsize=8)
    ax.set_ylabel("final test top-1 (%), 0 = diverged, none = unfinished")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "top1.png"))
    plt.close(fig)

    plot_per_lr(plt, out, rows, lrs, "stream_rms.png", plot_stream_rms)
    if any(r["prune"] for r in rows):
        plot_per_lr(plt, out, rows, lrs, "prune.png", plot_prune)
    if any(r["scales"] for r in rows):
        plot_norm_scales(plt, out, [r for r in rows if r["scales"]])


BLOCK_NORM = re.compile(r"^blocks\.(\d+)\.(.+)$")


def plot_norm_scales(plt, out, runs):
    runs = sorted(runs, key=lambda r: (float(r["lr"]), r["scheme"]))
    cols = min(5, len(runs))
    rows_n = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.2 * cols, 2.6 * rows_n), squeeze=False)
    for ax in axes.flat[len(runs):]:
        ax.axis("off")
    for ax, r in zip(axes.flat, runs):
        per_norm = {}
        for name, v in r["scales"].items():
            m = BLOCK_NORM.match(name)
            if m and v is not None:
                per_norm.setdefault(m.group(2), []).append((int(m.group(1)), v))
        for norm, pts in sorted(per_norm.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", linewidth=1, label=norm)
        ax.set_title(f"{r['scheme']}, lr {r['lr']}", fontsize=8)
        ax.set_xlabel("block", fontsize=7)
        ax.set_ylabel("mean |LN weight|", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.xaxis.get_major_locator().set_params(integer=True)
        if per_norm:
            ax.legend(fontsize=5)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "norm_scales.png"))
    plt.close(fig)


def plot_per_lr(plt, out, rows, lrs, name, draw):
    """One panel per learning rate, drawn by draw(ax, runs of that lr, lr)."""
    fig, axes = plt.subplots(1, len(lrs), figsize=(6 * len(lrs), 4), squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        draw(ax, sorted((r for r in rows if r["lr"] == lr), key=lambda r: r["scheme"]), lr)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, name))
    plt.close(fig)


def plot_stream_rms(ax, runs, lr):
    # The paper's Fig. 2: Pre-Norm's stream grows with depth, SiameseNorm's x
    # stays bounded (its y grows like Pre-Norm's).
    for i, r in enumerate(runs):
        if not r["rms"]:
            continue
        color = f"C{i % 10}"
        for stream, style in (("x", "-"), ("y", "--")):
            pts = [(l, v) for l, v in r["rms"][stream] if math.isfinite(v) and v > 0]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, linewidth=1,
                        marker=".", label=f"{r['scheme']} {stream}")
    ax.set_yscale("log")
    ax.set_title(f"stream RMS after each block (last logged step), peak lr {lr}")
    ax.set_xlabel("block")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("RMS (x solid, y dashed)")


def plot_prune(ax, runs, lr):
    for r in runs:
        if r["prune"]:
            ax.plot([p[0] for p in r["prune"]], [p[1] for p in r["prune"]], marker="o", linewidth=1,
                    label=r["scheme"])
    ax.axhline(CHANCE_TOP1, color="gray", linewidth=0.5, linestyle=":")
    ax.set_title(f"layer pruning, peak lr {lr}")
    ax.set_xlabel("blocks removed from the end")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("test top-1 (%)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_compare.py OUT")
    out = sys.argv[1]
    if not os.path.isdir(out):
        sys.exit(f"plot_compare.py: no such directory '{out}'")
    rows = collect(out)
    if not rows:
        sys.exit(f"plot_compare.py: no runs (cmp_* directories or *.result files) in '{out}'")
    write_tables(out, rows)
    plot(out, rows)
    extra = (", norm_scales.png" if any(r["scales"] for r in rows) else "") + \
        (", prune.png" if any(r["prune"] for r in rows) else "")
    print(f"{len(rows)} runs -> {out}/results.md, results.csv, loss.png, top1.png, stream_rms.png{extra}")


if __name__ == "__main__":
    main()
