"""No kernel reads or writes a byte outside its buffers.

Every buffer (nonce, AAD, text, output, tag, each gather piece, streaming chunks) is placed so
its last byte is the last byte before a PROT_NONE page ("end"), or its first byte is the first
after one ("start"); block counts 0..40 with every partial size 0..15; seal in place, seal_out,
gather (two pieces, each at its own guard page), open (in place, into, truncated tags, a wrong
tag's wipe) and streaming; outputs checked against the reference model.  Zero-length buffers
whose pointer is the guard page itself must not be touched either.

A stray access kills the process with SIGSEGV, so each (backend, placement) runs in a child
process that prints the case it is on; the test reports the signal and the last case.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MAX_BLOCKS = 40


def run_child(backend: str, placement: str, variant: str = "") -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), backend, placement,
                           variant], capture_output=True, text=True, env=env, timeout=300,
                          cwd=HERE)
    last = proc.stdout.strip().splitlines()[-3:]
    what = f"{backend} {variant or 'default variant'}"
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        pytest.fail(f"{what}: kernel faulted ({sig}) with buffers at the {placement} of a "
                    f"guarded page; last cases: {last}\n{proc.stderr[-3000:]}")
    assert proc.returncode == 0, f"{what} {placement}: {last}\n{proc.stderr[-3000:]}"
    assert last and last[-1] == "ok", proc.stdout[-2000:]


@pytest.mark.parametrize("placement", ["end", "start"])
def test_no_access_outside_buffers(backend, placement):
    run_child(backend, placement)


def test_no_access_outside_buffers_split_tail(backend, kernel_sets):
    """The same with the split tail (ctr32 + ghash for the leftovers) and the smallest group,
    a variant the variant sweep compiles anyway."""
    from helpers import variants_of

    v = next(v for v in variants_of(backend, every=False) if v.tail == "split")
    kernel_sets(backend, v)  # compiled (and disk-cached) here, loaded by the child
    run_child(backend, "end", f"{v.tail},{v.group},{v.stitch_min}")


@pytest.mark.parametrize("placement", ["end", "start"])
def test_guard_page_faults(placement):
    """The harness can fail: touching one byte past an "end" buffer (or before a "start" one)
    kills the child with SIGSEGV."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "selftest", placement],
                          capture_output=True, text=True, timeout=60, cwd=HERE)
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.strip().splitlines()[-1] == "buffer readable; touching the guard page"


def _selftest(placement: str) -> None:
    from helpers import GuardedSlots

    slots = GuardedSlots(2)
    v = slots.put(placement, 1, b"x" * 100)
    assert bytes(v) == b"x" * 100
    print("buffer readable; touching the guard page", flush=True)
    edge = slots.guard_addr(1) if placement == "end" else slots.base + slots.data_start(1) - 1
    ctypes.string_at(edge, 1)
    print("no fault", flush=True)


# -- the child process ----------------------------------------------------------------------------


def _child(backend: str, placement: str, vspec: str) -> None:
    from helpers import GuardedSlots, addr_of, bind, pieces_array, rbytes, ref, rng

    from vgkernels import abi
    from vgkernels.api import AesGcm, InvalidTag
    from vgkernels.build import kernels
    from vgkernels.variant import Variant

    variant = None
    if vspec:
        tail, group, stitch_min = vspec.split(",")
        variant = Variant(tail=tail, group=int(group), stitch_min=int(stitch_min))

    slots = GuardedSlots(10)
    NONCE, AAD, BUF, OUT, TAG_, P0, P1, CT, CHUNK, CHUNK_OUT = range(10)

    def put(slot: int, data: bytes) -> memoryview:
        return slots.put(placement, slot, data)

    def empty_at_guard(slot: int) -> int:
        """An address nothing may dereference: the guard page next to the slot."""
        if placement == "end":
            return slots.guard_addr(slot)
        return slots.base + slots.data_start(slot) - 1

    seal_out = bind(backend, "seal_out", variant)
    seal_gather = bind(backend, "seal_gather", variant)
    seal, open_out = bind(backend, "seal", variant), bind(backend, "open_out", variant)
    open_ = bind(backend, "open", variant)
    two_slice = None
    k = kernels(backend, variant)
    if k.backend.two_slice:
        try:
            restype, argtypes, _ = abi.TWO_SLICE_SIGNATURE
            two_slice = ctypes.CFUNCTYPE(restype, *argtypes)(k.address("seal_two_slice"))
        except KeyError:
            print(f"{backend}: no seal_two_slice entry built; TLS shape via the API only")
    for nb in range(MAX_BLOCKS + 1):
        for partial in range(16):
            n = 16 * nb + partial
            case = f"{backend} {placement} blocks={nb} partial={partial}"
            print(case, flush=True)
            r = rng("guard", nb, partial)
            key = rbytes(r, (16, 24, 32)[(nb + partial) % 3])
            nonce = rbytes(r, 12 if (nb + partial) % 4 else 1 + (nb * 3 + partial) % 20)
            aad = rbytes(r, (nb * 5 + partial) % 34)
            pt = rbytes(r, n)
            want = ref(key, nonce, pt, aad)
            ct, tag = want[:-16], want[-16:]
            a = AesGcm(key, backend=backend, variant=variant)
            nv, av = put(NONCE, nonce), put(AAD, aad)

            def expect(got, what, want=want, case=case):
                if got != want:
                    raise AssertionError(f"{case}: {what} differs from the reference")

            # seal in place (API), with the text at the guard
            buf = put(BUF, pt)
            t = a.encrypt_in_place(nv, buf, av)
            expect(bytes(buf) + t, "encrypt_in_place")
            # seal in place through the ABI, tag at the guard too
            buf = put(BUF, pt)
            tv = put(TAG_, bytes(16))
            assert seal(a.ctx, addr_of(nv), len(nonce), addr_of(av) or empty_at_guard(AAD),
                        len(aad), addr_of(buf) or empty_at_guard(BUF), n, addr_of(tv)) == 0
            expect(bytes(buf) + bytes(tv), "seal (ABI)")
            # seal_out: input and output (and tag) each at a guard page
            src, out, tv = put(BUF, pt), put(OUT, bytes(n)), put(TAG_, bytes(16))
            assert seal_out(a.ctx, addr_of(nv), len(nonce), addr_of(av) or empty_at_guard(AAD),
                            len(aad), addr_of(src) or empty_at_guard(BUF),
                            addr_of(out) or empty_at_guard(OUT), n, addr_of(tv)) == 0
            expect(bytes(out) + bytes(tv), "seal_out")
            out = put(OUT, bytes(n))
            t = a.encrypt_into(out, nv, [src], av, copy_below=False)
            expect(bytes(out) + t, "encrypt_into one piece")
            # gather: two pieces, each ending (starting) at its own guard page
            cut = (nb * 7 + partial * 3) % (n + 1)
            p0, p1 = put(P0, pt[:cut]), put(P1, pt[cut:])
            out = put(OUT, bytes(n))
            t = a.encrypt_into(out, nv, [p0, p1], av, copy_below=False)
            expect(bytes(out) + t, f"gather cut={cut}")
            out = put(OUT, bytes(n))
            t = a.encrypt_into(out, nv, [p0, p1], av, copy_below=(n + 1, n + 1))
            expect(bytes(out) + t, f"copy+seal cut={cut}")
            out, tv = put(OUT, bytes(n)), put(TAG_, bytes(16))
            arr = pieces_array([(empty_at_guard(P1), 0), (addr_of(p0) or empty_at_guard(P0), cut),
                                (empty_at_guard(CHUNK), 0),
                                (addr_of(p1) or empty_at_guard(P1), n - cut),
                                (empty_at_guard(P0), 0)])
            assert seal_gather(a.ctx, addr_of(nv), len(nonce), addr_of(av) or empty_at_guard(AAD),
                               len(aad), arr, 5, addr_of(out) or empty_at_guard(OUT),
                               addr_of(tv)) == 0
            expect(bytes(out) + bytes(tv), f"seal_gather with empty pieces at guards cut={cut}")
            # open: in place, into, truncated tag, wrong tag
            cv, tv = put(CT, ct), put(TAG_, tag)
            buf = put(BUF, ct)
            a.decrypt_in_place(nv, buf, av, tv)
            assert bytes(buf) == pt, f"{case}: decrypt_in_place"
            out = put(OUT, bytes(n))
            a.decrypt_into(out, nv, cv, av, tv)
            assert bytes(out) == pt, f"{case}: decrypt_into"
            tl = 4 + (nb + partial) % 13
            tv = put(TAG_, tag[:tl])
            out = put(OUT, bytes(n))
            rc = open_out(a.ctx, addr_of(nv), len(nonce), addr_of(av) or empty_at_guard(AAD),
                          len(aad), addr_of(cv) or empty_at_guard(CT),
                          addr_of(out) or empty_at_guard(OUT), n, addr_of(tv), tl)
            assert rc == 0 and bytes(out) == pt, f"{case}: open_out tag_len={tl} rc={rc}"
            buf = put(BUF, ct)
            rc = open_(a.ctx, addr_of(nv), len(nonce), addr_of(av) or empty_at_guard(AAD),
                       len(aad), addr_of(buf) or empty_at_guard(BUF), n, addr_of(tv), tl)
            assert rc == 0 and bytes(buf) == pt, f"{case}: open tag_len={tl} rc={rc}"
            tv = put(TAG_, bytes([tag[0] ^ 1]) + tag[1:])
            out = put(OUT, b"\x55" * n)
            try:
                a.decrypt_into(out, nv, cv, av, tv)
                raise AssertionError(f"{case}: wrong tag accepted")
            except InvalidTag:
                assert bytes(out) == bytes(n), f"{case}: not wiped"
            # streaming: chunks and their outputs at guard pages
            chunk = 1 + (nb * 13 + partial) % 40
            enc = a.encryptor(nv)
            for i in range(0, len(aad), 7):
                enc.authenticate_additional_data(put(CHUNK, aad[i:i + 7]))
            got = bytearray()
            for i in range(0, n, chunk):
                cin, cout = put(CHUNK, pt[i:i + chunk]), put(CHUNK_OUT, bytes(len(pt[i:i + chunk])))
                enc.update_into(cin, cout)
                got += cout
            expect(bytes(got) + enc.finalize(), f"stream chunk={chunk}")
            dec = a.decryptor(nv, av)
            got = bytearray()
            for i in range(0, n, chunk):
                cin = put(CHUNK, ct[i:i + chunk])
                cout = put(CHUNK_OUT, bytes(len(cin)))
                dec.update_into(cin, cout)
                got += cout
            dec.finalize_with_tag(put(TAG_, tag))
            assert bytes(got) == pt, f"{case}: stream decrypt"
            # the TLS record shape (two-slice entry where built, any n0): n-1 bytes, then 1
            # (or 0)
            if n >= 1:
                n12, a16 = put(NONCE, nonce[:12].ljust(12, b"\x5c")), put(AAD, aad[:16])
                for n1 in (1, 0):
                    n0 = n - 1 if n1 else n
                    want2 = ref(key, bytes(n12), pt[:n0 + n1], bytes(a16))
                    p0, p1 = put(P0, pt[:n0]), put(P1, pt[n0:n0 + n1])
                    out = put(OUT, bytes(n0 + n1))
                    t = a.encrypt_into(out, n12, [p0, p1], a16)
                    expect(bytes(out) + t, f"TLS shape n0={n0} n1={n1}", want2)
                    if two_slice is not None:
                        out, tv = put(OUT, bytes(n0 + n1)), put(TAG_, bytes(16))
                        rc = two_slice(a.ctx, addr_of(n12), 12, addr_of(a16) or empty_at_guard(AAD),
                                       len(a16), addr_of(p0), n0,
                                       addr_of(p1) or empty_at_guard(P1), n1, addr_of(out),
                                       addr_of(tv))
                        assert rc == 0, f"{case}: seal_two_slice rc={rc}"
                        expect(bytes(out) + bytes(tv), f"seal_two_slice n0={n0} n1={n1}", want2)
    print("ok", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    ctypes.CDLL(None)  # libc loaded before the first fault-prone call
    if sys.argv[1] == "selftest":
        _selftest(sys.argv[2])
    else:
        _child(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
