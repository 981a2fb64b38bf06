"""vgkernels.bench: schema, calibration and interleaving sanity, peers, interruption.

No timed assertions beyond generous sanity bands: benchmarks are commands, not tests.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import pandas as pd
import pytest

import vgkernels
from vgkernels import abi
from vgkernels.analysis import ratio_table, summary
from vgkernels.backends import BACKENDS, BY_NAME, usable
from vgkernels.bench import CaseSpec, cli, peers, run, store
from vgkernels.bench.cases import Builder, message, pieces
from vgkernels.bench.driver import kinds
from vgkernels.buffers import Buf

BEST = max(usable(), key=lambda b: b.rank).name
FAST = dict(k=5, target_us=5.0, progress=False, pin=False, isolate=False)


pytestmark = pytest.mark.usefixtures("keep_affinity")


def _libcrypto_ok() -> bool:
    try:
        peers.openssl()
    except peers.PeerUnavailable:
        return False
    return True


# -- schema and metadata ------------------------------------------------------------------


def test_schema_and_metadata(tmp_path):
    res = run("sizes", backends=[BEST], sizes=[256, 1024], peers=False, out=tmp_path, **FAST)
    df, sp = res.df, res.samples
    assert list(df.columns) == store.SUMMARY_COLS
    assert list(sp.columns) == store.SAMPLE_COLS
    assert set(df["op"]) == {"seal", "gather", "copy_ip", "open_out"}
    assert set(df["n"]) == {256, 1024}
    assert (df["backend"] == BEST).all() and (df["impl"] == "vgkernels").all()
    assert (df["kernel_version"] == vgkernels.__version__).all()
    for col in ("host", "cpu_model", "cpu_flags", "llvmlite_version", "llvm_version", "variant",
                "run_id", "timestamp", "tsc_hz", "overhead_ns", "tail", "group", "stitch_min"):
        assert df[col].notna().all(), col
    assert (df["min_ns"] <= df["median_ns"]).all() and (df["min_ticks"] > 0).all()
    assert (df["k"] == 5).all() and (df["batch"] >= 1).all() and (df["spread"] >= 0).all()
    assert 0 < res.overhead_ns < 100  # an empty call through the driver: ns, not us
    assert 1e9 < df["tsc_hz"].iloc[0] < 1e10
    g = df[df["op"] == "gather"].iloc[0]  # n then 1 byte
    assert (g["pieces"], g["bytes"], g["blocks"], bool(g["aligned"])) == ("256+1", 257, 17, True)
    assert len(sp) == 5 * len(df)
    # on disk: Parquet and CSV, with the metadata file
    back = pd.read_parquet(res.paths["parquet"])
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    assert len(pd.read_csv(res.paths["csv"])) == len(df)
    assert len(store.load(res.paths["samples_parquet"])) == len(sp)
    assert res.paths["meta"].read_text().count(BEST) >= 1
    # the per-sample rows are what vgkernels.analysis consumes
    table = ratio_table(sp[sp["aligned"]], a="copy_ip", b="gather", size_col="bytes")
    assert list(table["n"]) == [257, 1025]
    assert summary(sp)["n"].eq(5).all()


def test_shapes_and_alignment():
    assert pieces("n+1", 1024) == [1024, 1]
    assert pieces("16+rest", 100) == [16, 84] and pieces("1+rest", 100) == [1, 99]
    lab = CaseSpec("gather", 1023, BEST, "n+1").label()
    assert (lab["bytes"], lab["aligned"], lab["blocks"]) == (1024, False, 64)
    assert CaseSpec("copy_ip", 100, BEST, "16+rest").label()["aligned"] is True
    assert CaseSpec("copy_ip", 100, BEST, "1+rest").label()["aligned"] is False
    with pytest.raises(ValueError):
        CaseSpec("seal", 100, BEST, "n+1")  # in place takes one piece
    with pytest.raises(ValueError):
        CaseSpec("ctr32", 100, BEST)  # whole blocks only


def test_calibration_twice_the_work(drv):
    """ctr32 over 2N blocks measures about twice N blocks (and a seal of 2x bytes at size)."""
    b = Builder(drv)
    cases = [b.build(CaseSpec("ctr32", 16 * n, BEST)) for n in (256, 512)]
    cases += [b.build(CaseSpec("seal", n, BEST)) for n in (8192, 16384)]
    t = drv.measure(cases, k=7, target_ns=10_000)
    ms, ov = t.results, t.overhead
    lo = [min(m.ticks) for m in ms]
    assert 1.5 < lo[1] / lo[0] < 2.7
    assert 1.5 < lo[3] / lo[2] < 2.7
    for m in ms:  # each sample lasted at least ~the target (batch calibrated per case)
        assert m.batch * min(m.ticks) > 0.5 * 10_000 * drv.tsc_hz / 1e9
    assert ov is not None and min(ov.ticks) < min(lo)
    assert 0.5e9 < t.core_hz(drv.tsc_hz) < 10e9  # the clock probe: a plausible core clock


def test_interleaving_covers_every_case(drv):
    b = Builder(drv)
    cases = [b.build(CaseSpec(op, 256, BEST, shape)) for op, shape in
             [("seal", "one"), ("gather", "n+1"), ("copy_ip", "1+rest"), ("ghash", "one")]]
    trace: list[tuple[int, int]] = []
    ms = drv.measure(cases, k=6, target_ns=2_000, trace=trace).results
    assert [len(m.ticks) for m in ms] == [6] * 4
    # round-robin: every round takes the probes (-1 empty call, -2 clock), then every case once
    rounds = [[j for r, j in trace if r == i] for i in range(6)]
    assert rounds == [[-1, -2, 0, 1, 2, 3]] * 6
    # rotate: the probes first, then every case once, round r starting from case r
    trace.clear()
    ms = drv.measure(cases, k=5, target_ns=2_000, trace=trace, rotate=True).results
    assert [len(m.ticks) for m in ms] == [5] * 4
    rounds = [[j for r, j in trace if r == i] for i in range(5)]
    assert rounds == [[-1, -2, *[(i + j) % 4 for j in range(4)]] for i in range(5)]


def test_key_context_is_the_candidate_fastest_at_its_slowest_offset(drv, monkeypatch):
    """The builder sets up ctx_candidates key contexts, times a seal with each at every
    stack offset of CTX_PROBE_OFFSETS and keeps the one whose slowest offset is fastest;
    only the kept context's µtags stay hot for the buffers placed after it."""
    from vgkernels.bench import cases, utag

    made: list[Buf] = []
    new_ctx = Builder.new_ctx
    monkeypatch.setattr(Builder, "new_ctx", lambda self, spec: made.append(
        new_ctx(self, spec)) or made[-1])
    real = drv.measure
    # candidate 0 slow everywhere, 1 fastest but slow at one offset, 2 the best worst case
    fake = {0: 120.0, 1: 100.0, 2: 110.0}
    seen: list[tuple[int, int]] = []

    def measure(cs, **kw):
        t = real(cs, **kw)
        for c, m in zip(cs, t.results, strict=True):
            j = c.label["candidate"]
            seen.append((j, c.stack_offset))
            slow = j == 1 and c.stack_offset == cases.CTX_PROBE_OFFSETS[3]
            m.ticks = [130.0 if slow else fake[j]] * len(m.ticks)
        return t
    monkeypatch.setattr(drv, "measure", measure)
    before = set(cases.HOT_TAGS)
    b = Builder(drv, ctx_candidates=3)
    spec = CaseSpec("seal", 64, BEST)
    b.build(spec)
    assert len(made) == 3 and b.ctx(spec) == made[2].addr
    assert sorted(seen) == sorted((j, off) for j in range(3) for off in cases.CTX_PROBE_OFFSETS)
    (trials,) = b.ctx_trials.values()
    assert trials == pytest.approx([120 / 110, 130 / 110, 1.0])
    kept = utag.page_tags(made[2].addr, abi.CTX_SIZE)
    assert kept <= cases.HOT_TAGS
    gone = set().union(*(utag.page_tags(m.addr, abi.CTX_SIZE) for m in made[:2]))
    assert not (gone - kept - before) & cases.HOT_TAGS
    # one candidate: set up, not timed
    one = Builder(drv, ctx_candidates=1)
    one.build(spec)
    assert len(made) == 4 and one.ctx(spec) == made[3].addr and not one.ctx_trials


def test_driver_checks_results(drv):
    """A wrong result is reported, never timed: break the key context after building."""
    b = Builder(drv)
    spec = CaseSpec("seal", 64, BEST)
    b.build(spec)  # verified against cryptography
    ctypes.memset(b.ctx(spec), 0, abi.CTX_SIZE)  # round keys gone; nrounds 0
    with pytest.raises(Exception, match="seal"):
        b.build(spec)


def test_every_kind_has_a_run_loop(drv):
    for kind in kinds():
        assert drv.address(f"vgb_run_{kind}") and drv.address(f"vgb_call_{kind}")


# -- sweeps -------------------------------------------------------------------------------


def test_interrupted_sweep_keeps_rows(tmp_path):
    def stop_after_two(done, rows):
        if done == 2:
            raise KeyboardInterrupt

    res = run("sizes", backends=[BEST], sizes=[16, 64, 256, 1024], peers=False, out=tmp_path,
              on_chunk=stop_after_two, **FAST)
    assert res.interrupted
    assert sorted(set(res.df["n"])) == [16, 64]  # the two chunks measured
    assert len(pd.read_parquet(res.paths["parquet"])) == len(res.df) > 0
    assert any("interrupted" in s for s in res.skipped)


@pytest.mark.parametrize("spread", [True, False])
def test_passes_spread_samples(spread):
    """k samples per case, taken in passes over the whole sweep (pass-major order); spread,
    every chunk is visited once per round (round-major), else once per pass."""
    order: list[tuple[int, int]] = []
    res = run("sizes", backends=[BEST], sizes=[16, 256], peers=False, save=False,
              on_chunk=lambda done, rows: order.append((rows[0]["n"], len(order))),
              **{**FAST, "k": 7, "passes": 3, "spread": spread})
    assert (res.df["k"] == 7).all() and (res.df["passes"] == 3).all()
    per_pass = res.samples.groupby(["op", "n", "pass"]).size()
    assert sorted(set(per_pass)) == [2, 3] and set(res.samples["pass"]) == {0, 1, 2}
    assert [n for n, _ in order] == [16, 256] * (7 if spread else 3)
    assert (res.df["median_lo_ns"] <= res.df["median_ns"]).all()
    assert (res.df["median_ns"] <= res.df["median_hi_ns"]).all()
    assert (res.df["gbps"] - res.df["bytes"] / res.df["min_ns"]).abs().max() < 1e-9
    assert res.df["cycles_per_byte"].gt(0).all()


def test_ab_alternating_runs():
    res = run("sizes", backends=[BEST], sizes=[256], peers=False, save=False,
              ab=("tail=split", "tail=full"), runs=2, **FAST)
    runs = res.df.groupby("run")["tail"].agg(lambda s: set(s))
    assert list(runs.index) == [0, 1, 2, 3]
    assert [r.pop() for r in runs] == ["split", "full", "split", "full"]
    assert res.df["variant"].nunique() == 2


def test_two_slice_when_exported():
    be = next((b.name for b in usable() if b.two_slice), None)
    if be is None:
        pytest.skip("no usable backend exports seal_two_slice")
    res = run("two_slice", backends=[be], sizes=[512], save=False, **FAST)
    assert set(res.df["op"]) <= {"two_slice", "gather", "copy_ip"}
    assert {"gather", "copy_ip"} <= set(res.df["op"])  # rows come out even if it is missing


def test_cli(tmp_path, capsys):
    rc = cli.main(["sizes", "--backends", BEST, "--sizes", "256", "--k", "3", "--no-peers",
                   "--target-us", "5", "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "driver overhead" in out and "parquet" in out
    assert list(tmp_path.glob("sizes-*.parquet"))


# -- peers --------------------------------------------------------------------------------


def test_masks_match_backend_features():
    bits = {be.name: peers.ia32cap_mask(be) for be in BACKENDS}

    def cleared(mask: str, word: int, bit: int) -> bool:
        return bool(int(mask.split(":")[word].lstrip("~"), 16) >> bit & 1)

    assert cleared(bits["portable"], 0, 57) and cleared(bits["portable"], 0, 33)
    assert cleared(bits["aesni_pclmul"], 0, 60) and not cleared(bits["aesni_pclmul"], 0, 57)
    assert not cleared(bits["aesni_pclmul_avx"], 0, 60)
    assert cleared(bits["aesni_pclmul_avx"], 1, 5)  # no AVX2
    assert not cleared(bits["vaes_avx2"], 1, 41) and cleared(bits["vaes_avx2"], 1, 16)
    for bit in (16, 17, 30, 31, 41, 42):  # what OpenSSL's VAES/AVX-512 GCM check wants
        assert not cleared(bits["vaes_avx512"], 1, bit)


def test_openssl_path_from_caps():
    v = "OpenSSL 3.0.19"
    avx = (1 << 57) | (1 << 33) | (1 << 60) | (1 << 54) | (1 << 41)
    assert "aesni_gcm_encrypt" in peers.openssl_gcm_path((avx, 0), v)
    assert "gcm_ghash_clmul" in peers.openssl_gcm_path((avx & ~(1 << 60), 0), v)
    assert "T-tables" in peers.openssl_gcm_path((1 << 54, 0), v)
    assert peers.parse_cpuinfo("CPUINFO: OPENSSL_ia32cap=0x10:0x2 env:") == (16, 2)


@pytest.mark.skipif(not _libcrypto_ok(), reason="no loadable libcrypto")
@pytest.mark.parametrize("key_len", [16, 32])
def test_openssl_peer_matches_kernels(drv, key_len):
    """The peer harness (vgb_ossl_seal through EVP) gives the kernels' ciphertext and tag."""
    ossl = peers.openssl()
    b = Builder(drv)
    for n in (0, 1, 15, 16, 17, 255, 256, 288, 1024, 4097):
        spec = CaseSpec("seal", n, BEST, key_len=key_len)
        key, nonce, aad = b.material(spec)
        msg = message(n, seed=n)
        buf, tag = Buf.alloc(n, msg), Buf.alloc(16)
        res, args, _ = abi.SIGNATURES["seal"]
        seal = ctypes.CFUNCTYPE(res, *args)(b.address(spec, "seal"))
        assert seal(b.ctx(spec), nonce, len(nonce), aad, len(aad), buf.addr, n, tag.addr) == 0
        assert ossl.seal(key, nonce, aad, msg) == buf.read() + tag.read(), n
    # and through the driver, in place and copy+seal (each verified against cryptography)
    for op, shape in (("openssl", "one"), ("openssl_copy", "n+1"), ("openssl_copy", "1+rest")):
        b.build(CaseSpec(op, 300, BEST, shape, key_len=key_len))


def test_missing_libcrypto_skips_peer_keeps_rows(monkeypatch):
    monkeypatch.setenv(peers.ENV_LIBCRYPTO, "/nonexistent/libcrypto.so.3")
    with pytest.raises(peers.PeerUnavailable, match="nonexistent"):
        peers.OpenSSL()
    res = run("peers", backends=[BEST], sizes=[256], save=False, **{**FAST, "isolate": True})
    assert any("OpenSSL peer skipped" in s and "/nonexistent" in s for s in res.skipped)
    ops = set(res.df["op"])
    assert {"seal", "copy_ip"} <= ops and not ops & {"openssl", "openssl_copy"}


def test_unloadable_libcrypto(tmp_path):
    bogus = tmp_path / "libcrypto.so.3"
    bogus.write_text("not an ELF file")
    with pytest.raises(peers.PeerUnavailable, match="cannot load"):
        peers.OpenSSL(str(bogus))


@pytest.mark.skipif(not _libcrypto_ok(), reason="no loadable libcrypto")
def test_peer_worker_masked():
    """Peers run in a worker with OPENSSL_ia32cap masked to the backend; rows say which."""
    be = "aesni_pclmul" if "aesni_pclmul" in {b.name for b in usable()} else BEST
    res = run("peers", backends=[be], sizes=[256], save=False,
              **{**FAST, "isolate": True, "passes": 2})
    pids = res.meta["worker_pids"][be]
    assert len(pids) == 2 and len(set(pids)) == 2  # a fresh worker per pass
    o = res.df[res.df["op"] == "openssl"].iloc[0]
    assert o["ia32cap"] == peers.ia32cap_mask(BY_NAME[be])
    assert o["openssl_path"] and o["openssl_version"].startswith("OpenSSL")
    assert {"seal", "openssl", "openssl_copy"} <= set(res.df["op"])


# -- the OpenSSL bundled in the cryptography wheel, called natively ------------------------


def _bundled_ok() -> tuple[bool, str]:
    try:
        peers.bundled_openssl()
    except peers.PeerUnavailable as e:
        return False, str(e)
    return True, ""


_BUNDLED_OK, _BUNDLED_WHY = _bundled_ok()


@pytest.mark.skipif(not _BUNDLED_OK, reason=_BUNDLED_WHY or "bundled OpenSSL unavailable")
@pytest.mark.parametrize("key_len", [16, 32])
def test_bundled_openssl_peer_matches_kernels(drv, key_len):
    """cryptography's own OpenSSL, called natively through vgb_o4_seal, gives the kernels'
    ciphertext and tag; its .symtab addresses are right (OpenSSL_version answers)."""
    o4 = peers.bundled_openssl()
    assert o4.info.version.startswith("OpenSSL")
    assert o4.info.version == peers.cryptography_version()
    b = Builder(drv)
    for n in (0, 1, 17, 256, 288, 1024, 4097):
        spec = CaseSpec("seal", n, BEST, key_len=key_len)
        key, nonce, aad = b.material(spec)
        msg = message(n, seed=n)
        buf, tag = Buf.alloc(n, msg), Buf.alloc(16)
        res, args, _ = abi.SIGNATURES["seal"]
        seal = ctypes.CFUNCTYPE(res, *args)(b.address(spec, "seal"))
        assert seal(b.ctx(spec), nonce, len(nonce), aad, len(aad), buf.addr, n, tag.addr) == 0
        assert o4.seal(key, nonce, aad, msg) == buf.read() + tag.read(), n
    for op, shape in (("openssl4_seal", "one"), ("openssl4_copy", "n+1")):
        b.build(CaseSpec(op, 300, BEST, shape, key_len=key_len))
    assert CaseSpec("openssl4_seal", 16, BEST).label()["impl"] == "openssl_bundled"


def test_bundled_openssl_missing_symbols_skips(tmp_path):
    """Another build (no .symtab or no EVP symbols in it): a clear PeerUnavailable."""
    bogus = tmp_path / "_rust.abi3.so"
    bogus.write_bytes(b"not an ELF file")
    with pytest.raises(peers.PeerUnavailable, match="bundled OpenSSL peer skipped"):
        peers.BundledOpenSSL(str(bogus))
    libc = ctypes.util.find_library("c")
    path = next((ln.split()[-1] for ln in open("/proc/self/maps")
                 if ln.split()[-1].endswith(".so.6") and "libc" in ln), None)
    if libc and path:  # stripped or not, no EVP functions (the reader: tests/test_elf.py)
        with pytest.raises(peers.PeerUnavailable, match="bundled OpenSSL peer skipped"):
            peers.BundledOpenSSL(path)
