"""``vgkernels predict [--cpu NAME ...] [--backend B ...] [--variant SPEC ...]``: llvm-mca's
prediction of the stitched loop, the leftover chunk's loop and the key setup for CPUs not at
hand."""

from __future__ import annotations

import argparse
import sys

from ..variant import Variant
from . import mca
from .targets import CPUS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vgkernels predict",
        description="Compile a backend's kernels for a named CPU (LLVM CPU name) and run "
                    "llvm-mca on the stitched loop, the leftover chunk's loop and the key "
                    "setup: cycles per iteration, per block and per byte, the busiest ports "
                    "and the bound. Backends the CPU lacks features for are left out.")
    p.add_argument("--cpu", nargs="+", default=list(CPUS), metavar="NAME",
                   help=f"LLVM CPU names (default: {' '.join(CPUS)})")
    p.add_argument("--backend", nargs="+", metavar="B", help="backends (default: every one "
                   "the CPU supports, portable excepted)")
    p.add_argument("--variant", nargs="+", metavar="SPEC",
                   help="variants such as group=16,karatsuba=false (default: the backend's "
                        "default); 'sweep' for group / karatsuba / skew / stitch_min")
    p.add_argument("--region", nargs="+", choices=("stitch", "leftover", "key_setup", "ctr",
                                                   "ghash"),
                   default=["stitch", "leftover", "key_setup"],
                   help="regions (ctr / ghash: the keystream and GHASH loops alone)")
    p.add_argument("--clock-ghz", type=float, help="core clock, for TSC ticks per byte")
    p.add_argument("--tsc-ghz", type=float, help="TSC rate (default: the core clock)")
    p.add_argument("--wide", action="store_true", help="every column")
    p.add_argument("--recommend", metavar="PATH",
                   help="also derive the per-CPU recommendation table (best variant of each "
                        "backend; use with --variant sweep) and write it here")
    return p


def _variants(specs: list[str] | None):
    if not specs:
        return "default"
    if specs == ["sweep"]:
        return "sweep"
    return [(s, Variant.parse(s)) for s in specs]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    why = mca.missing_reason()
    if why is not None:
        print(f"vgkernels predict: {why}", file=sys.stderr)
        return 2
    from . import predictor  # lazy: pandas, +0.35 s on `vgkernels predict -h`

    try:
        df = predictor.table(args.cpu, args.backend, _variants(args.variant), args.region)
    except ValueError as e:
        print(f"vgkernels predict: {e}", file=sys.stderr)
        return 2
    if df.empty:
        print("no backend is supported by the CPU(s) given", file=sys.stderr)
        return 1
    if args.clock_ghz:
        df["ticks_per_byte"] = df["cycles_per_byte"] * (args.tsc_ghz or args.clock_ghz) \
            / args.clock_ghz
    cols = ["cpu", "backend", "variant", "region", "cycles_per_iteration", "per_iteration",
            "cycles_per_block", "cycles_per_byte", *(["ticks_per_byte"] if args.clock_ghz
                                                     else []),
            "key_setup_cycles", "bottleneck", "busiest", "busiest_users"]
    show = df if args.wide else df[cols]
    print(show.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    print(f"\nllvm-mca {mca.find().version}; stitch/leftover per_iteration: 16-byte blocks, "
          "key_setup: H powers (key_setup_cycles: the whole H^2..H^72 table)")
    if args.recommend:
        from . import recommend  # lazy: as predictor

        path = recommend.write(recommend.derive(df, mca.find().version), args.recommend)
        print(f"recommendations: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
