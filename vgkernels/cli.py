"""The `vgkernels` command.

  vgkernels [info]                 CPU, backends (with the reason each unusable one is), self-check
  vgkernels report [--profile ...] run the notebooks into reports/<date>-<host>-<llvm cpu>/
  vgkernels bench SWEEP [...]      run a measurement sweep (see `vgkernels bench -h`)
  vgkernels ct-timing [...]        dudect-style timing test of the kernels and the controls
  vgkernels export BACKEND DIR     AOT: object file + C header
  vgkernels asm BACKEND [--ir]     the optimised assembly (or IR) of a backend's kernels
  vgkernels asm BACKEND --against REV   which functions differ from another revision
  vgkernels notebooks DIR          copy the report notebooks out (to open in JupyterLab)
  vgkernels compare A B            two report or data folders: ratios, spreads, what changed
  vgkernels tune                   measure this CPU's copy_below thresholds and install them
  vgkernels predict [--cpu ...]    llvm-mca's prediction for CPUs not at hand (see -h)

A user error (an unknown name, a bad VG_CPU_FEATURES, a backend this CPU lacks) is one line
on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__, aot, backends, cpu, dispatch, listing, machine
from .backends import BY_NAME, Backend
from .command import UsageError, backend_row, run
from .listing import CPUS, cpu_name
from .variant import Variant

VARIANT_HELP = ("kernel variant as KEY=VALUE,...: tail=full|split, group=N (the backend's "
                "groups), stitch_min=N (group..2*group), skew=0..9, karatsuba=0|1; default: "
                "the backend's defaults")


def _variant(be, text: str | None, cpu: str | None = None):
    """A resolved Variant from ``--variant`` text, its defaults those for LLVM CPU ``cpu``
    (UsageError when it does not fit the backend)."""
    try:
        return Variant.parse(text).resolved(be, cpu)
    except (ValueError, TypeError) as e:
        raise UsageError(f"--variant {text!r}: {e}") from None


def _info(args: argparse.Namespace) -> int:
    """The machine, every backend (why an unusable one is), the copy_below thresholds each
    uses (and from which table), then a self-check.  A bad VG_CPU_FEATURES or VG_BACKEND is
    reported after the table, with a non-zero exit, never a traceback."""
    # lazy: numba's reference model and pandas, +0.3 s each on `vgkernels --help`
    from . import selfcheck
    from .predict import recommend

    print(f"vgkernels {__version__}")
    print(f"machine: {machine.caption()}")
    print(f"features: {', '.join(sorted(cpu.host_features())) or '-'}")
    problems = []
    try:
        avail = backends.availability()
        if cpu.ENV_VAR in os.environ:
            print(f"{cpu.ENV_VAR}={os.environ[cpu.ENV_VAR]} -> usable: "
                  f"{', '.join(sorted(cpu.usable_features())) or 'none'}")
    except cpu.UnknownFeature as exc:
        problems.append(str(exc))
        avail = backends.availability(",".join(cpu.FEATURES))  # the host alone
        print(f"{cpu.ENV_VAR} ignored for the table below (it is invalid)")
    print("backends:")
    for name, why in avail.items():
        print(f"  {name:18s} {'usable' if why is None else 'unusable: ' + why}")
    print("copy_below (aligned, unaligned) for pieces, and the table it comes from:")
    for row in dispatch.table_rows():
        print(f"  {row['backend']:18s} ({row['aligned']}, {row['unaligned']}) "
              f"[{row['source']}] {row['from']}")
    line = recommend.advice(recommend.shipped(), machine.cpu_key()["llvm_cpu"])
    if line:
        print(line)
    if not problems:
        try:
            print(f"default backend: {backends.choose().name}")
        except (ValueError, RuntimeError) as exc:
            problems.append(f"VG_BACKEND={os.environ.get('VG_BACKEND')}: {exc}")
    if problems:
        for msg in problems:
            print(f"error: {msg}", file=sys.stderr)
        return 2
    if args.no_check:
        return 0
    print(f"self-check ({args.cases} random cases each, against the reference model and "
          "cryptography, plus Wycheproof):")
    ok = True
    for r in selfcheck.run(args.cases):
        how = "cached" if r.from_cache else f"compiled in {r.compile_seconds:.2f} s"
        status = "ok" if r.ok else f"FAILED ({len(r.failures)}): " + "; ".join(r.failures[:3])
        print(f"  {r.backend:18s} {status} ({how})")
        ok &= r.ok
    return 0 if ok else 1


def _compare(args: argparse.Namespace) -> int:
    """Two report or data folders side by side: per case the ratio B/A, both spreads, and
    whether the change exceeds the noise."""
    # lazy: scipy and pandas, +0.95 s on `vgkernels --help`
    import pandas as pd

    from .analysis import compare as cmp
    from .bench.store import DataSchemaError, load_folder

    runs = []
    for path in (args.a, args.b):
        try:
            runs.append(load_folder(path))
        except (DataSchemaError, FileNotFoundError) as exc:
            print(f"vgkernels compare: {exc}", file=sys.stderr)
            return 2
    (a, a_s), (b, b_s) = runs
    table = cmp.compare(a, b, a_s, b_s, alpha=args.alpha, min_change=args.min_change)
    if table.empty:
        print("vgkernels compare: the two runs measured no case in common", file=sys.stderr)
        return 1
    hosts = [", ".join(sorted(set(map(str, x.get("host", pd.Series(["?"])).dropna()))))
             for x in (a, b)]
    print(f"A: {args.a} ({hosts[0]})\nB: {args.b} ({hosts[1]})")
    cols = [c for c in ("impl", "backend", "op", "shape", "bytes", "median_ns_a", "median_ns_b",
                        "ratio", "spread_a", "spread_b", "p", "change") if c in table.columns]
    show = table if args.all else table[table["significant"]]
    show = show.sort_values("ratio")
    if show.empty:
        print("no change exceeds the noise")
    else:
        print(show[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    s = cmp.summary(table)
    print(f"\n{s['cases']} cases in common: geometric mean B/A {s['geomean_ratio']:.3f} "
          f"(best {s['best_ratio']:.3f}, worst {s['worst_ratio']:.3f}); {s['faster']} faster, "
          f"{s['slower']} slower, {s['same']} within the noise (alpha {args.alpha}, at least "
          f"{args.min_change:.0%} apart)")
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0


def _tune(argv: list[str]) -> int:
    """``vgkernels tune``: derive this CPU's copy_below thresholds (notebook 04, full profile by
    default) and install them in the user's data directory, where AesGcm looks first."""
    p = argparse.ArgumentParser(prog="vgkernels tune", description=_tune.__doc__)
    p.add_argument("--profile", choices=("tiny", "quick", "full"), default="full",
                   help="measurement depth (default full: about 10 minutes a backend)")
    p.add_argument("--backends", nargs="+", metavar="NAME", help="default: every usable one")
    p.add_argument("--out", help="report folder for the evidence (default reports/...)")
    args = p.parse_args(argv)
    rest = ["--profile", args.profile, "--only", "04", "-p", "install=true"]
    if args.backends:
        rest += ["--backends", *args.backends]
    if args.out:
        rest += ["--out", args.out]
    rc = _delegate("report", rest)
    if rc == 0:
        dispatch.reload()
        for row in dispatch.table_rows():
            print(f"  {row['backend']:18s} ({row['aligned']}, {row['unaligned']}) "
                  f"[{row['source']}]")
    return rc


def _export(args: argparse.Namespace) -> int:
    be = backend_row(args.backend)
    cpu_ = cpu_name(be, args.cpu)
    obj, hdr = aot.export(be, args.dir, _variant(be, args.variant, cpu_), cpu_)
    print(obj)
    print(hdr)
    return 0


def _asm(args: argparse.Namespace) -> int:
    be = backend_row(args.backend)
    if args.against:
        return _asm_against(be, args)
    prefix, text = listing.text(be, _variant(be, args.variant, cpu_name(be, args.cpu)),
                                args.cpu, ir=args.ir)
    if args.function:
        try:
            text = listing.pick(listing.functions(text, ir=args.ir), prefix, args.function)
        except KeyError as e:
            raise UsageError(e.args[0]) from None
    sys.stdout.write(text)
    return 0


def _asm_against(be: Backend, args: argparse.Namespace) -> int:
    """``asm BACKEND --against REV``: which functions' machine code differs from REV's (a git
    revision or a tree), both compiled here for the same CPU; with --function, the diff."""
    import difflib

    from .bench.revision import base_ir, shadowed_tree  # lazy: pandas

    if args.variant or args.ir:
        raise UsageError("--against compares the default variant's assembly (no --variant, "
                         "no --ir)")
    if warning := shadowed_tree():
        print(warning, file=sys.stderr)
    cpu_ = be.scheduled_cpu(listing.cpu_name(be, args.cpu))
    try:  # their defaults for the same CPU as ours (Karatsuba follows the CPU)
        dump = base_ir(args.against, [be.name], cpu_)
    except (ValueError, RuntimeError) as e:
        raise UsageError(str(e)) from None
    theirs_be = dump["backends"][be.name]
    prefix, ours = listing.assembly(be, Variant(), cpu_)
    theirs = listing.assembly_of(theirs_be["prefix"], theirs_be["ir"], theirs_be["features"],
                                 cpu_)
    if args.function:
        try:
            a = listing.pick(listing.functions(ours), prefix, args.function)
            b = listing.pick(listing.functions(theirs), theirs_be["prefix"],
                             args.function.replace(prefix, theirs_be["prefix"]))
        except KeyError as e:
            raise UsageError(e.args[0]) from None
        diff = difflib.unified_diff(listing.instructions(b, theirs_be["prefix"]),
                                    listing.instructions(a, prefix), f"{args.against}", "here",
                                    lineterm="")
        out = "\n".join(diff)
        print(out if out else f"{args.function}: same machine code as {args.against}")
        return 0
    rows = listing.compare(ours, prefix, theirs, theirs_be["prefix"])
    width = max(len(r["function"]) for r in rows)
    print(f"{'function':<{width}}  {'status':<10}  {'here':>6}  {'there':>6}")
    for r in rows:
        print(f"{r['function']:<{width}}  {r['status']:<10}  {r['here']:>6}  {r['there']:>6}")
    changed = [r for r in rows if r["status"] != "same"]
    print(f"\n{len(rows)} functions, {len(changed)} differ from {args.against} "
          f"(instructions, local labels and the symbol prefix neutral)")
    return 0


def _notebooks(args: argparse.Namespace) -> int:
    from .report.notebooks import copy_out  # lazy: pandas, +0.3 s on `vgkernels --help`

    try:
        copies = copy_out(args.dir, overwrite=args.force)
    except (FileExistsError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    for p in copies:
        print(p)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The ``vgkernels`` command (argv without the program name; default sys.argv)."""
    return run(_main, list(sys.argv[1:] if argv is None else argv))


# Commands with a parser of their own, imported only when named: most pull pandas, numba or
# papermill (0.3-1 s each), which `vgkernels --help` and the other commands must not pay.
DELEGATES = {"bench": "vgkernels.bench.cli", "predict": "vgkernels.predict.cli",
             "report": "vgkernels.report.batch", "ct-timing": "vgkernels.ct.cli"}


def _delegate(command: str, argv: list[str]) -> int:
    """Run a delegated command's ``main(argv)``."""
    return importlib.import_module(DELEGATES[command]).main(argv)


def parser() -> argparse.ArgumentParser:
    """The parser of ``vgkernels`` and its own commands (the delegated ones are only named)."""
    p = argparse.ArgumentParser(prog="vgkernels", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"vgkernels {__version__}")
    sub = p.add_subparsers(dest="cmd")
    pi = sub.add_parser("info", help="CPU, backends and a self-check")
    for q in (p, pi):
        q.add_argument("--cases", type=int, default=40, help="random self-check cases per backend")
        q.add_argument("--no-check", action="store_true", help="skip the self-check")
    backend_help = "backend: " + ", ".join(BY_NAME)
    cpu_help = ("LLVM CPU to schedule for: " + ", ".join(CPUS) + " (host: this machine; "
                "default: the backend's own, or the host)")
    pe = sub.add_parser("export", help="AOT object file + C header")
    pe.add_argument("backend", choices=list(BY_NAME), metavar="BACKEND", help=backend_help)
    pe.add_argument("dir", metavar="DIR", help="where to write <prefix>.o and <prefix>.h")
    pa = sub.add_parser("asm", help="assembly of a backend's kernels")
    pa.add_argument("backend", choices=list(BY_NAME), metavar="BACKEND", help=backend_help)
    pa.add_argument("--ir", action="store_true", help="optimised LLVM IR instead")
    pa.add_argument("--function", metavar="NAME",
                    help="only this function: its symbol or the part after the prefix "
                         "(seal, open, seal_gather, key_init, ...)")
    pa.add_argument("--against", metavar="REV",
                    help="which functions' machine code differs from REV's (a git revision "
                         "or a directory holding vgkernels/), compiled here for the same CPU; "
                         "with --function, the diff of that function")
    for q in (pe, pa):
        q.add_argument("--variant", metavar="SPEC", help=VARIANT_HELP)
        q.add_argument("--cpu", choices=CPUS, metavar="CPU", help=cpu_help)
    pn = sub.add_parser("notebooks", help="copy the report notebooks into DIR (JupyterLab)")
    pn.add_argument("dir", metavar="DIR", help="destination directory (created)")
    pn.add_argument("--force", action="store_true", help="overwrite notebooks already there")
    pc = sub.add_parser("compare", help="two report or data folders side by side",
                        description=_compare.__doc__)
    pc.add_argument("a", help="report folder (reports/...) or data folder: the baseline")
    pc.add_argument("b", help="report or data folder to compare with A")
    pc.add_argument("--alpha", type=float, default=0.01,
                    help="significance level of the Mann-Whitney test (default 0.01)")
    pc.add_argument("--min-change", type=float, default=0.02,
                    help="smallest relative change reported (default 0.02)")
    pc.add_argument("--all", action="store_true", help="every case, not only the changes")
    pc.add_argument("--csv", help="write the whole comparison here")
    sub.add_parser("bench", help="measurement sweeps (vgkernels bench -h)")
    sub.add_parser("tune", help="measure and install this CPU's copy_below thresholds "
                                "(vgkernels tune -h)")
    sub.add_parser("report", help="render the notebooks into a report (vgkernels report -h)")
    sub.add_parser("ct-timing", help="constant-time timing test (vgkernels ct-timing -h)")
    sub.add_parser("predict", help="llvm-mca predictions per CPU (vgkernels predict -h)")
    return p


def _main(argv: list[str]) -> int:
    if argv and argv[0] in DELEGATES:
        return _delegate(argv[0], argv[1:])
    if argv and argv[0] == "tune":
        return _tune(argv[1:])
    args = parser().parse_args(argv)
    command = {"export": _export, "compare": _compare, "asm": _asm, "notebooks": _notebooks}
    return command.get(args.cmd, _info)(args)


if __name__ == "__main__":
    raise SystemExit(main())
