"""copy_below thresholds per CPU: the one owner of their file format, where the files live and
which one applies.

A table holds the thresholds measured on one CPU (keyed by vendor, family, model and LLVM CPU
name, with the host and date they came from), for the backends measured there.  Tables ship
inside the package (`vgkernels/data/copy_below/`) and users derive their own
(`vgkernels tune`, or `vgkernels report --profile full --only 04 -p install=true`), written to
the user's data directory, never into the installed package (which may be read-only).

Which applies, per backend: the user's table for this CPU, the shipped table for this CPU,
the shipped table of the nearest CPU that measured the backend (named in `source`), the
backend row's default.  A file that cannot be read, has another schema or comes from another
package version is skipped with a warning naming it: copying or gathering never changes the
ciphertext, only the speed, so the fallback is always safe.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from . import __version__, machine
from .backends import BACKENDS, Backend

SCHEMA = 1
KIND = "vgkernels.copy_below"
ENV_DIR = "VG_DATA_DIR"  # overrides the user data directory (tests, shared machines)


class TableError(ValueError):
    """A thresholds file that cannot be used (the message names the file)."""


@dataclass(frozen=True)
class Thresholds:
    """The thresholds one backend uses, and where they came from."""

    aligned: int
    unaligned: int
    source: str  # "user", "shipped", "nearest", "default"
    detail: str  # which file and CPU, in words

    def __iter__(self):  # (aligned, unaligned), as the API's copy_below argument
        return iter((self.aligned, self.unaligned))

    def __str__(self) -> str:
        return f"({self.aligned}, {self.unaligned}) from {self.detail}"


# -- the file format ------------------------------------------------------------------------------

def _size(x: Any) -> int | None:
    """A threshold as JSON: an int, or None for "no crossover" (None, NaN or pandas' NA)."""
    if x is None:
        return None
    try:
        if x != x:  # NaN  # noqa: PLR0124
            return None
    except TypeError:  # pandas.NA refuses to be compared
        return None
    return int(x)


@dataclass(frozen=True)
class Entry:
    """One backend's row of a table.  ``aligned`` / ``unaligned``: copy below this many bytes;
    None: the gather never caught up in the measured range (copy below the largest size
    measured).  ``ci``: per alignment, the bootstrap interval {"low", "high", "level",
    "n_boot"}; ``measured``: {"sizes": [lo, hi], "rule", "stat", "rtol"}."""

    aligned: int | None
    unaligned: int | None
    ci: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    measured: Mapping[str, Any] | None = None

    @classmethod
    def from_crossover(cls, aligned: Any, unaligned: Any,
                       measured: Mapping[str, Any] | None = None) -> Entry:
        """From the two crossovers (`vgkernels.analysis.copy_below` results, or rows of
        `copy_below_table`: anything with threshold, ci_low, ci_high, ci_level, n_boot)."""
        def ci(r: Any) -> dict[str, Any]:
            return {"low": _size(r.ci_low), "high": _size(r.ci_high),
                    "level": float(r.ci_level), "n_boot": int(r.n_boot)}
        return cls(_size(aligned.threshold), _size(unaligned.threshold),
                   {"aligned": ci(aligned), "unaligned": ci(unaligned)}, measured)

    def resolve(self) -> tuple[int, int]:
        """(aligned, unaligned) as the API uses them: "no crossover" is one byte past the
        largest size measured."""
        top = max((self.measured or {}).get("sizes") or [65536])
        return tuple(top + 1 if v is None else v  # type: ignore[return-value]
                     for v in (self.aligned, self.unaligned))

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"aligned": self.aligned, "unaligned": self.unaligned}
        if self.ci:
            out["ci"] = {k: dict(v) for k, v in self.ci.items()}
        if self.measured is not None:
            out["measured"] = dict(self.measured)
        return out

    @classmethod
    def load(cls, e: Mapping[str, Any]) -> Entry:
        return cls(e["aligned"], e["unaligned"], e.get("ci") or {}, e.get("measured"))


@dataclass(frozen=True)
class Table:
    """The thresholds measured on one CPU (`cpu`: its key, `machine.CPU_KEY_FIELDS`, plus
    the model name), per backend.  `dump` gives the file's JSON object, `load` reads it."""

    cpu: Mapping[str, Any]
    host: str
    date: str
    backends: Mapping[str, Entry]
    run_id: str | None = None
    package_version: str = __version__

    def dump(self) -> dict[str, Any]:
        doc = {"schema": SCHEMA, "kind": KIND, "package_version": self.package_version,
               "cpu": {k: self.cpu.get(k) for k in machine.CPU_KEY_FIELDS + ("model_name",)},
               "host": self.host, "date": self.date, "run_id": self.run_id,
               "backends": {be: e.dump() for be, e in self.backends.items()}}
        validate(doc, "<new table>")
        return doc

    @classmethod
    def load(cls, doc: Any, where: str) -> Table:
        """The table in ``doc`` (a file's JSON object); TableError naming ``where`` if it is
        not one this version reads."""
        validate(doc, where)
        return cls(dict(doc["cpu"]), doc.get("host"), doc.get("date"),
                   {be: Entry.load(e) for be, e in doc["backends"].items()}, doc.get("run_id"),
                   doc["package_version"])


def document(backends: Mapping[str, Entry | Mapping[str, Any]], cpu: Mapping[str, Any],
             host: str, date: str, run_id: str | None = None) -> dict[str, Any]:
    """A table's JSON object; ``backends`` maps a backend to its Entry (or the Entry's JSON)."""
    return Table(cpu, host, date, {be: e if isinstance(e, Entry) else Entry.load(e)
                                   for be, e in backends.items()}, run_id).dump()


def validate(doc: Any, where: str) -> None:
    """Raise TableError (naming ``where``) unless ``doc`` is a table this version reads."""
    if not isinstance(doc, Mapping):
        raise TableError(f"{where}: not a JSON object")
    if doc.get("kind") != KIND or doc.get("schema") != SCHEMA:
        raise TableError(f"{where}: kind {doc.get('kind')!r} schema {doc.get('schema')!r}; this "
                         f"version reads kind {KIND!r} schema {SCHEMA}")
    if doc.get("package_version") != __version__:
        raise TableError(f"{where}: measured with vgkernels {doc.get('package_version')}, this "
                         f"is {__version__} (kernels differ between versions; re-derive it "
                         "with `vgkernels tune`)")
    cpu = doc.get("cpu")
    if not isinstance(cpu, Mapping) or not isinstance(cpu.get("llvm_cpu"), str):
        raise TableError(f"{where}: no cpu.llvm_cpu")
    bes = doc.get("backends")
    if not isinstance(bes, Mapping):
        raise TableError(f"{where}: no backends object")
    for be, e in bes.items():
        if not isinstance(e, Mapping):
            raise TableError(f"{where}: backends.{be} is not an object")
        for k in ("aligned", "unaligned"):
            v = e.get(k, "missing")
            if not (v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)):
                raise TableError(f"{where}: backends.{be}.{k} must be a non-negative int or "
                                 f"null, not {v!r}")


def file_name(cpu: Mapping[str, Any]) -> str:
    """<vendor>-<family>-<model>-<llvm cpu>.json, the CPU key as a file name."""
    parts = ["x" if cpu.get(k) is None else str(cpu.get(k)) for k in machine.CPU_KEY_FIELDS]
    return "-".join(p.replace("/", "_").replace(" ", "_") for p in parts) + ".json"


# -- where tables live ----------------------------------------------------------------------------

def user_dir() -> Path:
    """Where `vgkernels tune` writes tables: $VG_DATA_DIR, else the platform's user data
    directory (platformdirs), in a copy_below/ folder."""
    d = os.environ.get(ENV_DIR)
    if d:
        return Path(d) / "copy_below"
    import platformdirs

    return Path(platformdirs.user_data_dir("vgkernels", appauthor=False)) / "copy_below"


def shipped_files() -> list[tuple[str, str]]:
    """(name, text) of every table shipped in the package."""
    root = resources.files("vgkernels").joinpath("data/copy_below")
    out = []
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for p in entries:
        if p.name.endswith(".json"):
            out.append((f"vgkernels/data/copy_below/{p.name}", p.read_text()))
    return out


_warned: set[str] = set()
_lock = threading.Lock()


def _warn_once(msg: str) -> None:
    with _lock:
        if msg in _warned:
            return
        _warned.add(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)


def _parse(name: str, text: str) -> Table | None:
    try:
        return Table.load(json.loads(text), name)
    except (TableError, ValueError) as exc:
        msg = str(exc) if isinstance(exc, TableError) else f"{name}: not valid JSON ({exc})"
        _warn_once(f"copy_below table skipped: {msg}; the next table in the lookup order "
                   "applies (copying or gathering changes only the speed, never the output)")
        return None


def load_tables(user: bool = True) -> list[tuple[str, str, Table]]:
    """(origin "user"/"shipped", file, table) of every readable table, user tables first."""
    found: list[tuple[str, str, Table]] = []
    if user:
        d = user_dir()
        if d.is_dir():
            for p in sorted(d.glob("*.json")):
                try:
                    text = p.read_text()
                except OSError as exc:
                    _warn_once(f"copy_below table skipped: {p}: {exc}")
                    continue
                doc = _parse(str(p), text)
                if doc is not None:
                    found.append(("user", str(p), doc))
    for name, text in shipped_files():
        doc = _parse(name, text)
        if doc is not None:
            found.append(("shipped", name, doc))
    return found


# -- which table applies --------------------------------------------------------------------------

def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[int, ...] | None:
    """How far CPU ``b`` is from ``a`` (smaller is nearer; (0,0,0,0) is the same CPU), None for
    another vendor: a table measured on another vendor's core says little."""
    if a.get("vendor") != b.get("vendor"):
        return None
    same_llvm = a.get("llvm_cpu") == b.get("llvm_cpu")
    fa, fb = a.get("family"), b.get("family")
    same_family = fa is not None and fa == fb
    ma, mb = a.get("model"), b.get("model")
    dmodel = abs(ma - mb) if same_family and ma is not None and mb is not None else 1 << 16
    return (0 if same_family else 1, 0 if same_llvm else 1, dmodel, 0 if fb is not None else 1)


def _describe(origin: str, name: str, t: Table) -> str:
    return (f"{origin} table {name} ({machine.cpu_key_text(t.cpu)}, host {t.host}, "
            f"{str(t.date)[:10]})")


def lookup(backend: Backend, cpu: Mapping[str, Any] | None = None,
           tables: Iterable[tuple[str, str, Table | Mapping[str, Any]]] | None = None
           ) -> Thresholds:
    """The thresholds ``backend`` uses on ``cpu`` (default: this machine's), and their source.
    ``tables``: (origin, name, table) as `load_tables` gives them (a table's JSON object is
    read with `Table.load`)."""
    here = dict(cpu) if cpu is not None else machine.cpu_key()
    found = [(o, name, t if isinstance(t, Table) else Table.load(t, name))
             for o, name, t in (load_tables() if tables is None else tables)]
    for origin in ("user", "shipped"):
        for o, name, t in found:
            if o == origin and backend.name in t.backends and distance(
                    here, t.cpu) == (0, 0, 0, 0):
                a, u = t.backends[backend.name].resolve()
                return Thresholds(a, u, origin, _describe(origin, name, t) + ", this CPU")
    near = [(d, name, t) for o, name, t in found if o == "shipped"
            and backend.name in t.backends and (d := distance(here, t.cpu)) is not None]
    if near:
        d, name, t = min(near, key=lambda x: x[0])
        a, u = t.backends[backend.name].resolve()
        return Thresholds(a, u, "nearest", _describe("shipped", name, t)
                          + f", the nearest CPU that measured {backend.name}")
    a, u = backend.copy_below
    return Thresholds(a, u, "default", f"the backend table's default for {backend.name} (no "
                      f"table measured it on a {here.get('vendor')} CPU)")


@functools.cache
def _cached(name: str, user_dir_text: str) -> Thresholds:
    return lookup(next(b for b in BACKENDS if b.name == name))


def copy_below(backend: Backend) -> Thresholds:
    """`lookup` for this machine, read once per process (and per user data directory)."""
    return _cached(backend.name, str(user_dir()))


def reload() -> None:
    """Forget what was read (after `install`)."""
    _cached.cache_clear()


def install(table: Table | Mapping[str, Any], directory: Path | None = None) -> Path:
    """Write a table (or its JSON object) into the user's data directory (atomically);
    returns its path."""
    doc = table.dump() if isinstance(table, Table) else table
    validate(doc, "<table to install>")
    d = Path(directory) if directory is not None else user_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / file_name(doc["cpu"])
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc, indent=2) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    reload()
    return path


def table_rows(cpu: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per backend: the thresholds this machine uses and their source (for `info`)."""
    tables = load_tables()
    rows = []
    for b in BACKENDS:
        t = lookup(b, cpu, tables)
        rows.append({"backend": b.name, "aligned": t.aligned, "unaligned": t.unaligned,
                     "source": t.source, "from": t.detail})
    return rows
