"""EVP_AEAD peers (aws-lc from the awscrt wheel, any library by path), the honest headline's
peer set, and the noise handling (spread rounds, bands, warnings, banners)."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import time

import numpy as np
import pandas as pd
import pytest

from vgkernels import abi
from vgkernels.backends import BY_NAME, usable
from vgkernels.bench import CaseSpec, cli, peers, run
from vgkernels.bench.aead import AWSLC, AeadPeer, gcm_path, parse_peers, peer
from vgkernels.bench.cases import Builder, message
from vgkernels.bench.driver import NOISY_SPREAD, median_interval
from vgkernels.buffers import Buf
from vgkernels.report import peerset

BEST = max(usable(), key=lambda b: b.rank).name
FAST = dict(k=3, target_us=5.0, progress=False, pin=False, isolate=False)
HAVE_AWSCRT = importlib.util.find_spec("_awscrt") is not None
needs_awscrt = pytest.mark.skipif(not HAVE_AWSCRT, reason="awscrt is not installed "
                                  "(pip install 'vgkernels[peers]'): no aws-lc peer")


pytestmark = pytest.mark.usefixtures("keep_affinity")


def _awscrt_path() -> str:
    import _awscrt

    return _awscrt.__file__


# -- aws-lc ---------------------------------------------------------------------------------


@needs_awscrt
@pytest.mark.parametrize("key_len", [16, 32])
def test_awslc_matches_kernels(drv, key_len):
    """aws-lc's seal, seal_scatter (with extra_in) and open agree with our seal kernel; the
    harness cases built from them pass the driver's checks."""
    lc = peer(AWSLC)
    assert lc.info.version.startswith("AWS-LC") and lc.info.binding == ".symtab"
    b = Builder(drv, aead_paths={AWSLC: None})
    res, args, _ = abi.SIGNATURES["seal"]
    for n in (0, 1, 17, 256, 288, 1024, 4097):
        spec = CaseSpec("seal", n, BEST, key_len=key_len)
        key, nonce, aad = b.material(spec)
        msg = message(n, seed=n)
        buf, tag = Buf.alloc(n, msg), Buf.alloc(16)
        seal = ctypes.CFUNCTYPE(res, *args)(b.address(spec, "seal"))
        assert seal(b.ctx(spec), nonce, len(nonce), aad, len(aad), buf.addr, n, tag.addr) == 0
        ours = buf.read() + tag.read()
        assert lc.seal(key, nonce, aad, msg) == ours, n
        if n:
            assert lc.seal_scatter(key, nonce, aad, msg[:-1], msg[-1:]) == ours, n
        assert lc.open(key, nonce, aad, ours) == msg
        bad = bytearray(ours)
        bad[-1] ^= 1
        assert lc.open(key, nonce, aad, bytes(bad)) is None
    for op, shape in (("aead_seal", "one"), ("aead_scatter", "n+1"), ("aead_copy", "n+1"),
                      ("aead_open", "one")):
        case = b.build(CaseSpec(op, 300, BEST, shape, key_len=key_len, peer=AWSLC))
        assert case.label["impl"] == AWSLC


@needs_awscrt
def test_awslc_worker_masked():
    """In a worker masked to a backend without AVX-512, aws-lc's OPENSSL_ia32cap_P (read
    back) lacks the cleared bits and its GCM path is not the AVX-512 one."""
    names = {b.name for b in usable()}
    be = next((n for n in ("aesni_pclmul_avx", "aesni_pclmul") if n in names), None)
    if be is None:
        pytest.skip("no usable AES-NI backend below AVX-512 to mask aws-lc to")
    res = run("peers", backends=[be], sizes=[256], save=False,
              **{**FAST, "isolate": True, "passes": 1})
    info = json.loads(res.df[res.df["op"] == "aead_seal"]["aead_peers"].iloc[0])[AWSLC]
    w1 = int(info["ia32cap_effective"].split(":")[1], 16)
    assert not w1 >> 41 & 1 and not w1 >> 16 & 1  # VAES, AVX512F cleared
    assert "avx512" not in info["gcm_path"]
    assert {"aead_seal", "aead_scatter", "aead_copy"} <= set(res.df["op"])


def test_gcm_path_from_caps():
    w0 = (1 << 57) | (1 << 33) | (1 << 60) | (1 << 54)
    w1_512 = (1 << 41) | (1 << 42) | peers.VAES_GCM_W1
    assert gcm_path((w0, w1_512), "AWS-LC").startswith("aes_gcm_encrypt_avx512")
    assert gcm_path((w0, 1 << 41), "AWS-LC").startswith("aesni_gcm_encrypt")
    assert "not stitched" in gcm_path((1 << 57, 0), "AWS-LC")
    assert "no AES-NI" in gcm_path((0, 0), "AWS-LC")
    assert gcm_path(None, "x").startswith("unknown")


# -- any EVP_AEAD library by path -------------------------------------------------------------


@needs_awscrt
def test_peer_by_path_in_a_sweep():
    """--peer NAME=PATH: the awscrt .so given by path (its EVP_AEAD functions come from the
    .symtab); rows carry the name as impl, beside the built-in aws-lc."""
    res = run("sizes", backends=[BEST], sizes=[256], save=False,
              aead_peers=[f"mine={_awscrt_path()}"], **FAST)
    impls = set(res.df.loc[res.df["op"] == "aead_seal", "impl"])
    assert impls == {AWSLC, "mine"}
    assert not res.errors


def test_peer_by_path_without_the_functions(tmp_path):
    libc = next((ln.split()[-1] for ln in open("/proc/self/maps")
                 if ln.split()[-1].endswith(".so.6") and "libc" in ln), None)
    if libc is None:
        pytest.skip("no libc.so.6 mapped in this process")
    with pytest.raises(peers.PeerUnavailable, match="exports no EVP_aead"):
        AeadPeer("libc", libc)
    with pytest.raises(peers.PeerUnavailable, match="cannot load"):
        AeadPeer("nothing", str(tmp_path / "nope.so"))


def test_parse_peers_and_cli_errors(capsys):
    assert parse_peers(["a=/x.so", "b-2=/y.so"]) == {"a": "/x.so", "b-2": "/y.so"}
    assert parse_peers("a=/x.so,b=/y.so") == {"a": "/x.so", "b": "/y.so"}
    for bad in (["noequals"], ["a b=/x"], ["a=/x", "a=/y"]):
        with pytest.raises(ValueError):
            parse_peers(bad)
    with pytest.raises(SystemExit) as e:
        cli.main(["sizes", "--peer", "oops"])
    assert e.value.code == 2 and "NAME=/path" in capsys.readouterr().err


# -- the honest headline ----------------------------------------------------------------------


def _peer_rows() -> pd.DataFrame:
    rows = []
    for be, ours, o3, o4, lc in (("vaes_avx512", 1000.0, 3200.0, 1290.0, 1210.0),
                                 ("aesni_pclmul_avx", 3000.0, 3300.0, 3100.0, 2900.0)):
        for op, impl, ns in (("seal", "vgkernels", ours), ("openssl", "openssl", o3),
                             ("openssl4_seal", "openssl_bundled", o4),
                             ("aead_seal", AWSLC, lc)):
            rows.append({"backend": be, "n": 16384, "bytes": 16384, "op": op, "impl": impl,
                         "shape": "one", "min_ns": ns, "median_lo_ns": ns, "median_hi_ns": ns,
                         "openssl_version": "OpenSSL 3.0.19 1 Jul 2025",
                         "bundled_openssl_version": "OpenSSL 4.0.3 1 Oct 2026",
                         "aead_peers": json.dumps({AWSLC: {"version": "AWS-LC 5.12.0"}})})
    return pd.DataFrame(rows)


def test_best_peer_is_the_fastest_named():
    df = _peer_rows()
    names = peerset.peer_names(df)
    assert names["openssl", "openssl"] == "OpenSSL 3.0.19 (system, no VAES code)"
    assert names["openssl4_seal", "openssl_bundled"] == "OpenSSL 4.0.3 (cryptography's)"
    assert names["aead_seal", AWSLC] == "AWS-LC 5.12.0"
    bp = peerset.best_peers(df, sizes=(16384,))
    top = bp["vaes_avx512"]
    assert top["best_peer_16k"] == "AWS-LC 5.12.0"
    assert top["best_peer_ratio_16k"] == pytest.approx(1.21)
    assert top["peers_16k"]["OpenSSL 3.0.19 (system, no VAES code)"] == pytest.approx(3.2)
    slow = bp["aesni_pclmul_avx"]
    assert slow["best_peer_ratio_16k"] == pytest.approx(2900 / 3000)  # below 1: peer faster


def test_conclusions_never_quote_openssl30_as_the_vaes_peer():
    from vgkernels.report import peers_roofline as pr

    lines = pr.conclusions(_peer_rows(), pd.DataFrame())
    vaes = next(x for x in lines if x.startswith("**vaes_avx512**"))
    assert "1.21× the rate of the fastest peer" in vaes and "AWS-LC 5.12.0" in vaes
    assert "OpenSSL 3.0.19 (system, no VAES code) 3.20×" in vaes
    assert lines[0].startswith("Use `vaes_avx512`")


# -- noise ----------------------------------------------------------------------------------


def test_median_interval_and_noisy_flag():
    rng = np.random.default_rng(3)
    x = list(100 + rng.normal(0, 1, 31))
    lo, hi = median_interval(x)
    assert lo <= float(np.median(x)) <= hi and hi - lo < 2
    assert median_interval([5.0]) == (5.0, 5.0)
    df = pd.DataFrame({"spread": [0.01, NOISY_SPREAD * 3], "noisy": [False, True],
                       "impl": ["vgkernels"] * 2, "backend": [BEST] * 2, "op": ["seal"] * 2,
                       "pieces": ["256"] * 2})
    assert "1 of 2 cases" in cli.noise_warning(df)
    assert cli.noise_warning(df.iloc[:1]) is None
    z = peerset.noise_summary(df)
    assert z["noisy"] == 1 and z["worst_spread"] == pytest.approx(NOISY_SPREAD * 3)


def test_banners_for_tiny_and_noise():
    notes = {"06_peers_roofline": {"sweeps": [{"label": "peers", "noise": {
        "cases": 10, "noisy": 2, "worst_spread": 0.4, "worst": "openssl x openssl 256"}}]}}
    b = peerset.banners(notes, "tiny")
    assert peerset.SMOKE_TEST in b[0] and "2 of 10" in b[1] and "0.40" in b[1]
    assert peerset.banners({}, "quick") == []


def test_gap_spreads_rounds_with_warmup(drv):
    """gap_ms puts idle time between rounds (each then warmed up untimed): k timed samples."""
    case = Builder(drv).build(CaseSpec("seal", 256, BEST))
    t0 = time.perf_counter()
    t = drv.measure([case], k=3, target_ns=2_000, gap_ms=60)
    assert time.perf_counter() - t0 >= 0.12
    assert [len(m.ticks) for m in t.results] == [3]


def test_masks_cover_awslc_bits():
    """aws-lc reads the same OPENSSL_ia32cap words: the AVX-512 GCM test bits are among the
    ones the vaes_avx2 mask clears."""
    mask = peers.ia32cap_mask(BY_NAME["vaes_avx2"])
    w1 = int(mask.split(":")[1].lstrip("~"), 16)
    assert w1 & (1 << 16) and w1 & (1 << 31)


_SHIM = r"""
#include <stddef.h>
#include <stdint.h>
/* An EVP_AEAD library made of exported forwarders: stands in for a BoringSSL / aws-lc
   libcrypto.so (whose functions are exported) without building one. */
static void *t[8];
void shim_bind(void **table) { for (int i = 0; i < 8; i++) t[i] = table[i]; }
typedef const void *(*aead_fn)(void);
const void *EVP_aead_aes_128_gcm(void) { return ((aead_fn)t[0])(); }
const void *EVP_aead_aes_192_gcm(void) { return ((aead_fn)t[1])(); }
const void *EVP_aead_aes_256_gcm(void) { return ((aead_fn)t[2])(); }
void *EVP_AEAD_CTX_new(const void *a, const uint8_t *k, size_t kl, size_t tl) {
  return ((void *(*)(const void *, const uint8_t *, size_t, size_t))t[3])(a, k, kl, tl); }
typedef int (*seal_fn)(const void *, uint8_t *, size_t *, size_t, const uint8_t *, size_t,
                       const uint8_t *, size_t, const uint8_t *, size_t);
int EVP_AEAD_CTX_seal(const void *c, uint8_t *o, size_t *ol, size_t m, const uint8_t *n,
                      size_t nl, const uint8_t *i, size_t il, const uint8_t *a, size_t al) {
  return ((seal_fn)t[4])(c, o, ol, m, n, nl, i, il, a, al); }
int EVP_AEAD_CTX_open(const void *c, uint8_t *o, size_t *ol, size_t m, const uint8_t *n,
                      size_t nl, const uint8_t *i, size_t il, const uint8_t *a, size_t al) {
  return ((seal_fn)t[5])(c, o, ol, m, n, nl, i, il, a, al); }
int EVP_AEAD_CTX_seal_scatter(const void *c, uint8_t *o, uint8_t *ot, size_t *otl, size_t m,
                              const uint8_t *n, size_t nl, const uint8_t *i, size_t il,
                              const uint8_t *x, size_t xl, const uint8_t *a, size_t al) {
  return ((int (*)(const void *, uint8_t *, uint8_t *, size_t *, size_t, const uint8_t *,
                   size_t, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *,
                   size_t))t[6])(c, o, ot, otl, m, n, nl, i, il, x, xl, a, al); }
int EVP_AEAD_CTX_open_gather(const void *c, uint8_t *o, const uint8_t *n, size_t nl,
                             const uint8_t *i, size_t il, const uint8_t *tg, size_t tl,
                             const uint8_t *a, size_t al) {
  return ((int (*)(const void *, uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t,
                   const uint8_t *, size_t, const uint8_t *, size_t))t[7])(
      c, o, n, nl, i, il, tg, tl, a, al); }
"""


@needs_awscrt
def test_peer_by_path_with_exported_symbols(tmp_path, drv):
    """A library exporting the EVP_AEAD functions (as a BoringSSL or aws-lc shared build
    does) binds through dlsym: here a shim forwarding to aws-lc, built with the C compiler."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the exported-symbol shim")
    src, so = tmp_path / "shim.c", tmp_path / "libshim.so"
    src.write_text(_SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True)
    lc = peer(AWSLC)
    names = ["EVP_aead_aes_128_gcm", "EVP_aead_aes_192_gcm", "EVP_aead_aes_256_gcm",
             "EVP_AEAD_CTX_new", "EVP_AEAD_CTX_seal", "EVP_AEAD_CTX_open",
             "EVP_AEAD_CTX_seal_scatter", "EVP_AEAD_CTX_open_gather"]
    shim = ctypes.CDLL(str(so))
    shim.shim_bind((ctypes.c_void_p * 8)(*[lc.addresses[n] for n in names]))
    p = peer("shim", str(so))  # the instance the Builder below uses too
    assert p.info.binding == "dynamic symbols" and p.info.caps is None
    b = Builder(drv, aead_paths={"shim": str(so)})
    for op, shape in (("aead_seal", "one"), ("aead_scatter", "n+1"), ("aead_open", "one")):
        b.build(CaseSpec(op, 333, BEST, shape, peer="shim"))  # checked against cryptography
    key, nonce, aad = bytes(range(16)), bytes(12), b"ad"
    assert p.seal(key, nonce, aad, b"x" * 40) == lc.seal(key, nonce, aad, b"x" * 40)
