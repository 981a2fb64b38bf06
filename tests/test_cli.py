"""The command line: --version, user errors as one line and a non-zero status (never a
traceback), backends the CPU lacks refused, export/asm variants and CPUs, asm per function,
help for every option, and the notebooks copied out."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from vgkernels import __version__, cli
from vgkernels.bench import cli as bench_cli
from vgkernels.report import notebooks as nbs

NO_VAES = "aes,pclmulqdq,ssse3,avx"  # a mask every x86-64 host with AES-NI can satisfy


def _one_line_error(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert "Traceback" not in err
    return lines[-1]


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"vgkernels {__version__}"


def test_unknown_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["asm", "nosuch"])
    assert e.value.code == 2
    last = _one_line_error(capsys.readouterr().err)
    assert "invalid choice: 'nosuch'" in last and "vaes_avx512" in last


def test_bad_cpu_features_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("VG_CPU_FEATURES", "aes,warp_drive")
    # info prints what it can (the host's table), then the error
    assert cli.main(["info", "--no-check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "VG_CPU_FEATURES: unknown feature(s) warp_drive" in err
    # elsewhere the entry point's one error boundary reports it
    assert bench_cli.main(["sizes", "--backends", "aesni_pclmul", "--no-save"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("vgkernels bench: error: VG_CPU_FEATURES: unknown feature(s) "
                          "warp_drive")


def test_bench_refuses_a_backend_this_cpu_lacks(monkeypatch, capsys):
    monkeypatch.setenv("VG_CPU_FEATURES", NO_VAES)
    assert bench_cli.main(["sizes", "--backends", "vaes_avx512", "--no-save",
                           "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert "(no rows)" not in out and "nan" not in out
    assert err.startswith("vgkernels bench: error: backend vaes_avx512 is not usable here: ")
    assert "vaes" in err and err.count("\n") == 1


def test_bench_unknown_backend_and_variant(capsys):
    for argv, what in ((["sizes", "--backends", "vaes_avx512,nope"], "unknown backend(s) nope"),
                       (["sizes", "--variant", "tail=middle,colour=1"], "unknown variant")):
        with pytest.raises(SystemExit) as e:
            bench_cli.main(argv)
        assert e.value.code == 2
        assert what in _one_line_error(capsys.readouterr().err)


def test_asm_one_function_and_variant(capsys):
    assert cli.main(["asm", "aesni_pclmul", "--function", "seal", "--variant", "tail=split",
                     "--cpu", "x86-64-v2"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first == "vg_aesni_pclmul_split_g8_s16_r0_k_seal:", first
    labels = [x for x in out.splitlines() if x.startswith("vg_") and x.endswith(":")]
    assert labels == [first]  # one function only
    assert "aesenc" in out
    assert cli.main(["asm", "aesni_pclmul", "--function", "vg_aesni_pclmul_key_init",
                     "--ir"]) == 0
    ir = capsys.readouterr().out
    assert ir.startswith("define") and "@vg_aesni_pclmul_key_init(" in ir.splitlines()[0]
    assert ir.count("\ndefine") == 0


def test_asm_unknown_function_lists_them(capsys):
    assert cli.main(["asm", "aesni_pclmul", "--function", "nosuch"]) == 2
    last = _one_line_error(capsys.readouterr().err)
    assert "no function 'nosuch'" in last and "seal_gather" in last and "key_init" in last


def test_bad_variant_and_cpu(capsys):
    assert cli.main(["asm", "vaes_avx512", "--variant", "group=7"]) == 2
    assert "group 7 not in (8, 16, 32)" in _one_line_error(capsys.readouterr().err)
    with pytest.raises(SystemExit) as e:
        cli.main(["export", "aesni_pclmul", "out", "--cpu", "pentium2"])
    assert e.value.code == 2
    last = _one_line_error(capsys.readouterr().err)
    assert "invalid choice: 'pentium2'" in last and "znver4" in last


def test_export_variant_and_cpu(tmp_path, capsys):
    assert cli.main(["export", "aesni_pclmul_avx", str(tmp_path), "--variant",
                     "tail=split,group=4", "--cpu", "x86-64-v3"]) == 0
    obj, hdr = capsys.readouterr().out.split()
    assert obj.endswith("vg_aesni_pclmul_avx_split_g4_s8_r0_k.o")
    assert (tmp_path / "vg_aesni_pclmul_avx_split_g4_s8_r0_k.h").read_text().count(
        "vg_aesni_pclmul_avx_split_g4_s8_r0_k_seal(") == 1


def _actions(p: argparse.ArgumentParser) -> list[argparse.Action]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                out += _actions(sub)
        elif not isinstance(a, argparse._HelpAction):
            out.append(a)
    return out


def test_every_option_has_help():
    from vgkernels.report import batch

    for prog, p in (("bench", bench_cli.parser()), ("report", batch.parser())):
        missing = [a.dest for a in _actions(p) if not a.help]
        assert not missing, f"vgkernels {prog}: options without help: {missing}"
    # the main parser is built inside main(): check its help text instead
    res = subprocess.run([sys.executable, "-m", "vgkernels", "asm", "-h"], capture_output=True,
                         text=True, check=True)
    for word in ("--function", "--variant", "--cpu", "tail=full|split", "znver4", "vaes_avx512"):
        assert word in res.stdout, word
    res = subprocess.run([sys.executable, "-m", "vgkernels", "bench", "-h"],
                         capture_output=True, text=True, check=True)
    for word in ("--key-len", "AES key length", "--aad-len", "--no-peers", "vgkernels only"):
        assert word in res.stdout, word


def test_no_traceback_end_to_end(tmp_path):
    """The installed entry point, as a user runs it."""
    res = subprocess.run([sys.executable, "-m", "vgkernels", "asm", "vaes_avx2", "--variant",
                          "skew=12"], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert "skew must lie in 0..9" in res.stderr


def test_notebooks_copied_out(tmp_path, capsys):
    dest = tmp_path / "lab"
    assert cli.main(["notebooks", str(dest)]) == 0
    names = sorted(p.name for p in dest.iterdir())
    assert names == [f"{n}.ipynb" for n in nbs.NOTEBOOKS]
    assert capsys.readouterr().out.count("\n") == len(nbs.NOTEBOOKS)
    assert cli.main(["notebooks", str(dest)]) == 2  # no silent overwrite
    assert "already exist" in _one_line_error(capsys.readouterr().err)
    assert cli.main(["notebooks", str(dest), "--force"]) == 0


def test_asm_against_a_tree_names_the_changed_functions(capsys, tmp_path):
    """`asm --against DIR`: every function the same against a copy of this tree; after the
    copy's short path is changed, exactly the short-path functions differ, and --function
    prints their instruction diff."""
    import shutil
    from pathlib import Path

    import vgkernels

    tree = tmp_path / "base"
    shutil.copytree(Path(vgkernels.__file__).parent, tree / "vgkernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert cli.main(["asm", "aesni_pclmul", "--against", str(tree)]) == 0
    out = capsys.readouterr().out
    assert " 0 differ from " in out and "changed" not in out
    # for a CPU whose Karatsuba default is not the host's, both sides resolve for that CPU
    from vgkernels import cpu as vcpu
    from vgkernels.backends import get

    be = get("aesni_pclmul")
    other = next(c for c in ("znver4", "sapphirerapids")
                 if be.karatsuba_for(c) != be.karatsuba_for(vcpu.host_cpu_name()))
    assert cli.main(["asm", "aesni_pclmul", "--cpu", other, "--against", str(tree)]) == 0
    out = capsys.readouterr().out
    assert " 0 differ from " in out and "changed" not in out, out
    short = tree / "vgkernels" / "kernels" / "short.py"
    text = short.read_text()
    assert "acc = gh.accumulate(acc, lens, f.power(ctx, 1, 1))" in text
    # the base tree hashes the length block twice (wrong, but it only has to differ)
    short.write_text(text.replace("acc = gh.accumulate(acc, lens, f.power(ctx, 1, 1))",
                                  "acc = gh.accumulate(gh.accumulate(acc, lens, f.power(ctx, 1,"
                                  " 1)), lens, f.power(ctx, 2, 1))"))
    assert cli.main(["asm", "aesni_pclmul", "--against", str(tree)]) == 0
    out = capsys.readouterr().out
    changed = {line.split()[0] for line in out.splitlines() if " changed " in line}
    assert changed and all(name.startswith("vg.short.") for name in changed), out
    assert cli.main(["asm", "aesni_pclmul", "--against", str(tree), "--function",
                     sorted(changed)[0]]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith(f"--- {tree}\n+++ here") and "\n-" in diff
    assert cli.main(["asm", "aesni_pclmul", "--against", str(tree), "--ir"]) == 2


def test_bench_replay(monkeypatch, capsys):
    """`vgkernels bench replay`: the replay table and the budget; a backend the CPU lacks is
    one line and status 2."""
    from vgkernels.backends import availability

    if availability()["aesni_pclmul_avx"] is not None:
        pytest.skip(f"aesni_pclmul_avx: {availability()['aesni_pclmul_avx']}")
    assert bench_cli.main(["replay", "--backends", "aesni_pclmul_avx", "--k", "3",
                           "--gap-ms", "0"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("aesni_pclmul_avx")]
    assert {"loop", "core"} <= {r[1] for r in rows} and "others_at_limit" in out
    monkeypatch.setenv("VG_CPU_FEATURES", NO_VAES)
    assert bench_cli.main(["replay", "--backends", "vaes_avx512"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vgkernels bench: error: backend vaes_avx512 is not usable here: ")
    assert err.count("\n") == 1
