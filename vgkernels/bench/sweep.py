"""Named sweeps and ``run``: plan the chunks, execute them (in-process, or one worker process
per backend when OpenSSL peers are masked to it), collect tidy rows, save them.

A notebook::

    from vgkernels import bench
    res = bench.run("sizes", backends=["vaes_avx512"], sizes=[256, 16384], runs=2)
    res.df            # one row per case and run (min/median ns and ticks, spread, metadata)
    res.samples       # one row per sample: what vgkernels.analysis consumes
    res.paths         # the Parquet / CSV / JSON files written under data/<host>/
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ..backends import BY_NAME, Backend, availability, get, usable
from ..variant import Variant
from . import meta as meta_mod
from . import store
from .aead import parse_peers
from .cases import CaseSpec
from .peers import ia32cap_mask
from .runner import Chunk, Session, Settings, Worker, WorkerDied

Ops = list[tuple[str, str]]  # (op, shape)

PEER_OPS: Ops = [("openssl", "one"), ("openssl_copy", "n+1"), ("openssl4_seal", "one"),
                 ("openssl4_copy", "n+1"), ("cryptography_py", "one")]
# per EVP_AEAD peer (aws-lc, --peer NAME=PATH): seal in place, its own gather of n + 1 bytes
# (seal_scatter with the byte as extra_in), copy + seal in place, open
AEAD_PEER_OPS: Ops = [("aead_seal", "one"), ("aead_scatter", "n+1"), ("aead_copy", "n+1"),
                      ("aead_open", "one")]


@dataclass(frozen=True)
class SweepDef:
    """A named sweep: which (op, shape) pairs at which sizes, one chunk per size."""

    name: str
    doc: str
    sizes: tuple[int, ...]
    quick_sizes: tuple[int, ...]
    ops: Callable[[int, bool], Ops]  # (n, peers) -> the chunk's (op, shape) pairs
    peers: bool = False  # peers by default
    only: Callable[[Backend], bool] | None = None  # default backend filter
    refine: Callable[[pd.DataFrame], dict[str, list[int]]] | None = None  # second pass
    twins: bool = False  # each size s (a multiple of 16) also as s - 1, in the same chunk


def _sizes_ops(n: int, peers: bool) -> Ops:
    ops = [("seal", "one"), ("gather", "n+1"), ("copy_ip", "n+1"), ("open_out", "one")]
    return ops + (PEER_OPS if peers else [])


def _blocks_ops(n: int, peers: bool) -> Ops:
    ops = [("seal", "one"), ("gather", "n+1"), ("copy_ip", "n+1")]
    return ops + ([("openssl", "one"), ("openssl_copy", "n+1")] if peers else [])


def _copy_below_ops(n: int, peers: bool) -> Ops:
    return [("gather", "n+1"), ("copy_ip", "n+1")]


def _two_slice_ops(n: int, peers: bool) -> Ops:
    return [("two_slice", "n+1"), ("gather", "n+1"), ("copy_ip", "n+1")]


def _roofline_ops(n: int, peers: bool) -> Ops:
    return [("ctr32", "one"), ("ghash", "one"), ("encrypt_blocks", "one"), ("seal", "one")]


def _peers_ops(n: int, peers: bool) -> Ops:
    return [("seal", "one"), ("copy_ip", "n+1")] + (PEER_OPS if peers else [])


# copy_below: a coarse grid, each aligned size s with its unaligned twin s - 1 (n + 1 bytes
# from two pieces: the byte completes a block split between the pieces), then a second pass
# dense between the coarse sizes where gather and copy_ip swap places.
_COARSE = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
           6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536)


def _up16(n: int) -> int:
    return -(-n // 16) * 16


def _copy_below_refine(df: pd.DataFrame, points: int = 6) -> dict[str, list[int]]:
    """Per backend, extra aligned sizes between coarse neighbours where the sign of
    min(gather) - min(copy_ip) changes (for either alignment): where `analysis.crossover`'s
    per-size decision (best of every run, no tolerance) flips."""
    # here, not at the top: scipy (through analysis) would cost every worker process a second
    from ..analysis import crossover

    out: dict[str, list[int]] = {}
    sub = df[df["op"].isin(["gather", "copy_ip"])]
    if sub.empty:
        return out
    best = (sub.groupby(["backend", "aligned", "n", "op"], observed=True)["min_ns"].min()
            .reset_index())
    for (be, _aligned), g in best.groupby(["backend", "aligned"], observed=True):
        try:
            res = crossover(g[["op", "n", "min_ns"]], size_col="n", value_col="min_ns",
                            stat="min", rtol=0.0, n_boot=0, by=[])
        except ValueError:  # one op without sizes the other has: nothing to compare
            continue
        ns, win = res.curve["size"].to_numpy(), res.curve["win"].to_numpy()
        for i in range(len(ns) - 1):
            if win[i] != win[i + 1]:
                lo, hi = _up16(int(ns[i])), _up16(int(ns[i + 1]))  # the aligned twins
                step = max(16, (hi - lo) // (points + 1) // 16 * 16)
                out.setdefault(str(be), []).extend(list(range(lo + step, hi, step))[:points])
    return {be: sorted(set(v)) for be, v in out.items()}


SWEEPS: dict[str, SweepDef] = {s.name: s for s in (
    SweepDef("sizes", "seal / gather / copy_ip / open_out and peers at a size list",
             (16, 256, 1024, 16384), (256, 16384), _sizes_ops, peers=True),
    SweepDef("blocks", "every block count 1..72 (16..1152 B; 384, 640, 1024, 1088 among them), "
             "in place and n+1", tuple(16 * b for b in range(1, 73)),
             (16, 128, 384, 640, 1024, 1088), _blocks_ops, peers=True),
    SweepDef("copy_below", "gather vs copy_ip, n+1 pieces, 16 B..64 KiB, aligned (n % 16 == 0) "
             "and unaligned (n - 1), then dense where they cross", _COARSE,
             (16, 256, 1024, 4096, 16384, 65536), _copy_below_ops, refine=_copy_below_refine,
             twins=True),
    SweepDef("two_slice", "seal_two_slice vs gather vs copy_ip at the TLS record shape",
             (256, 511, 512, 767, 768, 1024, 1500, 2000, 2047, 3000), (512, 1024, 2047),
             _two_slice_ops, only=lambda b: b.two_slice),
    SweepDef("roofline", "ctr32 keystream (AES alone), ghash, encrypt_blocks and seal",
             (1024, 4096, 16384, 65536), (16384,), _roofline_ops),
    SweepDef("peers", "vgkernels against OpenSSL (masked per backend) and cryptography",
             (16, 64, 256, 272, 288, 1024, 4096, 16384), (256, 16384), _peers_ops, peers=True),
)}


def plan(sweep: str, backend: str, sizes: Sequence[int], peers: bool, key_len: int = 16,
         aad_len: int = 13, aead_peers: Sequence[str] = (),
         nonce_len: int = 12) -> list[list[CaseSpec]]:
    """The chunks (lists of case specs) of a named sweep for one backend.  With ``peers``,
    every chunk whose sweep times OpenSSL also times each named EVP_AEAD peer (seal,
    scatter, copy + seal, open)."""
    d = SWEEPS[sweep]
    chunks = []
    for n in sizes:
        specs = []
        twins = [n, n - 1] if d.twins and n % 16 == 0 and n > 16 else [n]
        for m in twins:
            ops = d.ops(m, peers)
            for op, shape in ops:
                if op in ("ctr32", "ghash", "encrypt_blocks") and m % 16:
                    continue
                specs.append(CaseSpec(op, m, backend, shape, key_len=key_len, aad_len=aad_len,
                                      nonce_len=nonce_len))
            if peers and any(op == "openssl" for op, _ in ops):
                for name in aead_peers:
                    for op, shape in AEAD_PEER_OPS:
                        if op == "aead_open" and not any(o == "open_out" for o, _ in ops):
                            continue
                        specs.append(CaseSpec(op, m, backend, shape, key_len=key_len,
                                              aad_len=aad_len, peer=name))
        chunks.append(specs)
    return chunks


def default_aead_peers(extra: dict[str, str] | None = None) -> dict[str, str | None]:
    """aws-lc (from the awscrt wheel: the ``peers`` extra) when it is installed, then the
    peers given by path (``--peer NAME=PATH``, or ``$VG_AEAD_PEERS``)."""
    import importlib.util

    from .aead import AWSLC, ENV_PEERS

    out: dict[str, str | None] = {}
    if importlib.util.find_spec("_awscrt") is not None:
        out[AWSLC] = None
    out.update(parse_peers(os.environ.get(ENV_PEERS)))
    out.update(extra or {})
    return out


def _with_variant(spec: CaseSpec, v: Variant) -> CaseSpec:
    if spec.impl != "vgkernels":
        return spec
    return dataclasses.replace(spec, vparams=v.given())


@dataclass
class SweepResult:
    """What a sweep produced (also when interrupted: the rows measured so far)."""

    sweep: str
    run_id: str
    df: pd.DataFrame
    samples: pd.DataFrame
    meta: dict[str, Any]
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def overhead_ns(self) -> float:
        """Median over chunks of the driver's empty-call overhead (ns per call)."""
        return float(self.df["overhead_ns"].median()) if len(self.df) else float("nan")


def run(
    sweep: str = "sizes",
    *,
    backends: Sequence[str] | None = None,
    sizes: Sequence[int] | None = None,
    k: int = 33,
    passes: int = 3,
    runs: int | None = None,
    ab: tuple[Variant | str, Variant | str] | None = None,
    variant: Variant | str | None = None,
    peers: bool | None = None,
    quick: bool = False,
    target_us: float = 20.0,
    cpu: int | None = None,
    pin: bool = True,
    stack_offset: int | None = None,
    key_len: int = 16,
    aad_len: int = 13,
    nonce_len: int = 12,
    aead_peers: dict[str, str] | Sequence[str] | None = None,
    gap_ms: float = 0.0,
    spread: bool = True,
    refine: bool = True,
    progress: bool = True,
    on_chunk: Callable[[int, list[dict[str, Any]]], None] | None = None,
    save: bool = True,
    data: str | Path = "data",
    out: str | Path | None = None,
    samples: bool = True,
    verify: bool = True,
    libcrypto: str | None = None,
    isolate: bool = True,
    fresh: bool = True,
) -> SweepResult:
    """Run a named sweep (see ``SWEEPS``) and return its tidy results.

    Every case gets ``k`` samples, taken in ``passes`` passes over the whole sweep (pass-major
    order), so a state that lasts a while (the host busy, one unlucky build of a case's buffers)
    cannot shift a case's minimum: it would have to last through every pass.
    ``runs``: repetitions (run ids 0..runs-1); with ``ab=(A, B)`` the runs alternate A, B, A, B
    (``runs`` counts the A/B pairs, default 2).  ``peers``: add OpenSSL and cryptography cases
    (default: per sweep).  ``isolate``: measure in one worker process per backend (with
    OPENSSL_ia32cap masked to that backend's features when peers run), so the caller's process
    is neither pinned nor part of the measurement; False measures in this process (OpenSSL
    then runs unmasked).  ``fresh``: with ``isolate``, new worker processes for every pass:
    where code and data land in the address space (ASLR) moved some small cases by up to 16%
    from one process to the next, so each pass is one more draw of it.
    ``pin``: pin the measuring process to one CPU (``cpu``, default the last allowed).
    ``stack_offset``: page offset of the stack pointer at each timed call (default
    driver.STACK_OFFSET; -1 leaves it where the process has it: see cases.py on 4K aliasing).
    ``aead_peers``: EVP_AEAD peers timed beside OpenSSL, ``{name: path}`` or
    ``["name=path", ...]`` (aws-lc from the awscrt wheel is added when installed; see
    vgkernels.bench.aead).  ``spread``: within a pass, visit every chunk once per round
    (round-major) instead of taking a chunk's rounds back to back, so a case's samples lie
    seconds apart (the VM's slow phases last 0.1-20 s); cases are built and calibrated once per
    process.  ``gap_ms``: idle time before each round inside a chunk visit (Driver.measure;
    each gap is followed by an untimed warm-up sample of every case).
    ``on_chunk(done, rows)`` is called after every chunk (raise KeyboardInterrupt in it to stop:
    the rows measured so far are kept and written).  ``quick``: fewer sizes, k = 11, 10 us.
    """
    d = SWEEPS.get(sweep)
    if d is None:
        raise ValueError(f"unknown sweep {sweep!r}; known: {', '.join(SWEEPS)}")
    if quick:
        k, target_us = min(k, 11), min(target_us, 10.0)
    sizes = list(sizes) if sizes else list(d.quick_sizes if quick else d.sizes)
    peers = d.peers if peers is None else peers
    given = (parse_peers(list(aead_peers)) if aead_peers is not None
             and not isinstance(aead_peers, dict) else dict(aead_peers or {}))
    aead = default_aead_peers(given) if peers else {}
    variants = ([Variant.parse(ab[0]), Variant.parse(ab[1])] * (runs or 2) if ab
                else [Variant.parse(variant)] * (runs or 1))
    passes = max(1, min(passes, k))
    settings = Settings(target_us * 1000.0, cpu, pin, verify, libcrypto, stack_offset, peers,
                        {}, aead, gap_ms, warmup=spread)
    params = {"backends": [], "sizes": sizes, "k": k, "passes": passes, "target_us": target_us,
              "variants": [dict(v.given()) for v in variants], "peers": peers,
              "key_len": key_len, "aad_len": aad_len, "nonce_len": nonce_len,
              "isolate": isolate, "fresh": fresh, "aead_peers": aead, "gap_ms": gap_ms,
              "spread": spread, "stack_offset": stack_offset}
    sw = _Sweep(d, variants, settings, params, spread=spread, isolate=isolate, fresh=fresh,
                on_chunk=on_chunk, bar=_Bar(progress, sweep), keep_samples=samples)
    sw.choose(backends)
    sw.measure(sizes, refine)
    res = sw.result()
    if save:
        directory = Path(out) if out else Path(data) / sw.host["host"]
        res.paths = store.save(res.df, res.samples if samples else None, res.meta, directory,
                               f"{sweep}-{res.run_id}")
    return res


class _Sweep:
    """One run of a sweep: its backends, sessions (worker processes or this one), the rows
    collected so far and the notes (skips, errors) to report."""

    def __init__(self, d: SweepDef, variants: list[Variant], settings: Settings,
                 params: dict[str, Any], *, spread: bool, isolate: bool, fresh: bool,
                 on_chunk: Callable[[int, list[dict[str, Any]]], None] | None, bar: _Bar,
                 keep_samples: bool):
        self.d, self.variants, self.settings, self.params = d, variants, settings, params
        self.spread, self.isolate, self.fresh, self.on_chunk, self.bar = (
            spread, isolate, fresh, on_chunk, bar)
        self.peers = settings.openssl  # peers are timed (their OpenSSL is loaded up front)
        k, passes = params["k"], params["passes"]
        # k samples over the passes: the first k % passes passes take one more
        self.k_per = [k // passes + (1 if i < k % passes else 0) for i in range(passes)]
        self.run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"
        self.host = meta_mod.host_meta(settings.libcrypto)
        common = {"run_id": self.run_id, "sweep": d.name, **self.host}
        self.meta: dict[str, Any] = {
            **common, "cpu_flags_full": meta_mod.cpu_flags_full(), "params": params,
            "processes": {}}
        self.acc = store.Accumulator(common, keep_samples)
        self.chosen: list[Backend] = []
        self.skipped: list[str] = []
        self.errors: list[str] = []
        self.sessions: dict[str, Session | Worker] = {}
        self.procs: dict[str, dict[str, Any]] = {}
        self.dead: set[str] = set()
        self.interrupted = False
        self.done = 0

    def note(self, msg: str, bucket: list[str]) -> None:
        if msg not in bucket:
            bucket.append(msg)
            self.bar.write(f"vgkernels bench: {msg}")

    def choose(self, backends: Sequence[str] | None) -> None:
        """The named backends (default: every usable one the sweep takes); unusable ones are
        noted as skipped."""
        avail = availability()
        names = list(backends) if backends else [b.name for b in usable()
                                                 if self.d.only is None or self.d.only(b)]
        for name in names:
            if name not in BY_NAME:
                raise ValueError(f"unknown backend {name!r}; known: {', '.join(BY_NAME)}")
            if avail[name] is not None:
                self.note(f"backend {name} skipped: {avail[name]}", self.skipped)
            else:
                self.chosen.append(get(name))
        self.meta["params"]["backends"] = [b.name for b in self.chosen]

    # -- events from a session, by type ------------------------------------------------------
    def _on_meta(self, be: Backend, ev: dict[str, Any]) -> None:
        self.procs[be.name] = ev["process"]
        self.meta["processes"].setdefault(be.name, ev["process"])
        self.meta.setdefault("worker_pids", {}).setdefault(be.name, []).append(
            ev["process"].get("pid"))

    def _on_skip(self, be: Backend, ev: dict[str, Any]) -> None:
        self.note(ev["message"], self.skipped)

    def _on_error(self, be: Backend, ev: dict[str, Any]) -> None:
        self.note(ev["message"], self.errors)

    def _on_chunk(self, be: Backend, ev: dict[str, Any]) -> None:
        rows = self.acc.add(ev, self.procs[be.name])
        self.done += 1
        self.bar.step()
        if self.on_chunk is not None:
            self.on_chunk(self.done, rows)

    _EVENTS: dict[str, Callable[[_Sweep, Backend, dict[str, Any]], None]] = {
        "meta": _on_meta, "skip": _on_skip, "error": _on_error, "chunk": _on_chunk}

    def handle(self, be: Backend, events: list[dict[str, Any]]) -> None:
        for ev in events:
            self._EVENTS[ev["type"]](self, be, ev)

    # -- sessions ----------------------------------------------------------------------------
    def session(self, be: Backend) -> Session | Worker:
        """The backend's worker (masked OpenSSL) or the shared in-process session."""
        s = self.sessions.get(be.name)
        if s is None:
            env = {"OPENSSL_ia32cap": ia32cap_mask(be)} if self.isolate and self.peers \
                else {}
            settings = dataclasses.replace(self.settings, env=env)
            shared = None if self.isolate else next(iter(self.sessions.values()), None)
            s = shared or (Worker(settings) if self.isolate else Session(settings))
            self.handle(be, s.start())
            self.sessions[be.name] = s
        return s

    def close_sessions(self, kill: bool = False) -> None:
        for s in {id(s): s for s in self.sessions.values()}.values():
            s.close(kill=kill)
        self.sessions.clear()

    # -- measuring ---------------------------------------------------------------------------
    def measure(self, sizes: list[int], refine: bool) -> None:
        """Every chunk at ``sizes``, then (``refine``) the sweep's second pass; an interrupt
        keeps what was measured."""
        try:
            self.execute({be.name: sizes for be in self.chosen}, 0)
            if refine and self.d.refine is not None and not self.dead:
                extra = self.d.refine(store.frame(self.acc.summary(), store.SUMMARY_COLS))
                if extra:
                    self.meta["params"]["refined_sizes"] = extra
                    self.execute(extra, 1)
        except KeyboardInterrupt:
            self.interrupted = True
            self.note(f"interrupted: keeping the {self.done} chunks measured so far",
                      self.skipped)
        finally:
            self.bar.close()
            self.close_sessions(kill=self.interrupted)

    def visits(self, plans: dict[str, list[list[CaseSpec]]]) -> list[tuple[int, int, int,
                                                                           Backend, int]]:
        """(pass, rounds, run, backend, chunk) in the order they are measured: pass-major, so
        every case's samples are spread over the whole sweep; with ``spread``, one round per
        visit and every chunk visited once per round (round-major)."""
        passes = range(len(self.k_per))
        rounds = [(p, j, 1) for p in passes for j in range(self.k_per[p])] if self.spread \
            else [(p, 0, self.k_per[p]) for p in passes]
        return [(p, kk, r, be, i) for p, _j, kk in rounds for r in range(len(self.variants))
                for be in self.chosen if be.name in plans for i in range(len(plans[be.name]))]

    def execute(self, size_plan: dict[str, list[int]], phase: int) -> None:
        p = self.params
        plans = {be.name: plan(self.d.name, be.name, size_plan[be.name], self.peers,
                               p["key_len"], p["aad_len"], list(self.settings.aead),
                               p["nonce_len"])
                 for be in self.chosen if size_plan.get(be.name)}
        order = self.visits(plans)
        self.bar.add(len(order))
        last_pass = 0
        for p, kk, r, be, i in order:
            if p != last_pass and self.isolate and self.fresh:
                self.close_sessions()  # a new process per pass: its layout is one more draw
            last_pass = p
            if be.name in self.dead:
                self.bar.step()
                continue
            specs = [_with_variant(x, self.variants[r]) for x in plans[be.name][i]]
            try:
                s = self.session(be)
                self.handle(be, s.chunk(Chunk(r, specs, phase * 100_000 + i, kk, p)))
            except WorkerDied as e:
                self.dead.add(be.name)
                self.note(f"backend {be.name}: {e} while measuring {specs[0].n}-byte cases; "
                          "its later chunks are missing", self.errors)

    def result(self) -> SweepResult:
        """The rows so far as frames, with the notes in the metadata."""
        df = store.frame(self.acc.summary(), store.SUMMARY_COLS)
        sp = store.frame(self.acc.samples, store.SAMPLE_COLS)
        self.meta.update(skipped=self.skipped, errors=self.errors,
                         interrupted=self.interrupted)
        if self.isolate and self.peers:
            self.meta["masks"] = {be.name: ia32cap_mask(be) for be in self.chosen}
        return SweepResult(self.d.name, self.run_id, df, sp, self.meta, self.skipped,
                           self.errors, self.interrupted)


class _Bar:
    """A tqdm progress bar over chunks (its total grows when a refinement pass is planned)."""

    def __init__(self, enabled: bool, name: str):
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=0, desc=f"bench {name}", unit="chunk", file=sys.stderr)

    def add(self, n: int) -> None:
        if self._bar is not None:
            self._bar.total += n
            self._bar.refresh()

    def step(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def write(self, msg: str) -> None:
        if self._bar is not None:
            self._bar.write(msg, file=sys.stderr)
        else:
            print(msg, file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
