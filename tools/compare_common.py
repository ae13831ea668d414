"""What tools/plot_compare.py (ViT grid) and tools/plot_compare_dit.py (DiT grid)
share: reading a grid folder written by scripts/compare_norms*.sh (run names,
.result files, metrics.jsonl), writing tables atomically, and the training-loss
panel with its divergence marks.

A grid folder OUT holds, per run:
  OUT/<run>.result   "finished", or "diverged" and the trainer's message
                     "non-finite training loss L / gradient norm G at step N ..."
                     (scripts/compare_lib.sh); no file: the run is unfinished
  OUT/<run>/metrics.jsonl  the trainer's metrics, one JSON object per line
"""
import csv
import json
import math
import os
import re


def run_pattern(prefix):
    """Regex of the run names <prefix>_<scheme>_lr<lr>_d<depth>w<dim>."""
    return re.compile(rf"^{prefix}_(?P<scheme>.+)_lr(?P<lr>[^_]+)_d(?P<depth>\d+)w(?P<dim>\d+)$")


def list_runs(out, pattern):
    """[(run, match)] of every run with a .result file or a run folder, sorted."""
    names = os.listdir(out)
    runs = {n[: -len(".result")] for n in names if n.endswith(".result")}
    runs |= {n for n in names if os.path.isdir(os.path.join(out, n))}
    return [(r, m) for r in sorted(runs) for m in [pattern.match(r)] if m]


def read_jsonl(path):
    """The JSON objects of a metrics.jsonl ([] if missing); a line cut by an
    interrupted run is skipped."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def parse_divergence(line):
    """(step, loss, gradient norm) as strings from the trainer's message "non-finite
    training loss L / gradient norm G at step N ..."; "?" for a missing part."""
    def find(pattern):
        m = re.search(pattern, line)
        return m.group(1) if m else "?"
    return find(r"at step (\d+)"), find(r"loss (\S+)"), find(r"gradient norm (\S+)")


def read_result(out, run):
    """(status, divergence) of a run: status "finished" | "diverged" | "unfinished"
    (| whatever else the file says); divergence (step, loss, gradient norm) as
    strings for a diverged run, else ("", "", "")."""
    path = os.path.join(out, run + ".result")
    if not os.path.exists(path):
        return "unfinished", ("", "", "")
    with open(path) as f:
        lines = f.read().splitlines()
    status = lines[0] if lines else "?"
    if status == "diverged":
        return status, parse_divergence(lines[1] if len(lines) > 1 else "")
    return status, ("", "", "")


def replace_atomically(path, write):
    """Calls write(file) on path + ".tmp" and renames it over path, so a reader
    never sees a half-written table or image."""
    root, ext = os.path.splitext(path)
    tmp = root + ".tmp" + ext  # keeps the extension: matplotlib picks the format from it
    with open(tmp, "w" if ext in (".csv", ".md") else "wb", **({"newline": ""} if ext == ".csv" else {})) as f:
        write(f)
    os.replace(tmp, path)


def write_csv(path, cols, rows):
    def write(f):
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols])
    replace_atomically(path, write)


def write_text(path, text):
    replace_atomically(path, lambda f: f.write(text))


def save_figure(fig, path, dpi=90):
    replace_atomically(path, lambda f: fig.savefig(f, dpi=dpi, format=os.path.splitext(path)[1][1:]))


def plot_loss_panel(ax, runs, label_of, log_scale=False):
    """Training loss of each run ({"loss": [(step, loss)], "status", "diverged_step"})
    on one axis. A diverged run ends in an x at its last finite loss, with a dotted
    line at the step that went non-finite."""
    for r in runs:
        pts = [(s, v) for s, v in r["loss"] if v is not None and math.isfinite(v) and (v > 0 or not log_scale)]
        color = None
        if pts:
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label_of(r), linewidth=1)
            color = line.get_color()
        if r["status"] == "diverged" and r["diverged_step"].isdigit():
            if pts:
                ax.plot([pts[-1][0]], [pts[-1][1]], "x", color=color, markersize=8)
            ax.axvline(int(r["diverged_step"]), color=color or "gray", linestyle=":", linewidth=1,
                       label=None if pts else label_of(r))
    if log_scale:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
