"""``vgkernels ct-timing``: the dudect-style timing test (vgkernels.ct.timing) from the shell.

Exit status 0 when the verdicts are as expected (no kernel row above the threshold, and the
early-exit tag compare and plaintext-branch controls above it), 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import sys

from . import timing

# Controls whose leak must show in the time (the S-box table sits in L1: see timing's doc).
MUST_LEAK = ("open", "seal")


def expected(r: timing.Result) -> bool:
    """Is this result the verdict it should be?"""
    if r.impl == "kernel":
        return not r.leak
    return r.leak or r.op not in MUST_LEAK


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="vgkernels ct-timing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", action="append", help="a backend (repeatable; default: every "
                   "usable one)")
    p.add_argument("--op", action="append", choices=timing.OPS, help="an operation (repeatable)")
    p.add_argument("--samples", type=int, default=100_000, help="samples per test (both classes)")
    p.add_argument("--batch", type=int, default=4, help="calls per sample")
    p.add_argument("--no-controls", action="store_true", help="skip the negative controls")
    p.add_argument("--csv", help="also write the results to this CSV file")
    args = p.parse_args(argv)
    rs = timing.run(args.samples, args.batch, args.backend, tuple(args.op or timing.OPS),
                    not args.no_controls)
    print(f"Welch's t, class 0 against class 1; |t| > {timing.THRESHOLD} is a leak. "
          f"{args.batch} calls per sample, TSC ticks.")
    print(f"{'impl':8} {'backend':17} {'op':9} {'samples':>8} {'median0':>8} {'median1':>8} "
          f"{'t':>9} {'crop':>5} {'t_raw':>8}  verdict")
    ok = True
    for r in rs:
        good = expected(r)
        ok &= good
        verdict = ("LEAK" if r.leak else "no leak found") + ("" if good else "  (UNEXPECTED)")
        print(f"{r.impl:8} {r.backend:17} {r.op:9} {r.samples:8d} {r.median0:8.0f} "
              f"{r.median1:8.0f} {r.t:9.2f} {r.crop:5.2f} {r.t_raw:8.2f}  {verdict}")
    if args.csv:
        rows = [r.row() for r in rs]
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
