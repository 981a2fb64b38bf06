"""The Python boundary under odd buffers and races: object arrays, buffers resized by another
thread, copies and close, close while a call runs, a key context that fails closed.  Where a
regression would crash the interpreter the case runs in a child process."""

from __future__ import annotations

import copy
import ctypes
import os
import pickle
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from helpers import ref

from vgkernels import abi
from vgkernels.api import AesGcm, InvalidTag

ROOT = Path(__file__).resolve().parents[1]
KEY = bytes(range(16))
NONCE = b"\x02" * 12
AAD = b"boundary"


def child(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


# -- object and pointer arrays ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [object, np.dtype([("a", "u1"), ("b", "O")])])
def test_object_arrays_refused(backend, dtype):
    a = AesGcm(KEY, backend=backend)
    arr = np.array([b"a", b"b"], dtype=object) if dtype is object else np.zeros(2, dtype)
    before = arr.copy()
    for call in (lambda: a.encrypt_in_place(NONCE, arr, AAD), lambda: a.encrypt(NONCE, arr, AAD),
                 lambda: a.encrypt(NONCE, [b"x", arr], AAD), lambda: a.encrypt(arr, b"x", AAD),
                 lambda: a.encrypt(NONCE, b"x", arr)):
        with pytest.raises(TypeError, match="format .*objects and pointers are addresses"):
            call()
    assert arr.tobytes() == before.tobytes()


def test_plain_formats_accepted(backend):
    """Numbers are data: their bytes are encrypted as they lie in memory."""
    a = AesGcm(KEY, backend=backend)
    for arr in (np.arange(10, dtype="<f8"), np.arange(6, dtype=">i4"), np.zeros(3, "c16")):
        assert a.encrypt(NONCE, arr, AAD) == ref(KEY, NONCE, arr.tobytes(), AAD)


def test_object_array_in_place_does_not_crash_child():
    """The original report: encrypting a numpy object array in place then using it crashed."""
    r = child("""
        import numpy as np
        from vgkernels.api import AesGcm
        a = AesGcm(bytes(16))
        arr = np.array([b"a", b"b"], dtype=object)
        try:
            a.encrypt_in_place(b"n" * 12, arr)
        except TypeError as exc:
            print("refused:", exc)
        print(arr.tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "[b'a', b'b']" in r.stdout


# -- a buffer resized between measuring and use ----------------------------------------------------

def test_resize_just_before_the_call_is_seen_whole(backend):
    """A profile hook resizes the buffer at every C call the method makes (where the old code
    measured the length in one call and took the address in a later one): the call must see
    one consistent buffer, the one it acquired."""
    a = AesGcm(KEY, backend=backend)
    buf = bytearray(b"x" * 4096)
    sizes = iter([16, 4096, 7, 1000] * 50)
    active = [True]

    def hook(frame, event, arg):
        if event == "c_call" and active[0]:
            try:
                buf[:] = b"y" * next(sizes)
            except BufferError:  # exported: the call has it, as it should
                pass

    sys.setprofile(hook)
    try:
        ct = a.encrypt(NONCE, buf, AAD)
        tag = a.encrypt_in_place(NONCE, buf, AAD)
        active[0] = False
    finally:
        sys.setprofile(None)
    assert len(ct) - 16 in (16, 4096, 7, 1000)
    assert a.decrypt(NONCE, ct, AAD) in (b"y" * 16, b"y" * 4096, b"y" * 7, b"y" * 1000)
    a.decrypt_in_place(NONCE, buf, AAD, tag)
    assert set(buf) <= {ord("y")}


def test_resizing_thread_hammering_child():
    """Seconds of in-place seals of a bytearray while another thread resizes it: no crash, no
    heap bytes in any output, every result decrypts to what was there."""
    r = child("""
        import threading, time
        from vgkernels.api import AesGcm
        a = AesGcm(bytes(16), backend="aesni_pclmul")
        buf = bytearray(b"\\x55" * 65536)
        stop = time.monotonic() + 3.0
        refused = [0]
        def resize():
            n = 0
            while time.monotonic() < stop:
                n += 1
                try:
                    buf[:] = b"\\x55" * (16 if n % 2 else 65536)
                except BufferError:
                    refused[0] += 1
        t = threading.Thread(target=resize)
        t.start()
        calls = 0
        while time.monotonic() < stop:
            # the other thread may refill buf right after the call: only the sizes and the
            # one-shot round trip can be checked
            assert len(a.encrypt_in_place(b"n" * 12, buf)) == 16
            ct = a.encrypt(b"n" * 12, bytes(buf) if calls % 2 else buf, None)
            assert len(ct) - 16 in (16, 65536), len(ct)  # a size buf had, nothing past it
            pt = a.decrypt(b"n" * 12, ct, None)
            assert len(pt) == len(ct) - 16
            calls += 1
        t.join()
        print("ok", calls, refused[0])
    """, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok"), r.stdout


# -- copies, pickling, close -----------------------------------------------------------------------

def test_copy_then_close_is_independent(backend):
    a = AesGcm(KEY, backend=backend)
    ct = a.encrypt(NONCE, b"payload", AAD)
    for b in (copy.copy(a), copy.deepcopy(a)):
        assert b._holder is not a._holder
        assert b.decrypt(NONCE, ct, AAD) == b"payload"
    b, c = copy.copy(a), copy.deepcopy(a)
    a.close()
    with pytest.raises(ValueError, match="this AesGcm was closed"):
        a.decrypt(NONCE, ct, AAD)
    # the report: a wiped context accepted any ciphertext under an all-zero tag
    with pytest.raises(ValueError, match="this AesGcm was closed"):
        a.decrypt(NONCE, os.urandom(40) + bytes(16), AAD)
    for x in (b, c):
        assert x.decrypt(NONCE, ct, AAD) == b"payload"
        with pytest.raises(InvalidTag):
            x.decrypt(NONCE, os.urandom(40) + bytes(16), AAD)
    with pytest.raises(ValueError, match="closed"):
        copy.copy(a)


def test_pickle_refused(backend):
    a = AesGcm(KEY, backend=backend)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match="cannot be pickled: it holds key material"):
            pickle.dumps(a, protocol=proto)


def test_close_during_calls_never_gives_a_wrong_result():
    """close() from another thread while calls run with the GIL released: each call returns
    the right answer or raises 'closed', never a wrong tag or ciphertext (12 trials)."""
    data = bytes(range(256)) * 4096  # 1 MiB: the kernels run without the GIL
    want = ref(KEY, NONCE, data, AAD)
    for trial in range(12):
        a = AesGcm(KEY, backend="aesni_pclmul" if trial % 2 else None)
        results: list[object] = []
        started = threading.Event()

        def work(a=a, results=results, started=started):
            started.set()
            for _ in range(6):
                try:
                    results.append(a.encrypt(NONCE, data, AAD))
                except ValueError as exc:
                    results.append(str(exc))

        t = threading.Thread(target=work)
        t.start()
        started.wait()
        a.close()
        t.join()
        for r in results:
            assert r == want or r == "this AesGcm was closed", (trial, str(r)[:80])
        assert not any(bytes(a._holder)), "close returned before the wipe"


# -- the C entries fail closed --------------------------------------------------------------------

@pytest.mark.parametrize("state", ["zero", "wiped", "failed_init", "bad_rounds"])
def test_c_entries_fail_closed(backend, kernel_sets, state):
    """Every entry returns RC_CONTEXT, writes nothing and leaves the buffers as they were, on
    a context that key_init did not finish."""
    k = kernel_sets(backend)
    fn = {op: ctypes.CFUNCTYPE(r, *a)(k.address(op))
          for op, (r, a, _) in abi.SIGNATURES.items()}
    raw = (ctypes.c_uint8 * (abi.CTX_SIZE + 64))()
    ctx = (ctypes.addressof(raw) + 63) & ~63
    if state != "zero":
        assert fn["key_init"](ctx, KEY, 16) == 0
    if state == "wiped":
        ctypes.memset(ctx, 0, abi.CTX_SIZE)
    elif state == "failed_init":
        assert fn["key_init"](ctx, KEY, 17) == -1
    elif state == "bad_rounds":
        ctypes.c_uint32.from_address(ctx + abi.CTX_NROUNDS).value = 11
    buf = ctypes.create_string_buffer(b"plaintext!" * 10, 100)
    before = buf.raw
    tag = ctypes.create_string_buffer(b"\xaa" * 16, 16)
    st = (ctypes.c_uint8 * abi.STREAM_SIZE)()
    rc = abi.RC_CONTEXT
    assert fn["seal"](ctx, NONCE, 12, AAD, len(AAD), buf, 100, tag) == rc
    assert fn["seal_out"](ctx, NONCE, 12, AAD, len(AAD), before, buf, 100, tag) == rc
    assert fn["open"](ctx, NONCE, 12, AAD, len(AAD), buf, 100, bytes(16), 16) == rc
    assert fn["open_out"](ctx, NONCE, 12, AAD, len(AAD), before, buf, 100, bytes(16), 16) == rc
    pieces = (abi.Piece * 1)(abi.Piece(ctypes.addressof(buf), 100))
    assert fn["seal_gather"](ctx, NONCE, 12, AAD, len(AAD), pieces, 1, buf, tag) == rc
    assert fn["ctr32"](ctx, bytes(16), before, buf, 6) == rc
    assert fn["ghash"](ctx, tag, before, 6) == rc
    assert fn["encrypt_blocks"](ctx, tag, bytes(16), before, buf, 100) == rc
    assert fn["stream_init"](ctx, st, NONCE, 12) == rc
    assert fn["stream_aad"](ctx, st, AAD, len(AAD)) == rc
    assert fn["stream_encrypt"](ctx, st, before, buf, 100) == rc
    assert fn["stream_finish"](ctx, st, tag) == rc
    assert buf.raw == before and tag.raw == b"\xaa" * 16 and not any(bytes(st))
