#!/usr/bin/env python3
"""Checks tools/plot_compare.py on a synthetic compare_norms.sh output folder,
and tools/plot_compare_dit.py on a synthetic compare_norms_dit.sh one.

The grid holds one run of each kind the script must handle: finished,
collapsed to chance, diverged on a non-finite loss, diverged on a non-finite
gradient norm with a finite loss, and a scheme with no finished run (a run
directory without a .result file). Every expected table entry is computed
here from the synthetic metrics, not copied from the script's output. The
PNG plots are drawn and checked for existence when matplotlib is installed.

Usage: tools/test_plot_compare.py   (exit status 0 = pass)
"""
import importlib.util
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot_compare", os.path.join(HERE, "plot_compare.py"))
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
spec = importlib.util.spec_from_file_location("plot_compare_dit", os.path.join(HERE, "plot_compare_dit.py"))
pcd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pcd)

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)


def write_run(out, run, train, val, result=None):
    """train [(step, loss)], val [(step, top1)]; result: the .result text or None."""
    os.makedirs(os.path.join(out, run))
    with open(os.path.join(out, run, "metrics.jsonl"), "w") as f:
        for step, loss in train:
            line = {"step": step, "split": "train", "loss": loss}
            for l in range(3):  # a stream profile, as log.stream_rms writes it
                line[f"stream_rms/y/{l}"] = 1.0 + l
            f.write(json.dumps(line) + "\n")
        for step, top1 in val:
            f.write(json.dumps({"step": step, "split": "val", "top1": top1,
                                "norm_scale/blocks.0.norm1": 1.0, "norm_scale/blocks.1.norm1": 0.9}) + "\n")
        f.write('{"step": 99, "split": "tr')  # a line cut by an interrupted run
    if result is not None:
        with open(os.path.join(out, run + ".result"), "w") as f:
            f.write(result)


def table_rows(md):
    """{(scheme, lr): [final, best, diverged]} from results.md."""
    rows = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("scheme", "---"):
            rows[(cells[0], cells[1])] = cells[2:]
    return rows


def check_dit_grid():
    """plot_compare_dit.py: final loss = mean of the last 5 logged losses, FID
    from the .fid file, diverged and unfinished runs marked."""
    with tempfile.TemporaryDirectory() as out:
        def run(name, losses, result=None, fid=None):
            os.makedirs(os.path.join(out, name))
            with open(os.path.join(out, name, "metrics.jsonl"), "w") as f:
                for step, loss in losses:
                    f.write(json.dumps({"step": step, "loss": loss}) + "\n")
                f.write('{"step": 9')  # cut line
            if result is not None:
                with open(os.path.join(out, name + ".result"), "w") as f:
                    f.write(result)
            if fid is not None:
                with open(os.path.join(out, name + ".fid"), "w") as f:
                    f.write(fid + "\n")
        pre = [(10 * i, 0.5 / i) for i in range(1, 9)]
        run("cmpdit_pre_lr1e-3_d12w96", pre, "finished\n", "61.25")
        run("cmpdit_post_lr1e-3_d12w96", [(10, 0.4), (20, None)],  # JSON null: a non-finite loss
            "diverged\nnon-finite training loss inf / gradient norm nan at step 20\n")
        run("cmpdit_siamese_lr1e-3_d12w96", [(10, 0.4)])
        rows = pcd.collect(out)
        pcd.write_tables(out, rows)
        with open(os.path.join(out, "results.md")) as f:
            md = f.read()
        got = {}
        for line in md.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 7 and cells[0] not in ("scheme", "---"):
                got[cells[0]] = cells
        tail = [v for _, v in pre[-5:]]
        check(got.get("pre", [None] * 7)[4:] == [f"{sum(tail) / len(tail):.4f}", "61.25", "no"],
              f"DiT pre row: {got.get('pre')}")
        check(got.get("post", [None] * 7)[6] == "yes (non-finite at step 20)", f"DiT post row: {got.get('post')}")
        check(got.get("siamese", [None] * 7)[6] == "not finished (step 10)", f"DiT siamese row: {got.get('siamese')}")
        if importlib.util.find_spec("matplotlib") is not None:
            pcd.plot(out, rows)
            p = os.path.join(out, "loss.png")
            check(os.path.exists(p) and os.path.getsize(p) > 1000, "DiT loss.png written")
            check(not [n for n in os.listdir(out) if ".tmp" in n], "no temporary files left")


def main():
    with tempfile.TemporaryDirectory() as out:
        pre_val = [(100, 31.25), (200, 47.5), (300, 44.0)]
        write_run(out, "cmp_pre_lr5e-4_d12w96", [(10, 2.3), (300, 1.4)], pre_val, "finished\n")
        mix_val = [(100, 10.5)]
        write_run(out, "cmp_mixln_lr3e-3_d12w96", [(10, 2.3), (100, 2.302)], mix_val, "finished\n")
        post_train = [(10, 2.3), (20, 2.9), (30, float("nan"))]
        write_run(out, "cmp_post_lr3e-3_d12w96", post_train, [],
                  "diverged\nnon-finite training loss nan / gradient norm nan at step 30 (rank 0)\n")
        write_run(out, "cmp_deepnorm_lr3e-3_d12w96", [(10, 2.3), (20, 2.1)], [(10, 12.0)],
                  "diverged\nnon-finite training loss 2.054000 / gradient norm inf at step 23\n")
        span_train = [(10, 2.3), (50, 2.0)]
        write_run(out, "cmp_spannorm_lr3e-3_d12w96", span_train, [])  # no .result: still running
        os.makedirs(os.path.join(out, "not_a_run"))

        rows = pc.collect(out)
        pc.write_tables(out, rows)
        with open(os.path.join(out, "results.md")) as f:
            md = f.read()
        got = table_rows(md)
        check("depth x width: 12 x 96" in md, "results.md names the ViT shape")
        check(len(got) == 5, f"5 table rows, got {sorted(got)}")
        want = {
            ("pre", "5e-4"): [f"{pre_val[-1][1]:.2f}", f"{max(v for _, v in pre_val):.2f}", "no"],
            ("mixln", "3e-3"): [f"{mix_val[-1][1]:.2f}", f"{mix_val[-1][1]:.2f}", "no (collapsed to chance)"],
            ("post", "3e-3"): ["-", "-", "yes: step 30, loss nan"],
            ("deepnorm", "3e-3"): ["12.00", "12.00", "yes: step 23, loss 2.054000 (gradient norm inf)"],
            ("spannorm", "3e-3"): ["-", "-", f"not finished (step {span_train[-1][0]})"],
        }
        for k, v in want.items():
            check(got.get(k) == v, f"row {k}: want {v}, got {got.get(k)}")
        # Rows sorted by lr, then scheme.
        order = [k for k in got]
        check(order == sorted(order, key=lambda k: (float(k[1]), k[0])), f"row order {order}")
        with open(os.path.join(out, "results.csv")) as f:
            csv_text = f.read()
        check("diverged_loss" in csv_text.splitlines()[0], "results.csv has the diverged loss column")
        post = next(r for r in rows if r["scheme"] == "post")
        check(post["steps"] == 30 and math.isnan(post["loss"][-1][1]), "the diverged run's last metrics line")

        if importlib.util.find_spec("matplotlib") is None:
            print("plot_compare: matplotlib not installed, plots not checked")
        else:
            pc.plot(out, rows)
            for png in ("loss.png", "top1.png", "stream_rms.png", "norm_scales.png"):
                p = os.path.join(out, png)
                check(os.path.exists(p) and os.path.getsize(p) > 1000, f"{png} written")

    check_dit_grid()
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        sys.exit(1)
    print("plot_compare: ok")


if __name__ == "__main__":
    main()
