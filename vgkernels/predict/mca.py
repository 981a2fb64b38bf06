"""llvm-mca: find it, run it on a piece of assembly for a named CPU, read what it says.

The numbers come from its JSON output (``-json``: summary, instruction info, resource
pressure); the bottleneck it names comes from a second, text run with
``-bottleneck-analysis`` (the JSON view does not carry that section in LLVM 19).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "VG_LLVM_MCA"  # an explicit llvm-mca binary
NAMES = ("llvm-mca-19", "llvm-mca")
DIRS = (Path("/usr/lib/llvm-19/bin"),)
INSTALL_HINT = "apt-get install -y llvm-19 (Debian's package; it provides llvm-mca-19)"
# The oldest LLVM whose models this module was checked against: LLVM 14 (Debian 12's plain
# `llvm` package, installed as `llvm-mca`) has no znver4 or sapphirerapids model and fails on
# them, so an older tool is passed over as if it were not there.
MIN_MAJOR = 19
ITERATIONS = 300  # enough for the steady state of loops of ~100-400 instructions


class McaMissing(RuntimeError):
    """llvm-mca is not installed (the message says how to install it)."""


@dataclass(frozen=True)
class Tool:
    path: Path
    version: str  # e.g. "19.1.7"


def tool_version(path: Path) -> str:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                         check=False).stdout
    m = re.search(r"LLVM version (\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def _major(version: str) -> int | None:
    m = re.match(r"(\d+)\.", version)
    return int(m.group(1)) if m else None


def too_old(version: str) -> bool:
    """True for an LLVM version older than MIN_MAJOR (or one that does not say)."""
    major = _major(version)
    return major is None or major < MIN_MAJOR


def candidates(names: tuple[str, ...], dirs: tuple[Path, ...], exe: str) -> list[Path]:
    """An LLVM tool's executables, in the order looked for: ``names`` on PATH, then ``exe``
    in each of ``dirs`` (llvm-mca here, llc in targets)."""
    found = [shutil.which(name) for name in names]
    out = [Path(f) for f in found if f] + [d / exe for d in dirs if (d / exe).is_file()]
    return [p for p in dict.fromkeys(out) if os.access(p, os.X_OK)]


@functools.cache
def _locate(explicit: str | None) -> Tool | str:
    if explicit:
        p = Path(explicit)
        if not (p.is_file() and os.access(p, os.X_OK)):
            return f"{ENV_VAR}={explicit} is not an executable file"
        v = tool_version(p)
        if too_old(v):
            return (f"{ENV_VAR}={explicit} is LLVM {v}, older than {MIN_MAJOR} (its CPU "
                    f"models lack znver4 and sapphirerapids); install: {INSTALL_HINT}")
        return Tool(p, v)
    old = []
    for p in candidates(NAMES, DIRS, "llvm-mca"):
        v = tool_version(p)
        if not too_old(v):
            return Tool(p, v)
        old.append(f"{p} (LLVM {v})")
    if old:
        return (f"llvm-mca {MIN_MAJOR} or newer not found: only {', '.join(old)}, whose CPU "
                f"models lack znver4 and sapphirerapids; install it with: {INSTALL_HINT}")
    return (f"llvm-mca not found (looked for {', '.join(NAMES)} on PATH and in "
            f"{', '.join(map(str, DIRS))}); install it with: {INSTALL_HINT}")


def missing_reason() -> str | None:
    """None when llvm-mca is usable, else why not (with the install command)."""
    t = _locate(os.environ.get(ENV_VAR))
    return t if isinstance(t, str) else None


def find() -> Tool:
    """The llvm-mca to use: ``$VG_LLVM_MCA``, llvm-mca-19 / llvm-mca on PATH, or
    /usr/lib/llvm-19/bin, the first of LLVM MIN_MAJOR or newer; raises McaMissing saying
    how to install it."""
    t = _locate(os.environ.get(ENV_VAR))
    if isinstance(t, str):
        raise McaMissing(t)
    return t


@dataclass
class Analysis:
    """What llvm-mca predicts for ``iterations`` back-to-back runs of one code region."""

    cpu: str
    iterations: int
    instructions: int  # per iteration
    uops: float  # per iteration
    total_cycles: int
    dispatch_width: int
    block_rthroughput: float  # the resource bound alone (cycles per iteration)
    pressure: dict[str, float]  # resource -> cycles it is busy per iteration
    latency: list[int] = field(default_factory=list)  # per instruction, from the model
    rthroughput: list[float] = field(default_factory=list)
    instruction_text: list[str] = field(default_factory=list)
    backend_pressure: float | None = None  # share of cycles with backend pressure
    resource_share: float | None = None  # ... of which resource pressure
    dependency_share: float | None = None  # ... of which data dependencies
    critical: list[str] = field(default_factory=list)  # the critical sequence it shows
    by_instruction: list[dict[str, float]] = field(default_factory=list)  # resource -> cycles
    resources: list[str] = field(default_factory=list)  # every resource of the model

    @property
    def model_name(self) -> str:
        """The scheduling model's prefix (Zn4, ICX, SPR...): LLVM 19 maps some CPUs onto
        another's model (znver5 onto Zen 4's), which this shows."""
        return os.path.commonprefix(self.resources).removesuffix("Port") or "?"

    def mnemonic_share(self, resource: str) -> dict[str, float]:
        """Which instructions keep ``resource`` busy: mnemonic -> share of its cycles."""
        use: dict[str, float] = {}
        for text, res in zip(self.instruction_text, self.by_instruction, strict=True):
            if res.get(resource):
                m = text.split()[0]
                use[m] = use.get(m, 0.0) + res[resource]
        total = sum(use.values()) or 1.0
        return dict(sorted(((m, u / total) for m, u in use.items()), key=lambda kv: -kv[1]))

    @property
    def cycles_per_iteration(self) -> float:
        return self.total_cycles / self.iterations

    @property
    def dispatch_bound(self) -> float:
        """Cycles per iteration the front end needs to dispatch the micro-ops."""
        return self.uops / self.dispatch_width

    def busiest(self, n: int = 3) -> list[tuple[str, float]]:
        return sorted(self.pressure.items(), key=lambda kv: -kv[1])[:n]


def _clean_resource(name: str) -> str:
    # JSON spells the units of a resource group "Zn4FP45.\x00", "Zn4FP45.\x01"
    m = re.match(r"^(.*)\.([\x00-\x1f])$", name)
    return f"{m.group(1)}.{ord(m.group(2))}" if m else name


def parse_json(text: str) -> Analysis:
    d = json.loads(text)
    (region,) = d["CodeRegions"]
    s = region["SummaryView"]
    names = [_clean_resource(r) for r in d["TargetInfo"]["Resources"]]
    n_ins = len(region["Instructions"])
    pressure: dict[str, float] = {}
    by_ins: list[dict[str, float]] = [{} for _ in range(n_ins)]
    for e in region["ResourcePressureView"]["ResourcePressureInfo"]:
        name, use = names[e["ResourceIndex"]], float(e["ResourceUsage"])
        if e["InstructionIndex"] == n_ins:  # the row of totals per iteration
            pressure[name] = use
        else:
            by_ins[e["InstructionIndex"]][name] = use
    info = region["InstructionInfoView"]["InstructionList"]
    it = int(s["Iterations"])
    return Analysis(
        cpu=d["TargetInfo"]["CPUName"], iterations=it,
        instructions=int(s["Instructions"]) // it, uops=float(s["TotaluOps"]) / it,
        total_cycles=int(s["TotalCycles"]), dispatch_width=int(s["DispatchWidth"]),
        block_rthroughput=float(s["BlockRThroughput"]), pressure=pressure,
        latency=[int(i["Latency"]) for i in info],
        rthroughput=[float(i["RThroughput"]) for i in info],
        instruction_text=[str(x) for x in region["Instructions"]], by_instruction=by_ins,
        resources=names)


_PCT = r"\[\s*([\d.]+)%\s*\]"


def parse_bottleneck(text: str, a: Analysis) -> Analysis:
    """Fill in the bottleneck analysis section of a text report."""
    def pct(label: str) -> float | None:
        m = re.search(label + r"\s*:?\s*" + _PCT, text)
        return float(m.group(1)) / 100 if m else None

    a.backend_pressure = pct(r"Cycles with backend pressure increase")
    a.resource_share = pct(r"Resource Pressure")
    a.dependency_share = pct(r"Data Dependencies")
    if a.backend_pressure is None and "No resource or data dependency bottlenecks" in text:
        a.backend_pressure = a.resource_share = a.dependency_share = 0.0
    m = re.search(r"Critical sequence based on the simulation:\n(.*?)\n\n\n", text, re.S)
    if m:
        a.critical = [ln.rstrip() for ln in m.group(1).splitlines() if re.search(r"\d\.\s", ln)]
    return a


def analyse(asm: str, cpu: str, iterations: int = ITERATIONS, tool: Tool | None = None
            ) -> Analysis:
    """llvm-mca's prediction for ``asm`` (AT&T syntax, one loop body) on ``cpu``."""
    tool = tool or find()
    base = [str(tool.path), f"-mcpu={cpu}", "-mtriple=x86_64-unknown-linux-gnu",
            f"-iterations={iterations}"]
    js = subprocess.run([*base, "-json"], input=asm, capture_output=True, text=True,
                        check=False)
    if js.returncode != 0:
        raise RuntimeError(f"llvm-mca -mcpu={cpu} failed: {js.stderr.strip()[:800]}")
    a = parse_json(js.stdout)
    tx = subprocess.run([*base, "-bottleneck-analysis", "-resource-pressure=false",
                         "-instruction-info=false"], input=asm, capture_output=True,
                        text=True, check=False)
    if tx.returncode == 0:
        parse_bottleneck(tx.stdout, a)
    return a


__all__ = ["ENV_VAR", "INSTALL_HINT", "Analysis", "McaMissing", "Tool", "analyse", "find",
           "candidates", "missing_reason", "parse_bottleneck", "parse_json", "too_old",
           "tool_version"]
