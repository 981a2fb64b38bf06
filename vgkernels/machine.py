"""What machine this is: the identity every report, data row and thresholds table carries.

Two VMs can both call themselves "AMD EPYC": the CPU key (vendor, family, model, LLVM CPU
name) tells a Zen 3 from a Zen 4 or a Zen 5, and the host name, hypervisor and kernel tell
the runs apart.  Clock rates are measured by the timing driver (`vgkernels.bench.meta.clocks`)
and added by whoever has them.
"""

from __future__ import annotations

import functools
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from . import cpu

CPU_KEY_FIELDS = ("vendor", "family", "model", "llvm_cpu")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@functools.cache
def cpu_key() -> dict[str, Any]:
    """{vendor, family, model, llvm_cpu, model_name} of this CPU (None where unknown)."""
    return {"vendor": cpu.cpuinfo_field("vendor_id"),
            "family": _int(cpu.cpuinfo_field("cpu family")),
            "model": _int(cpu.cpuinfo_field("model\t") or cpu.cpuinfo_field("model ")),
            "llvm_cpu": cpu.host_cpu_name(),
            "model_name": cpu.cpu_model()}


def cpu_key_text(key: dict[str, Any]) -> str:
    """'AuthenticAMD family 25 model 17 (znver4)'."""
    fam = "?" if key.get("family") is None else key["family"]
    mod = "?" if key.get("model") is None else key["model"]
    return f"{key.get('vendor') or '?'} family {fam} model {mod} ({key.get('llvm_cpu')})"


def host_name() -> str:
    """The host name, safe as a directory name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() or "host")


@functools.cache
def hypervisor() -> str:
    """'KVM', 'none', ... as lscpu tells it; the DMI vendor or 'yes' when it cannot."""
    flags = (cpu.cpuinfo_field("flags") or "").split()
    if "hypervisor" not in flags:
        return "none"
    if shutil.which("lscpu"):
        try:
            out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
            m = re.search(r"^Hypervisor vendor:\s*(.+)$", out, re.M)
            if m:
                return m.group(1).strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return Path("/sys/class/dmi/id/sys_vendor").read_text().strip() or "yes"
    except OSError:
        return "yes"


@functools.cache
def identity() -> dict[str, Any]:
    """The machine's identity (no clock rates: see `vgkernels.bench.meta.clocks`)."""
    key = cpu_key()
    return {"host": host_name(), "cpu_model": key["model_name"], "cpu_vendor": key["vendor"],
            "cpu_family": key["family"], "cpu_model_number": key["model"],
            "cpu_stepping": _int(cpu.cpuinfo_field("stepping")), "llvm_cpu": key["llvm_cpu"],
            "hypervisor": hypervisor(), "os_kernel": platform.release()}


def caption(ident: dict[str, Any] | None = None) -> str:
    """One line naming the machine, for figure captions and report headers."""
    i = ident or identity()
    text = (f"{i['cpu_model']} ({i['cpu_vendor']} family {i['cpu_family']} model "
            f"{i['cpu_model_number']} stepping {i['cpu_stepping']}, LLVM {i['llvm_cpu']}), "
            f"host {i['host']}, hypervisor {i['hypervisor']}, Linux {i['os_kernel']}")
    if i.get("tsc_ghz"):
        text += f", TSC {i['tsc_ghz']:.3f} GHz"
    if i.get("core_ghz"):
        text += f", core ~{i['core_ghz']:.2f} GHz"
    return text


def slug() -> str:
    """<host>-<llvm cpu>: the part of a report folder's name that names the machine."""
    return f"{host_name()}-{cpu_key()['llvm_cpu']}"
