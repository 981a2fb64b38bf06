"""Executing a job (chunks of cases) in this process or in a worker process per peer mask.

A *chunk* is a set of cases timed together, interleaved round-robin (typically every op and
shape at one size of one backend).  A *job* is the chunks one process measures.  ``execute``
yields events (plain JSON-able dicts), so the same code runs in-process and in
``python -m vgkernels.bench.worker``, which prints them as JSON lines:

* ``{"type": "meta", "process": {...}}``: TSC rate, pinned CPU, OpenSSL info of the process;
* ``{"type": "skip", "message": ...}``: something did not run (a peer, an op); the rest did;
* ``{"type": "error", "message": ...}``: a case gave a wrong result (never timed);
* ``{"type": "chunk", "index", "run", "timestamp", "overhead", "results"}``: one chunk's
  samples (``results[i] = {"label", "batch", "ticks"}``, ticks per operation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .cases import OPENSSL_OPS, PY_OPS, Builder, CaseSpec, KernelError, Skip


@dataclass
class Chunk:
    run: int
    specs: list[CaseSpec]
    index: int = 0


@dataclass
class Job:
    chunks: list[Chunk]
    k: int = 33
    target_ns: float = 20_000.0
    cpu: int | None = None
    verify: bool = True
    libcrypto: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # for a worker: e.g. OPENSSL_ia32cap

    def to_json(self) -> str:
        return json.dumps({
            "chunks": [{"run": c.run, "index": c.index, "specs": [s.to_dict() for s in c.specs]}
                       for c in self.chunks],
            "k": self.k, "target_ns": self.target_ns, "cpu": self.cpu, "verify": self.verify,
            "libcrypto": self.libcrypto, "env": self.env})

    @classmethod
    def from_json(cls, text: str) -> Job:
        d = json.loads(text)
        chunks = [Chunk(c["run"], [CaseSpec.from_dict(s) for s in c["specs"]], c["index"])
                  for c in d.pop("chunks")]
        return cls(chunks, **d)


def process_meta(builder: Builder, want_openssl: bool) -> dict[str, Any]:
    """What this process knows about itself: TSC, pinning, the OpenSSL it loaded."""
    from . import peers

    meta: dict[str, Any] = dict(builder.driver.meta())
    meta["ia32cap"] = os.environ.get("OPENSSL_ia32cap")
    if want_openssl:
        try:
            info = builder.openssl().info
            meta.update(openssl_lib=info.path, openssl_version=info.version,
                        ia32cap_effective=(f"0x{info.caps[0]:x}:0x{info.caps[1]:x}"
                                           if info.caps else None),
                        openssl_path=info.gcm_path)
        except peers.PeerUnavailable:
            pass
    meta["cryptography_openssl"] = peers.cryptography_version()
    return meta


def execute(job: Job) -> Iterator[dict[str, Any]]:
    """Measure a job's chunks in this process; yields events (see the module docstring)."""
    from . import peers
    from .driver import driver

    drv = driver(job.cpu)
    builder = Builder(drv, verify=job.verify, libcrypto=job.libcrypto)
    want_openssl = any(s.op in OPENSSL_OPS for c in job.chunks for s in c.specs)
    openssl_error: str | None = None
    if want_openssl:
        try:
            builder.openssl()
        except peers.PeerUnavailable as e:
            openssl_error = str(e)
            yield {"type": "skip", "message": openssl_error}
    yield {"type": "meta", "process": process_meta(builder, want_openssl)}
    told: set[str] = set()
    for chunk in job.chunks:
        cases = []
        for spec in chunk.specs:
            if spec.op in OPENSSL_OPS and openssl_error:
                continue
            try:
                cases.append(builder.build(spec))
            except Skip as e:
                if str(e) not in told:
                    told.add(str(e))
                    yield {"type": "skip", "message": str(e)}
            except KernelError as e:
                yield {"type": "error", "message": str(e), "label": spec.label()}
            except ImportError as e:
                if spec.op in PY_OPS:
                    msg = f"cryptography peer skipped: {e}"
                    if msg not in told:
                        told.add(msg)
                        yield {"type": "skip", "message": msg}
                else:
                    raise
        ms, ov = drv.measure(cases, k=job.k, target_ns=job.target_ns)
        yield {
            "type": "chunk", "index": chunk.index, "run": chunk.run,
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "overhead": {"batch": ov.batch, "ticks": ov.ticks} if ov else None,
            "results": [{"label": m.label, "batch": m.batch, "ticks": m.ticks} for m in ms],
        }


def worker_main() -> int:
    """``python -m vgkernels.bench.worker``: a job as JSON on stdin, events as JSON lines."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (by Python or C) goes to stderr, not the protocol
    try:
        job = Job.from_json(sys.stdin.read())
        for ev in execute(job):
            out.write(json.dumps(ev) + "\n")
    except KeyboardInterrupt:
        return 130
    return 0


class WorkerDied(RuntimeError):
    pass


def run_job(job: Job, isolate: bool) -> Iterator[dict[str, Any]]:
    """Events of a job, run in this process or in a worker with ``job.env`` set (a worker is
    killed when the consumer stops early, e.g. on KeyboardInterrupt)."""
    if not isolate:
        yield from execute(job)
        return
    env = {**os.environ, **job.env}
    for key, val in job.env.items():
        if val is None:  # pragma: no cover - explicit unset
            env.pop(key, None)
    proc = subprocess.Popen([sys.executable, "-m", "vgkernels.bench.worker"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(job.to_json())
        proc.stdin.close()
        for line in proc.stdout:
            yield json.loads(line)
        rc = proc.wait()
        if rc != 0:
            raise WorkerDied(f"worker (env {job.env}) exited with {_describe_rc(rc)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _describe_rc(rc: int) -> str:
    if rc < 0:
        import signal

        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"status {rc}"



