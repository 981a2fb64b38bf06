"""From llvm-mca's cycles per iteration to cycles per block and per byte, the bound it names,
and TSC ticks per byte given a clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from .mca import Analysis

BLOCK = 16  # bytes per AES block
NEAR = 0.9  # a bound within 10% of the predicted cycles is what limits the loop


@dataclass(frozen=True)
class Prediction:
    cpu: str
    region: str  # stitch | leftover | key_setup
    instructions: int
    cycles_per_iteration: float
    blocks_per_iteration: int  # (key_setup: H powers per iteration)
    resource_bound: float  # cycles/iteration the busiest resource needs
    dispatch_bound: float  # cycles/iteration the front end needs to dispatch the uops
    bottleneck: str
    busiest: tuple[tuple[str, float], ...]
    busiest_users: dict[str, float] = field(default_factory=dict)  # mnemonic -> share
    mca_dependency_share: float | None = None
    mca_resource_share: float | None = None

    @property
    def cycles_per_block(self) -> float:
        return self.cycles_per_iteration / self.blocks_per_iteration

    @property
    def cycles_per_byte(self) -> float:
        return self.cycles_per_block / BLOCK

    def ticks_per_byte(self, core_ghz: float, tsc_ghz: float) -> float:
        """TSC ticks per byte when the core runs at ``core_ghz`` and the TSC at ``tsc_ghz``."""
        return ticks_per_byte(self.cycles_per_byte, core_ghz, tsc_ghz)


def ticks_per_byte(cycles_per_byte: float, core_ghz: float, tsc_ghz: float) -> float:
    return cycles_per_byte * tsc_ghz / core_ghz


def cycles_per_byte(ticks_per_byte: float, core_ghz: float, tsc_ghz: float) -> float:
    """A measured TSC rate in core cycles (the driver measures the core clock per chunk)."""
    return ticks_per_byte * core_ghz / tsc_ghz


def bottleneck(a: Analysis) -> str:
    """What bounds the loop: the busiest resource when its cycles come close to the
    predicted ones, else dispatch (front end) when that does, else the dependency chains
    (latency: the loop waits for results, no unit is full)."""
    c = a.cycles_per_iteration
    top = a.busiest(1)
    res_name, res = top[0] if top else ("-", 0.0)
    if res >= NEAR * c and res >= a.dispatch_bound:
        tied = [n for n, p in a.pressure.items() if p >= 0.98 * res]
        return "resource " + "/".join(sorted(tied))
    if a.dispatch_bound >= NEAR * c:
        return "dispatch (front end)"
    return "latency (dependency chain)"


def predict(a: Analysis, region: str, blocks_per_iteration: int) -> Prediction:
    top = a.busiest(4)
    users = a.mnemonic_share(top[0][0]) if top else {}
    return Prediction(
        cpu=a.cpu, region=region, instructions=a.instructions,
        cycles_per_iteration=a.cycles_per_iteration, blocks_per_iteration=blocks_per_iteration,
        resource_bound=top[0][1] if top else 0.0, dispatch_bound=a.dispatch_bound,
        bottleneck=bottleneck(a), busiest=tuple((n, round(p, 2)) for n, p in top),
        busiest_users={m: round(s, 3) for m, s in list(users.items())[:4]},
        mca_dependency_share=a.dependency_share, mca_resource_share=a.resource_share)


__all__ = ["BLOCK", "Prediction", "bottleneck", "cycles_per_byte", "predict", "ticks_per_byte"]
