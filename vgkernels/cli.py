"""The `vgkernels` command.

  vgkernels [info]                 CPU, backends (with the reason each unusable one is), self-check
  vgkernels report [--profile ...] run the notebooks into reports/<date>-<host>/
  vgkernels bench SWEEP [...]      run a measurement sweep (see `vgkernels bench -h`)
  vgkernels export BACKEND DIR     AOT: object file + C header
  vgkernels asm BACKEND [--ir]     the optimised assembly (or IR) of a backend's kernels
  vgkernels predict [--cpu ...]    llvm-mca's prediction for CPUs not at hand (see -h)
"""

from __future__ import annotations

import argparse
import sys


def _info(args: argparse.Namespace) -> int:
    from . import __version__, backends, cpu, selfcheck

    ci = cpu.info()
    print(f"vgkernels {__version__}")
    print(f"CPU: {ci.model} (LLVM: {ci.llvm_cpu})")
    print(f"features: {', '.join(ci.flags) or '-'}")
    if cpu.ENV_VAR in __import__("os").environ:
        print(f"{cpu.ENV_VAR}={__import__('os').environ[cpu.ENV_VAR]} -> usable: "
              f"{', '.join(ci.usable) or 'none'}")
    print("backends:")
    for name, why in backends.availability().items():
        print(f"  {name:18s} {'usable' if why is None else 'unusable: ' + why}")
    best = backends.choose()
    print(f"default backend: {best.name}")
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
    if argv and argv[0] == "predict":
        from .predict.cli import main as predict_main

        return predict_main(argv[1:])
    if argv and argv[0] == "report":
        from .report import main as report_main

        return report_main(argv[1:])
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
    sub.add_parser("predict", help="llvm-mca predictions per CPU (vgkernels predict -h)")
    args = p.parse_args(argv)
    if args.cmd == "export":
        return _export(args)
    if args.cmd == "asm":
        return _asm(args)
    return _info(args)


if __name__ == "__main__":
    raise SystemExit(main())
