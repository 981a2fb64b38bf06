"""One AesGcm shared by several threads (ctypes drops the GIL around kernel calls, so the calls
really overlap): the context is read-only to the kernels, so every result is the reference."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from helpers import TAG, rbytes, ref, rng

from vgkernels.api import AesGcm

KEY = bytes(range(24))


def test_shared_instance_across_threads(backend):
    a = AesGcm(KEY, backend=backend)
    n_jobs = 16 if backend != "portable" else 6
    size = 64 * 1024 if backend != "portable" else 8 * 1024

    def job(i):
        r = rng("threads", i)
        nonce, aad, pt = rbytes(r, 12 if i % 3 else 20), rbytes(r, i), rbytes(r, size + i)
        results = []
        for _ in range(4):
            ct = a.encrypt(nonce, pt, aad)
            results.append(ct)
            results.append(a.encrypt(nonce, [pt[:i * 7], pt[i * 7:]], aad, copy_below=False))
            buf = bytearray(ct[:-TAG])
            a.decrypt_in_place(nonce, buf, aad, ct[-TAG:])
            results.append(bytes(buf) == pt)
        return nonce, aad, pt, results

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(job, range(n_jobs)))
    for i, (nonce, aad, pt, results) in enumerate(outcomes):
        want = ref(KEY, nonce, pt, aad)
        for j, got in enumerate(results):
            assert got == (True if j % 3 == 2 else want), (backend, i, j)
