#!/usr/bin/env python3
"""Cross-checks vtrain's TensorBoard event files with TensorBoard's own reader.

Not part of CI (needs `pip install tensorboard`, e.g. in a venv).

  # 1. Let the C++ test leave a copy of the event file it writes:
  VT_TB_CHECK_DIR=/tmp/tbcheck build/tests/test_core --gtest_filter='TensorBoard*'
  # 2. Read it with tensorboard's EventAccumulator and compare with the
  #    scalars the test writes (defined again here, independently):
  python tools/tb_read_check.py /tmp/tbcheck

  # Prints TensorBoard's own TFRecord framing of a payload, as hex; the framing
  # test in tests/core/test_tensorboard.cpp embeds the output for "vtrain" and "".
  python tools/tb_read_check.py --frame-hex vtrain

Exit status 0 when every expected scalar is found, 1 otherwise.
"""
import argparse
import io
import sys

import numpy as np


def expected_scalars():
    """{tag: [(step, value)]} written by TensorBoard.WritesScalarsReadBack."""
    out = {"train/loss": [], "train/lr": []}
    for step in range(5):
        out["train/loss"].append((step, 2.5 - 0.25 * step))
        out["train/lr"].append((step, 1e-4 * (step + 1)))
    out["eval/top1"] = [(4, 71.25)]
    out["eval/top5"] = [(4, 90.125)]
    return out


def frame_hex(text):
    from tensorboard.summary.writer.record_writer import RecordWriter

    buf = io.BytesIO()
    RecordWriter(buf).write(text.encode())
    return buf.getvalue().hex()


def check(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    print(f"scalar tags: {sorted(tags)}")
    ok = True
    for tag, want in expected_scalars().items():
        if tag not in tags:
            print(f"MISSING tag {tag}")
            ok = False
            continue
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        print(f"{tag}: {got}")
        if len(got) != len(want):
            print(f"  MISMATCH: {len(got)} events, expected {len(want)}")
            ok = False
            continue
        for (gs, gv), (ws, wv) in zip(got, want):
            # simple_value is a float32 on the wire.
            if gs != ws or np.float32(gv) != np.float32(wv):
                print(f"  MISMATCH at step {gs}: {gv} vs expected step {ws} value {np.float32(wv)}")
                ok = False
    print("OK" if ok else "FAILED")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", help="event file or directory holding one")
    ap.add_argument("--frame-hex", metavar="TEXT", help="print TensorBoard's TFRecord framing of TEXT")
    args = ap.parse_args()
    if args.frame_hex is not None:
        print(frame_hex(args.frame_hex))
        return 0
    if not args.path:
        ap.error("path is required")
    return 0 if check(args.path) else 1


if __name__ == "__main__":
    sys.exit(main())
