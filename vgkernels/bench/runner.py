"""Measuring chunks in this process or in a worker process (one per OpenSSL mask).

A *chunk* is a set of cases timed together, interleaved round-robin (every op and shape at one
size of one backend).  A ``Session`` measures chunks in the process it lives in; a ``Worker``
is a session behind a pipe (``python -m vgkernels.bench.worker``), started with its own
environment (``OPENSSL_ia32cap`` is read once, when libcrypto loads).  Workers live for the
whole sweep and take one chunk at a time, so the sweep can spread each case's samples over
passes across the whole run.  Sessions speak in events (plain JSON-able dicts):

* ``{"type": "meta", "process": {...}}``: TSC rate, pinned CPU, OpenSSL info of the process;
* ``{"type": "skip", "message": ...}``: something did not run (a peer, an op); the rest did;
* ``{"type": "error", "message": ...}``: a case gave a wrong result (never timed);
* ``{"type": "chunk", "index", "run", "pass", "timestamp", "overhead", "core_hz", "results"}``:
  one chunk's samples (``results[i] = {"label", "batch", "ticks"}``, ticks per operation).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from .cases import (
    AEAD_OPS,
    OPENSSL4_OPS,
    OPENSSL_OPS,
    PY_OPS,
    Builder,
    CaseSpec,
    KernelError,
    Skip,
)


@dataclass
class Chunk:
    """A unit of work for a session: cases measured together (interleaved), k samples each."""
    run: int
    specs: list[CaseSpec]
    index: int = 0  # position in the sweep's plan (the same in every run and pass)
    k: int = 33  # samples per case in this chunk
    pass_: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON) of this chunk, for a worker process."""
        return {"run": self.run, "index": self.index, "k": self.k, "pass": self.pass_,
                "specs": [s.to_dict() for s in self.specs]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        """The chunk :meth:`to_dict` gave."""
        return cls(d["run"], [CaseSpec.from_dict(s) for s in d["specs"]], d["index"], d["k"],
                   d["pass"])


@dataclass
class Settings:
    """How a session measures (the same for all its chunks)."""

    target_ns: float = 20_000.0
    cpu: int | None = None
    pin: bool = True  # pin the measuring process to one CPU
    verify: bool = True  # check every case's output before timing it
    libcrypto: str | None = None
    stack_offset: int | None = None  # page offset of the stack at each call (None: default)
    openssl: bool = False  # load the OpenSSL peer up front (its info goes in the meta event)
    env: dict[str, str] = field(default_factory=dict)  # for a worker: e.g. OPENSSL_ia32cap
    aead: dict[str, str | None] = field(default_factory=dict)  # EVP_AEAD peers: name -> path
    gap_ms: float = 0.0  # idle gap before each round of a chunk (see Driver.measure)
    warmup: bool = False  # an untimed sample of every case before each round (Driver.measure)


class Session:
    """Measures chunks in this process."""

    def __init__(self, settings: Settings):
        from .driver import driver

        self.settings = settings
        self.driver = driver(settings.cpu, settings.pin)
        if settings.stack_offset is not None:
            self.driver.stack_offset = settings.stack_offset
        self.builder = Builder(self.driver, verify=settings.verify, libcrypto=settings.libcrypto,
                               aead_paths=settings.aead)
        self.openssl_error: str | None = None
        self.bundled_error: str | None = None  # the cryptography wheel's OpenSSL, native
        self.aead_errors: dict[str, str] = {}  # EVP_AEAD peer name -> why it cannot run
        # Built cases, kept for the chunk's later rounds: a sweep visits every chunk once per
        # round (see vgkernels.bench.sweep), so a case is built and calibrated once per process.
        self._cases: dict[CaseSpec, Any] = {}
        self._told: set[str] = set()

    def start(self) -> list[dict[str, Any]]:
        """Set up the driver and peers; returns the events (skips, notes) to report."""
        from . import peers

        events: list[dict[str, Any]] = []
        if self.settings.openssl:
            try:
                self.builder.openssl()
            except peers.PeerUnavailable as e:
                self.openssl_error = str(e)
                events.append(self._skip(str(e)))
            try:
                self.builder.bundled()
            except peers.PeerUnavailable as e:
                self.bundled_error = str(e)
                events.append(self._skip(str(e)))
            for name in self.settings.aead:
                try:
                    self.builder.aead(name)
                except peers.PeerUnavailable as e:
                    self.aead_errors[name] = str(e)
                    events.append(self._skip(str(e)))
        events.append({"type": "meta", "process": self.meta()})
        return events

    def meta(self) -> dict[str, Any]:
        """What this process knows about itself: TSC, pinning, the OpenSSL it loaded."""
        from . import peers

        meta: dict[str, Any] = dict(self.driver.meta())
        meta["ia32cap"] = os.environ.get("OPENSSL_ia32cap")
        if self.settings.openssl and self.openssl_error is None:
            info = self.builder.openssl().info
            meta.update(openssl_lib=info.path, openssl_version=info.version,
                        ia32cap_effective=(f"0x{info.caps[0]:x}:0x{info.caps[1]:x}"
                                           if info.caps else None),
                        openssl_path=info.gcm_path)
        if self.settings.openssl and self.bundled_error is None:
            b = self.builder.bundled().info
            meta.update(bundled_openssl_version=b.version,
                        bundled_ia32cap_effective=(f"0x{b.caps[0]:x}:0x{b.caps[1]:x}"
                                                   if b.caps else None),
                        bundled_openssl_path=b.gcm_path)
        if self.settings.openssl:
            aead: dict[str, Any] = {}
            for name in self.settings.aead:
                if name in self.aead_errors:
                    continue
                a = self.builder.aead(name).info
                aead[name] = {"version": a.version, "path": a.path, "binding": a.binding,
                              "ia32cap_effective": (f"0x{a.caps[0]:x}:0x{a.caps[1]:x}"
                                                    if a.caps else None),
                              "gcm_path": a.gcm_path}
            meta["aead_peers"] = json.dumps(aead, sort_keys=True)
        meta["cryptography_openssl"] = peers.cryptography_version()
        return meta

    def _skip(self, msg: str) -> dict[str, Any]:
        self._told.add(msg)
        return {"type": "skip", "message": msg}

    def chunk(self, chunk: Chunk) -> list[dict[str, Any]]:
        """Measure one chunk; returns its result rows and events."""
        from . import peers

        events: list[dict[str, Any]] = []
        cases = []
        for spec in chunk.specs:
            if spec.op in OPENSSL_OPS and self.openssl_error:
                continue
            if spec.op in OPENSSL4_OPS and self.bundled_error:
                continue
            if spec.op in AEAD_OPS and spec.peer in self.aead_errors:
                continue
            if spec in self._cases:
                cases.append(self._cases[spec])
                continue
            try:
                case = self.builder.build(spec)
                self._cases[spec] = case
                cases.append(case)
            except peers.PeerUnavailable as e:
                if spec.op in AEAD_OPS:
                    self.aead_errors[str(spec.peer)] = str(e)
                elif spec.op in OPENSSL4_OPS:
                    self.bundled_error = str(e)
                else:
                    self.openssl_error = str(e)
                events.append(self._skip(str(e)))
            except Skip as e:
                if str(e) not in self._told:
                    events.append(self._skip(str(e)))
            except KernelError as e:
                events.append({"type": "error", "message": str(e), "label": spec.label()})
            except ImportError as e:
                if spec.op not in PY_OPS:
                    raise
                msg = f"cryptography peer skipped: {e}"
                if msg not in self._told:
                    events.append(self._skip(msg))
        t = self.driver.measure(cases, k=chunk.k, target_ns=self.settings.target_ns,
                                gap_ms=self.settings.gap_ms,
                                warmup=self.settings.warmup or self.settings.gap_ms > 0)
        ov = t.overhead
        events.append({
            "type": "chunk", "index": chunk.index, "run": chunk.run, "pass": chunk.pass_,
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "overhead": {"batch": ov.batch, "ticks": ov.ticks} if ov else None,
            "core_hz": t.core_hz(self.driver.tsc_hz),
            "results": [{"label": m.label, "batch": m.batch, "ticks": m.ticks}
                        for m in t.results],
        })
        return events

    def close(self, kill: bool = False) -> None:
        """Release what the session holds (nothing to do in-process)."""
        pass


def worker_main() -> int:
    """``python -m vgkernels.bench.worker``: Settings as the first JSON line on stdin, then one
    chunk per line; answers with events as JSON lines, each batch ended by ``{"type": "end"}``.
    """
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (by Python or C) goes to stderr, not the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it keeps the rows

    def send(events: list[dict[str, Any]]) -> None:
        for ev in [*events, {"type": "end"}]:
            out.write(json.dumps(ev) + "\n")

    try:
        session = Session(Settings(**json.loads(sys.stdin.readline())))
        send(session.start())
        for line in sys.stdin:
            send(session.chunk(Chunk.from_dict(json.loads(line))))
    except KeyboardInterrupt:
        return 130
    return 0


class WorkerDied(RuntimeError):
    """A worker process exited while measuring (a crash in a kernel or a peer)."""
    pass


class Worker:
    """A Session in a child process with ``settings.env`` added to its environment."""

    def __init__(self, settings: Settings):
        self.settings = settings
        env = {**os.environ, **settings.env}
        self.proc = subprocess.Popen([sys.executable, "-m", "vgkernels.bench.worker"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)

    def _talk(self, line: str) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # reported below
        events = []
        for raw in self.proc.stdout:
            ev = json.loads(raw)
            if ev["type"] == "end":
                return events
            events.append(ev)
        raise WorkerDied(f"worker (env {self.settings.env}) exited with "
                         f"{_describe_rc(self.proc.wait())}")

    def start(self) -> list[dict[str, Any]]:
        """Send the settings; returns the worker's start events."""
        return self._talk(json.dumps(asdict(self.settings)))

    def chunk(self, chunk: Chunk) -> list[dict[str, Any]]:
        """Measure one chunk in the worker; returns its rows and events."""
        return self._talk(json.dumps(chunk.to_dict()))

    def close(self, kill: bool = False) -> None:
        """Stop the worker (``kill``: without waiting for it to finish)."""
        if self.proc.poll() is None and kill:
            self.proc.kill()
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _describe_rc(rc: int) -> str:
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"status {rc}"
