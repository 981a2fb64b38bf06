"""What every report notebook shares: profiles, backend choice, output paths, sweeps with
progress, and saving figures, tables, conclusions and headline numbers.

A notebook is thin::

    nb = report.start("02_block_counts", profile, out_dir, data_dir, backends)
    res = nb.sweep("blocks", sizes=[...], ab=("tail=split", "tail=full"))
    nb.table(df, "thread_table")          # CSV under <out>/tables/, returns df for display
    nb.figure(fig, "steps")               # PNG under <out>/figures/
    nb.conclude([...])                     # Markdown computed from the data, also saved
    nb.headline({...})                     # numbers for index.html

Layout of a report directory (``out``)::

    <out>/data/        sweep results (Parquet, CSV, meta JSON) written by vgkernels.bench
    <out>/figures/     <notebook>-<name>.png
    <out>/tables/      <notebook>-<name>.csv
    <out>/notes/       <notebook>.json: conclusions, headline numbers, sweep notes, figures
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from .. import bench, machine
from ..backends import choose, get, usable
from .display import install, sig
from .peerset import SMOKE_TEST, noise_summary

PROFILES = ("tiny", "quick", "full")
PROGRESS_ENV = "VG_REPORT_PROGRESS"  # a file the batch polls for "which sweep, how far"


@dataclass(frozen=True)
class Profile:
    """How hard a profile measures.  ``tiny``: seconds per notebook (the tests); ``quick``:
    the whole batch in about 35 minutes on two cores with a cold kernel cache (measured on a
    2-vCPU Zen 3; notebooks 07 and 08 compile and check every backend); ``full``: the real
    analysis."""

    name: str
    k: int  # samples per case
    passes: int  # passes over the sweep the k samples are spread over
    target_us: float  # length of one sample
    runs: int  # A/B pairs (alternating runs) where a notebook compares two variants
    n_boot: int  # bootstrap replicates of the crossover thresholds
    selfcheck_cases: int  # random cases per backend in the inventory's self-check

    @property
    def tiny(self) -> bool:
        """The smoke-test profile (seconds per notebook, not for conclusions)."""
        return self.name == "tiny"

    @property
    def full(self) -> bool:
        """The profile of the real analysis."""
        return self.name == "full"

    def pick(self, tiny: Any, quick: Any, full: Any) -> Any:
        """The value for this profile."""
        return {"tiny": tiny, "quick": quick, "full": full}[self.name]


_PROFILES = {
    "tiny": Profile("tiny", k=3, passes=1, target_us=5.0, runs=2, n_boot=100,
                    selfcheck_cases=3),
    "quick": Profile("quick", k=11, passes=3, target_us=10.0, runs=2, n_boot=400,
                     selfcheck_cases=20),
    "full": Profile("full", k=33, passes=3, target_us=20.0, runs=2, n_boot=2000,
                    selfcheck_cases=60),
}


def get_profile(name: str | Profile) -> Profile:
    """A Profile by name (ValueError listing the known ones)."""
    if isinstance(name, Profile):
        return name
    try:
        return _PROFILES[str(name)]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None


def parse_backends(backends: str | Iterable[str] | None) -> list[str] | None:
    """None, a comma/space separated string or a list of names -> a list (None = default)."""
    if backends is None:
        return None
    if isinstance(backends, str):
        names = [b for b in re.split(r"[,\s]+", backends) if b]
    else:
        names = [str(b) for b in backends]
    return names or None


def choose_backends(backends: str | Iterable[str] | None, profile: str | Profile,
                    only: Callable[[Any], bool] | None = None) -> list[str]:
    """The backends a notebook measures.

    Named ones are kept as given (unknown names raise; unusable ones are reported by the
    sweeps).  None: every usable backend, or for ``tiny`` only the best one.  ``only``
    filters by backend row (e.g. ``lambda b: b.two_slice``).
    """
    prof = get_profile(profile)
    names = parse_backends(backends)
    if names is not None:
        rows = [get(n) for n in names]
    elif prof.tiny:
        rows = [choose()]
    else:
        rows = list(usable())
    if only is not None:
        rows = [b for b in rows if only(b)]
    return [b.name for b in rows]


def host() -> str:
    """This machine's host name, safe as part of a file name."""
    return machine.host_name()


def project_root(start: Path | None = None) -> Path | None:
    """The source checkout (a directory with notebooks/ and vgkernels/) at or above ``start``
    (default: the current directory), else None."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "notebooks").is_dir() and (d / "vgkernels").is_dir():
            return d
    return None


def default_out_dir(start: Path | None = None) -> Path:
    """reports/<date>-<host>-<llvm cpu>/ in the checkout (or the current directory); a second
    run gets -2, -3, ... rather than writing over the first."""
    base = project_root(start) or Path.cwd()
    stem = base / "reports" / f"{date.today().isoformat()}-{machine.slug()}"
    path, n = stem, 1
    while path.exists():
        n += 1
        path = stem.with_name(f"{stem.name}-{n}")
    return path


@dataclass(frozen=True)
class Paths:
    """The directories of one report: out, data, figures, tables, notes."""
    out: Path
    data: Path
    figures: Path
    tables: Path
    notes: Path

    @classmethod
    def make(cls, out_dir: str | Path | None, data_dir: str | Path | None = None) -> Paths:
        """The paths under ``out_dir`` (default reports/<date>-<host>/), created."""
        out = Path(out_dir) if out_dir else default_out_dir()
        p = cls(out.resolve(), Path(data_dir).resolve() if data_dir else (out / "data").resolve(),
                (out / "figures").resolve(), (out / "tables").resolve(), (out / "notes").resolve())
        for d in (p.out, p.data, p.figures, p.tables, p.notes):
            d.mkdir(parents=True, exist_ok=True)
        return p


def note_path(out: Path, notebook: str) -> Path:
    """Where a notebook's notes (conclusions, headline numbers, files) are kept."""
    return out / "notes" / f"{notebook}.json"


def read_notes(out: Path) -> dict[str, dict[str, Any]]:
    """Every notebook's notes in a report directory, by notebook name."""
    out_notes: dict[str, dict[str, Any]] = {}
    d = Path(out) / "notes"
    if d.is_dir():
        for p in sorted(d.glob("*.json")):
            try:
                out_notes[p.stem] = json.loads(p.read_text())
            except ValueError:
                continue
    return out_notes


def jsonable(x: Any) -> Any:
    """Plain JSON values (numpy / pandas scalars, NaN/NA -> None, tuples -> lists)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple | set):
        return [jsonable(v) for v in x]
    if x is None or isinstance(x, bool | str):
        return x
    if hasattr(x, "item") and not isinstance(x, int | float):
        try:
            x = x.item()
        except (ValueError, AttributeError):
            pass
    try:
        if pd.isna(x):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(x, float):
        return None if not math.isfinite(x) else x
    if isinstance(x, int | bool | str):
        return x
    return str(x)


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(jsonable(obj), indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


def report_progress(notebook: str, sweep: str, done: int, total: int) -> None:
    """Tell the batch (if one is watching) which sweep runs and how far it is."""
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    try:
        _write_json(Path(path), {"notebook": notebook, "sweep": sweep, "done": done,
                                 "total": total, "time": time.time()})
    except OSError:
        pass


@dataclass
class Notebook:
    """One notebook's run: its profile, backends and output paths, and what it wrote."""

    name: str
    profile: Profile
    backends: list[str]
    paths: Paths
    started: float = field(default_factory=time.time)
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    # -- measuring ---------------------------------------------------------------------------
    def sweep(self, name: str, *, backends: Sequence[str] | None = None,
              sizes: Sequence[int] | None = None, label: str | None = None, **kw: Any):
        """``vgkernels.bench.run`` with this profile's k / passes / sample length, results
        written into the report's data directory, progress reported to the batch, and the
        sweep's skips and errors kept for the notes (and shown)."""
        bes = list(backends) if backends is not None else list(self.backends)
        label = label or name
        if not bes:
            raise ValueError(f"sweep {label}: no backends to measure")
        kw.setdefault("k", self.profile.k)
        kw.setdefault("passes", self.profile.passes)
        kw.setdefault("target_us", self.profile.target_us)
        ab = kw.get("ab")
        runs = kw.get("runs")
        n_runs = 2 * (runs or 2) if ab else (runs or 1)
        n_sizes = len(sizes) if sizes else len(bench.SWEEPS[name].sizes)
        # a visit per round when the rounds are spread (the default), else one per pass
        visits = kw["k"] if kw.get("spread", True) else max(1, min(kw["passes"], kw["k"]))
        total = visits * n_runs * n_sizes * len(bes)

        def on_chunk(done: int, rows: list[dict[str, Any]]) -> None:
            report_progress(self.name, label, done, max(total, done))

        report_progress(self.name, label, 0, total)
        t0 = time.perf_counter()
        res = bench.run(name, backends=bes, sizes=list(sizes) if sizes else None,
                        progress=False, on_chunk=on_chunk, save=True, out=self.paths.data,
                        **kw)
        seconds = time.perf_counter() - t0
        self.sweeps.append({
            "sweep": name, "label": label, "backends": bes, "sizes": len(sizes or []) or None,
            "rows": len(res.df), "seconds": round(seconds, 2), "skipped": list(res.skipped),
            "errors": list(res.errors), "interrupted": res.interrupted,
            "noise": noise_summary(res.df),
            "files": [_rel(p, self.paths.out) for p in res.paths.values()]})
        self._save()
        if res.skipped or res.errors:
            lines = [f"- skipped: {m}" for m in res.skipped] + \
                    [f"- **error**: {m}" for m in res.errors]
            from IPython.display import Markdown, display  # lazy: see display.install

            display(Markdown(f"Sweep `{label}` notes:\n\n" + "\n".join(lines)))
        return res

    # -- outputs -----------------------------------------------------------------------------
    def figure(self, fig: Any, name: str, *, headline: bool = False, title: str | None = None,
               dpi: int = 110) -> Path:
        """Save a matplotlib figure (or seaborn grid) as <out>/figures/<notebook>-<name>.png."""
        path = self.paths.figures / f"{self.name}-{name}.png"
        fig = getattr(fig, "figure", fig)  # FacetGrid / Axes -> Figure
        # the machine in the picture itself: a figure travels without its report
        where = machine.caption()
        mark = fig.text(0.0, -0.01, where, fontsize=7, color="0.35", ha="left", va="top",
                        transform=fig.transFigure)
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        mark.remove()
        entry = {"name": name, "path": _rel(path, self.paths.out), "headline": headline,
                 "title": title or name.replace("_", " "), "machine": where}
        self.figures = [f for f in self.figures if f["name"] != name] + [entry]
        self._save()
        return path

    def table(self, df: pd.DataFrame, name: str, index: bool = False) -> pd.DataFrame:
        """Save a table as <out>/tables/<notebook>-<name>.csv; returns it for display."""
        path = self.paths.tables / f"{self.name}-{name}.csv"
        df.to_csv(path, index=index)
        rel = _rel(path, self.paths.out)
        if rel not in self.tables:
            self.tables.append(rel)
        self._save()
        return df

    def file(self, path: Path) -> Path:
        """Record another file this notebook wrote (linked from the index)."""
        rel = _rel(Path(path), self.paths.out)
        if rel not in self.files:
            self.files.append(rel)
        self._save()
        return Path(path)

    def conclude(self, lines: Iterable[str], title: str = "Conclusions",
                 recommendation: str | None = None):
        """Show conclusions (Markdown computed from the data) and keep them for the index;
        ``recommendation`` (what to do, computed too) opens them."""
        lines = [str(x) for x in lines if x]
        if recommendation:
            lines.insert(0, f"**Recommendation:** {recommendation}")
        self.conclusions.extend(lines)
        self._save()
        from IPython.display import Markdown  # lazy: see display.install

        return Markdown(f"### {title}\n\n" + "\n".join(f"- {x}" for x in lines))

    def headline(self, numbers: dict[str, Any]) -> dict[str, Any]:
        """Numbers for the index's headline table (merged per key)."""
        for k, v in numbers.items():
            if isinstance(v, dict) and isinstance(self.numbers.get(k), dict):
                self.numbers[k].update(v)
            else:
                self.numbers[k] = v
        self._save()
        return numbers

    def _save(self) -> None:
        _write_json(note_path(self.paths.out, self.name), {
            "notebook": self.name, "profile": self.profile.name, "backends": self.backends,
            "smoke_test": self.profile.tiny,
            "started": self.started, "sweeps": self.sweeps, "figures": self.figures,
            "tables": self.tables, "files": self.files, "conclusions": self.conclusions,
            "headline": self.numbers})


def _rel(path: Path, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base))
    except ValueError:
        return str(path)


def start(name: str, profile: str = "quick", out_dir: str | Path | None = None,
          data_dir: str | Path | None = None, backends: str | Iterable[str] | None = None,
          only: Callable[[Any], bool] | None = None) -> Notebook:
    """Set up a notebook run: plotting theme, profile, backends, output directories."""
    import seaborn as sns  # lazy: +1.2 s on `vgkernels report` (the batch imports this module)

    sns.set_theme(style="whitegrid", context="notebook")
    install()  # every DataFrame the notebook shows: people's numbers, scrolling when wide
    pd.set_option("display.width", 160)
    pd.set_option("display.max_columns", 40)
    pd.set_option("display.max_rows", 200)
    prof = get_profile(profile)
    nb = Notebook(name, prof, choose_backends(backends, prof, only), Paths.make(out_dir, data_dir))
    nb._save()
    if prof.tiny:
        from IPython.display import HTML, display  # lazy: see display.install

        display(HTML(f"<p class='vg-banner'>{SMOKE_TEST.capitalize()}: the tiny profile takes "
                     "too few samples for these figures to mean anything.</p>"))
    return nb


def empty_figure(message: str, title: str = ""):
    """A small figure that says why there is nothing to plot."""
    import matplotlib.pyplot as plt  # lazy: +0.3 s on `vgkernels report`, as seaborn above

    fig, ax = plt.subplots(figsize=(6, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=11)
    if title:
        ax.set_title(title)
    return fig


# -- formatting helpers used in computed prose --------------------------------------------------


def fmt_ns(x: float | None) -> str:
    """A time for prose: 3 significant figures, in µs from 10 µs on."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x >= 10_000:
        return f"{sig(x / 1000)} µs"
    return f"{sig(x)} ns"


def fmt_bytes(n: int | float | None) -> str:
    """A byte count for prose: ``16 KiB`` when a whole number of KiB, else ``n B``."""
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return "n/a"
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


def fmt_pct(x: float | None, signed: bool = True) -> str:
    """A fraction as a percentage for prose (signed by default)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def fmt_range(lo: float, hi: float, fmt: str = ".2f", unit: str = "") -> str:
    """"lo–hi unit", or one value when both round alike."""
    a, b = format(lo, fmt), format(hi, fmt)
    return f"{a}{unit}" if a == b else f"{a}–{b}{unit}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n word`` with the word in the plural when n is not 1."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def fmt_list(items: Sequence[Any], limit: int = 12) -> str:
    """Items joined by commas, the list cut after ``limit`` items."""
    items = [str(i) for i in items]
    if len(items) > limit:
        return ", ".join(items[:limit]) + f", … ({len(items)} in all)"
    return ", ".join(items)
