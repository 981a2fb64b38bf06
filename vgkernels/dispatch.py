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
from dataclasses import dataclass
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

def document(backends: Mapping[str, Mapping[str, Any]], cpu: Mapping[str, Any],
             host: str, date: str, run_id: str | None = None) -> dict[str, Any]:
    """A table: ``backends`` maps a backend to {"aligned": int|null, "unaligned": int|null,
    "ci": {...}, "measured": {"sizes": [lo, hi], ...}}; null means the gather never caught up
    in the measured range (copy below the largest size measured)."""
    doc = {"schema": SCHEMA, "kind": KIND, "package_version": __version__,
           "cpu": {k: cpu.get(k) for k in machine.CPU_KEY_FIELDS + ("model_name",)},
           "host": host, "date": date, "run_id": run_id, "backends": dict(backends)}
    validate(doc, "<new table>")
    return doc


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


def _resolve(entry: Mapping[str, Any]) -> tuple[int, int]:
    top = max((entry.get("measured") or {}).get("sizes") or [65536])
    return tuple(top + 1 if entry.get(k) is None else int(entry[k])  # type: ignore[return-value]
                 for k in ("aligned", "unaligned"))


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


def _parse(name: str, text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
        validate(doc, name)
        return doc
    except (TableError, ValueError) as exc:
        msg = str(exc) if isinstance(exc, TableError) else f"{name}: not valid JSON ({exc})"
        _warn_once(f"copy_below table skipped: {msg}; the next table in the lookup order "
                   "applies (copying or gathering changes only the speed, never the output)")
        return None


def load_tables(user: bool = True) -> list[tuple[str, str, dict[str, Any]]]:
    """(origin "user"/"shipped", file, table) of every readable table, user tables first."""
    found: list[tuple[str, str, dict[str, Any]]] = []
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


def _describe(origin: str, name: str, doc: Mapping[str, Any]) -> str:
    cpu = doc["cpu"]
    return (f"{origin} table {name} ({machine.cpu_key_text(cpu)}, host {doc.get('host')}, "
            f"{str(doc.get('date'))[:10]})")


def lookup(backend: Backend, cpu: Mapping[str, Any] | None = None,
           tables: Iterable[tuple[str, str, dict[str, Any]]] | None = None) -> Thresholds:
    """The thresholds ``backend`` uses on ``cpu`` (default: this machine's), and their source."""
    here = dict(cpu) if cpu is not None else machine.cpu_key()
    tables = list(load_tables() if tables is None else tables)
    for origin in ("user", "shipped"):
        for o, name, doc in tables:
            if o == origin and backend.name in doc["backends"] and distance(
                    here, doc["cpu"]) == (0, 0, 0, 0):
                a, u = _resolve(doc["backends"][backend.name])
                return Thresholds(a, u, origin, _describe(origin, name, doc) + ", this CPU")
    near = [(d, name, doc) for o, name, doc in tables if o == "shipped"
            and backend.name in doc["backends"]
            and (d := distance(here, doc["cpu"])) is not None]
    if near:
        d, name, doc = min(near, key=lambda t: t[0])
        a, u = _resolve(doc["backends"][backend.name])
        return Thresholds(a, u, "nearest", _describe("shipped", name, doc)
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


def install(doc: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Write a table into the user's data directory (atomically); returns its path."""
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
