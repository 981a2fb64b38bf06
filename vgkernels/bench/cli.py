"""``vgkernels bench SWEEP [options]``: run a named sweep, write Parquet/CSV, print a summary.

Examples::

    vgkernels bench sizes                                  # every usable backend, with OpenSSL
    vgkernels bench sizes --backends vaes_avx512 --sizes 256,16384 --runs 2
    vgkernels bench blocks --ab tail=split tail=full       # A/B/A/B, run ids 0..3
    vgkernels bench copy_below --quick --no-peers
    vgkernels bench sizes --peer boring=/opt/boringssl/build/libcrypto.so
    vgkernels bench --list
    vgkernels bench rev main --ops seal,open_out --sizes 129,256,4k   # this tree vs main

aws-lc (the awscrt wheel: ``pip install 'vgkernels[peers]'``) is a peer wherever OpenSSL is;
``--peer NAME=PATH`` adds any EVP_AEAD library (a BoringSSL or aws-lc libcrypto.so, or a file
whose .symtab has the functions), masked per backend like OpenSSL.
"""

from __future__ import annotations

import argparse
import sys

from .. import command
from ..command import UsageError
from ..variant import Variant
from .sweep import SWEEPS, run


def _variant_arg(text: str) -> str:
    """argparse type of --variant / --ab: the text, once it parses (else a usage error)."""
    try:
        Variant.parse(text)
    except (ValueError, TypeError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _backends_arg(text: str) -> list[str]:
    """argparse type of --backends: known backend names (usability is checked later, against
    the CPU and VG_CPU_FEATURES)."""
    from ..backends import BY_NAME

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown backend(s) {', '.join(unknown) or '(none)'};"
                                         f" known: {', '.join(BY_NAME)}")
    return names


def _csv_ints(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        mult = 1024 if part.endswith("k") else 1
        out.append(int(part.rstrip("k")) * mult)
    return out


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``vgkernels bench``."""
    p = argparse.ArgumentParser(
        prog="vgkernels bench",
        description="Native timing of vgkernels and its peers (serialised TSC, calibrated "
                    "batches, interleaved cases) into tidy Parquet/CSV under DATA/<host>/.")
    p.add_argument("sweep", nargs="?", choices=sorted(SWEEPS),
                   help="named sweep; or `api` (the Python API's call cost), `targets` "
                        "(issue 12's targets), `replay` (target 1's loop replayed on its "
                        "own), `rev BASE` (this tree's kernels against another revision's, "
                        "in one run): each has its own -h")
    p.add_argument("--list", action="store_true", help="list the sweeps and exit")
    from ..backends import BY_NAME

    p.add_argument("--backends", type=_backends_arg, metavar="NAME[,NAME...]",
                   help="comma list of backends, from " + ", ".join(BY_NAME)
                        + " (default: every usable one); one this CPU lacks is an error")
    p.add_argument("--sizes", type=_csv_ints, help="comma list of sizes in bytes (16k = 16384)")
    p.add_argument("--k", type=int, default=33, help="samples per case (default 33)")
    p.add_argument("--passes", type=int, default=3,
                   help="passes over the sweep the k samples are spread over (default 3)")
    p.add_argument("--runs", type=int, help="repetitions (with --ab: A/B pairs, default 2)")
    p.add_argument("--ab", nargs=2, metavar=("VARIANT_A", "VARIANT_B"), type=_variant_arg,
                   help="alternate runs A/B/A/B over two variants, e.g. tail=split tail=full")
    p.add_argument("--variant", type=_variant_arg, metavar="SPEC",
                   help="kernel variant as KEY=VALUE,...: tail=full|split, group=N, "
                        "stitch_min=N, skew=0..9, karatsuba=0|1 (e.g. tail=split,group=8)")
    p.add_argument("--peers", dest="peers", action="store_true", default=None,
                   help="include OpenSSL / cryptography (default: per sweep)")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="measure vgkernels only (no OpenSSL / cryptography cases)")
    p.add_argument("--quick", action="store_true", help="fewer sizes, k=11, 10 us samples")
    p.add_argument("--target-us", type=float, default=20.0, help="sample length (default 20)")
    p.add_argument("--cpu", type=int, help="CPU to pin to (default: the last allowed)")
    p.add_argument("--stack-offset", type=int,
                   help="page offset of the stack at each call (default 2560; -1: as it is)")
    p.add_argument("--key-len", type=int, default=16, choices=(16, 24, 32),
                   help="AES key length in bytes: 16, 24 or 32 (default 16: AES-128)")
    p.add_argument("--aad-len", type=int, default=13,
                   help="bytes of additional authenticated data per call (default 13: a TLS "
                        "1.2 record header)")
    p.add_argument("--nonce-len", type=int, default=12,
                   help="nonce bytes (default 12; others hash the nonce into J0)")
    p.add_argument("--data", default="data", help="results root (default data/)")
    p.add_argument("--out", help="write into this directory instead of DATA/<host>/")
    p.add_argument("--no-samples", action="store_true", help="do not write per-sample rows")
    p.add_argument("--no-save", action="store_true", help="print only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--in-process", action="store_true",
                   help="measure in this process instead of one worker per backend (OpenSSL "
                        "unmasked)")
    p.add_argument("--same-workers", action="store_true",
                   help="keep one worker per backend for all passes (default: new ones per pass)")
    p.add_argument("--libcrypto", help="path of libcrypto (default: $VG_LIBCRYPTO or finder)")
    p.add_argument("--peer", action="append", metavar="NAME=PATH", default=[],
                   help="an EVP_AEAD library to time beside OpenSSL (BoringSSL or aws-lc "
                        "libcrypto.so); repeatable")
    p.add_argument("--gap-ms", type=float, default=0.0,
                   help="idle gap before each round inside a chunk, each followed by an "
                        "untimed warm-up sample (default 0: the chunks visited in between "
                        "spread the rounds)")
    p.add_argument("--no-spread", action="store_true",
                   help="take a chunk's rounds back to back (default: one round per visit, "
                        "every chunk visited once per round)")
    return p


def _show(res) -> str:
    df = res.df
    if df.empty:
        return "(no rows)"
    cols = ["backend", "variant", "impl", "op", "pieces", "run", "min_ns", "median_ns",
            "median_95%", "spread", "GB/s", "cycles/B"]
    show = df.assign(**{
        "median_95%": [f"{lo:.1f}..{hi:.1f}" for lo, hi in zip(df["median_lo_ns"],
                                                               df["median_hi_ns"], strict=True)],
        "GB/s": df["gbps"], "cycles/B": df["cycles_per_byte"]})[cols]
    if show["variant"].nunique() == 1 or not res.meta["params"]["variants"][1:]:
        show = show.drop(columns="variant")
    return show.to_string(index=False, float_format=lambda v: f"{v:.3f}")


def noise_warning(df) -> str | None:
    """A warning when cases' spread (relative IQR of their samples) exceeds NOISY_SPREAD."""
    from .driver import NOISY_SPREAD

    if df.empty or "noisy" not in df:
        return None
    noisy = df[df["noisy"].fillna(False).astype(bool)]
    if noisy.empty:
        return None
    worst = df.loc[df["spread"].idxmax()]
    return (f"warning: {len(noisy)} of {len(df)} cases have a spread above "
            f"{NOISY_SPREAD:.0%} (worst {worst['spread']:.2f}: {worst['impl']} "
            f"{worst['backend']} {worst['op']} {worst['pieces']}); the machine was busy or "
            "noisy: compare medians with their intervals, or measure again")


def _api(argv: list[str]) -> int:
    """``vgkernels bench api``: the Python API's call cost against cryptography's AESGCM."""
    from . import apicost

    p = argparse.ArgumentParser(prog="vgkernels bench api", description=apicost.__doc__)
    p.add_argument("--sizes", type=_csv_ints, default=list(apicost.SIZES),
                   help="comma list of sizes in bytes (default 16,1024,16384)")
    from ..backends import BY_NAME

    p.add_argument("--backend", choices=list(BY_NAME), metavar="NAME",
                   help="backend: " + ", ".join(BY_NAME) + " (default: the best usable)")
    p.add_argument("--k", type=int, default=15, help="interleaved samples per case")
    p.add_argument("--out", help="also write the rows as CSV here")
    args = p.parse_args(argv)
    df = apicost.measure(args.sizes, args.backend, k=args.k)
    if args.out:
        df.to_csv(args.out, index=False)
    print(f"backend {df['backend'].iloc[0]}; min of {args.k} interleaved samples, ns per call")
    print(apicost.table(df).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``vgkernels bench`` (argv without the program name; default sys.argv)."""
    return command.run(_main, list(sys.argv[1:] if argv is None else argv), "vgkernels bench")


def _main(argv: list[str]) -> int:
    if argv[:1] == ["api"]:
        return _api(argv[1:])
    if argv[:1] == ["targets"]:  # issue 12's targets table (vgkernels.bench.targets)
        from .targets import main as targets_main

        return targets_main(argv[1:])
    if argv[:1] == ["replay"]:  # target 1's loop replayed on its own (vgkernels.bench.replay)
        from .targets import main_replay

        return main_replay(argv[1:])
    if argv[:1] == ["rev"]:  # this tree's kernels against another revision's, in one run
        from .revision import main as rev_main

        return rev_main(argv[1:])
    p = parser()
    args = p.parse_args(argv)
    try:
        from .aead import parse_peers

        parse_peers(args.peer)
    except ValueError as e:
        p.error(str(e))
    if args.list or not args.sweep:
        for name, d in SWEEPS.items():
            print(f"{name:11s} {d.doc}")
        return 0 if args.list else 2
    if args.backends:
        from ..backends import availability

        lacking = {b: why for b in args.backends if (why := availability()[b]) is not None}
        if lacking:
            raise UsageError("; ".join(f"backend {b} is not usable here: {why}"
                                       for b, why in lacking.items()))
    res = run(
        args.sweep,
        backends=args.backends,
        sizes=args.sizes, k=args.k, passes=args.passes, runs=args.runs,
        ab=tuple(args.ab) if args.ab else None,
        variant=args.variant, peers=args.peers, quick=args.quick, target_us=args.target_us,
        cpu=args.cpu, stack_offset=args.stack_offset, key_len=args.key_len, aad_len=args.aad_len,
        nonce_len=args.nonce_len,
        progress=not args.no_progress, save=not args.no_save, data=args.data, out=args.out,
        samples=not args.no_samples, libcrypto=args.libcrypto, isolate=not args.in_process,
        fresh=not args.same_workers, aead_peers=args.peer, gap_ms=args.gap_ms,
        spread=not args.no_spread,
    )
    print(_show(res))
    warn = noise_warning(res.df)
    if warn:
        print(warn, file=sys.stderr)
    print(f"\ndriver overhead: {res.overhead_ns:.2f} ns per call (not subtracted)")
    for kind, path in res.paths.items():
        print(f"{kind}: {path}")
    if res.errors:
        print(f"{len(res.errors)} case(s) failed their check:", file=sys.stderr)
        for e in res.errors:
            print(f"  {e}", file=sys.stderr)
    if res.interrupted:
        return 130
    return 1 if res.errors else 0


if __name__ == "__main__":
    sys.exit(main())
