"""The `vgkernels` command.

  vgkernels [info]                 CPU, backends (with the reason each unusable one is), self-check
  vgkernels report [--profile ...] run the notebooks into reports/<date>-<host>-<llvm cpu>/
  vgkernels bench SWEEP [...]      run a measurement sweep (see `vgkernels bench -h`)
  vgkernels ct-timing [...]        dudect-style timing test of the kernels and the controls
  vgkernels export BACKEND DIR     AOT: object file + C header
  vgkernels asm BACKEND [--ir]     the optimised assembly (or IR) of a backend's kernels
"""

from __future__ import annotations

import argparse
import sys


def _info(args: argparse.Namespace) -> int:
    """The machine, every backend (why an unusable one is), the copy_below thresholds each
    uses (and from which table), then a self-check.  A bad VG_CPU_FEATURES or VG_BACKEND is
    reported after the table, with a non-zero exit, never a traceback."""
    import os

    from . import __version__, backends, cpu, dispatch, machine, selfcheck

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


def _export(args: argparse.Namespace) -> int:
    from . import aot

    obj, hdr = aot.export(args.backend, args.dir)
    print(obj)
    print(hdr)
    return 0


def _asm(args: argparse.Namespace) -> int:
    from .kernels.build import kernels

    k = kernels(args.backend)
    sys.stdout.write(k.library.optimised_ir() if args.ir else k.asm())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from .bench.cli import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "report":
        from .report import main as report_main

        return report_main(argv[1:])
    if argv and argv[0] == "ct-timing":
        from .ct.cli import main as ct_timing_main

        return ct_timing_main(argv[1:])
    p = argparse.ArgumentParser(prog="vgkernels", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")
    pi = sub.add_parser("info", help="CPU, backends and a self-check")
    for q in (p, pi):
        q.add_argument("--cases", type=int, default=40, help="random self-check cases per backend")
        q.add_argument("--no-check", action="store_true", help="skip the self-check")
    pe = sub.add_parser("export", help="AOT object file + C header")
    pe.add_argument("backend")
    pe.add_argument("dir")
    pa = sub.add_parser("asm", help="assembly of a backend's kernels")
    pa.add_argument("backend")
    pa.add_argument("--ir", action="store_true", help="optimised LLVM IR instead")
    sub.add_parser("bench", help="measurement sweeps (vgkernels bench -h)")
    sub.add_parser("report", help="render the notebooks into a report (vgkernels report -h)")
    sub.add_parser("ct-timing", help="constant-time timing test (vgkernels ct-timing -h)")
    args = p.parse_args(argv)
    if args.cmd == "export":
        return _export(args)
    if args.cmd == "asm":
        return _asm(args)
    return _info(args)


if __name__ == "__main__":
    raise SystemExit(main())
