"""Issue 12's targets from the raw rows of ``vgkernels.bench.targets.measure``.

:func:`table` gives one tidy row per check: ``target`` (1-6), ``check``, ``backend``, ``size``
(bytes; for a remainder the blocks after whole groups are in ``detail``), ``measured``,
``reference`` (the bound, floor or comparison case, same unit), ``unit``, ``ratio`` =
measured / reference, ``limit`` (the largest ratio the issue allows; for a limit in ns it is
converted to a ratio of that row's reference) and ``holds``.  A figure is the minimum over
the samples (the case's best, which a busy neighbour on a shared machine can only raise),
except where two cases were timed side by side round after round (placement's confirmation,
records and open against the sweeps' same-visit base): there the ratio is the median of the
rounds' ratios, and measured / reference are the medians.
Rows without a limit (``limit`` NaN, ``holds`` NA) are context, e.g. the AES-only bound.
"""

from __future__ import annotations

import math

import pandas as pd

from ..backends import get

BULK_LIMIT = 1.15
SAW_RATIO, SAW_NS, SAW_FROM = 1.03, 8.0, 1024
REMAINDER_RATIO, REMAINDER_NS = 1.3, 5.0
FLOOR_LIMIT = 1.5
SAME_AS_FASTEST = 1.03  # "as fast as the fastest backend": within 3% (the samples' noise)
PLACEMENT_LIMIT = 1.05
NONCE_NS = 2.0
RECORD_LIMIT = 1.02
OPEN_LIMIT = 1.05
PEER_SEAL_OPS = ("openssl", "openssl4_seal", "aead_seal")

COLUMNS = ["target", "check", "backend", "size", "detail", "measured", "reference", "unit",
           "ratio", "limit", "holds"]


def _row(target: int, check: str, backend: str, size: int, measured: float, reference: float,
         unit: str, limit: float, detail: str = "", ratio: float | None = None) -> dict:
    """``ratio``: measured / reference unless given (a paired ratio's median)."""
    if ratio is None:
        ratio = measured / reference if reference else math.nan
    holds = pd.NA if math.isnan(limit) or math.isnan(ratio) else bool(ratio <= limit)
    return {"target": target, "check": check, "backend": backend, "size": int(size),
            "detail": detail, "measured": measured, "reference": reference, "unit": unit,
            "ratio": ratio, "limit": limit, "holds": holds}


def _part(raw: pd.DataFrame, part: str) -> pd.DataFrame:
    return raw[raw["part"] == part] if "part" in raw else raw.iloc[0:0]


def _by_n(df: pd.DataFrame, col: str = "min_ticks") -> dict[int, float]:
    return {int(n): float(v) for n, v in df.groupby("n")[col].min().items()}


def bulk(raw: pd.DataFrame) -> list[dict]:
    """1: in-place seal at the bulk sizes against the instruction-mix bound (ticks/B), and
    the AES-only bound as context."""
    out = []
    seal = _part(raw, "seal")
    for be, g in seal.groupby("backend", sort=False):
        bm = _part(raw, "bound_mix").query("backend == @be")
        bc = _part(raw, "bound_ctr").query("backend == @be")
        if bm.empty:
            continue
        mix = float(bm["min_ticks"].min()) / float(bm["n"].iloc[0])
        ctr = float(bc["min_ticks"].min()) / float(bc["n"].iloc[0]) if len(bc) else math.nan
        ts = _by_n(g)
        for n in (16384, 65536):
            if n in ts:
                out.append(_row(1, "bulk vs instruction-mix bound", be, n, ts[n] / n, mix,
                                "ticks/B", BULK_LIMIT))
                out.append(_row(1, "bulk vs AES-only bound (context)", be, n, ts[n] / n, ctr,
                                "ticks/B", math.nan))
    return out


def peers(raw: pd.DataFrame) -> list[dict]:
    """1: our seal against every peer's seal at the same instruction-set level, every size."""
    sw = _part(raw, "sweep_sizes")
    if sw.empty:
        return []
    ours = sw[(sw["impl"] == "vgkernels") & (sw["op"] == "seal")]
    theirs = sw[sw["op"].isin(PEER_SEAL_OPS)]
    out = []
    for (be, n), g in ours.groupby(["backend", "n"], sort=False):
        mine = float(g["min_ns"].min())
        for impl, p in theirs[(theirs["backend"] == be) & (theirs["n"] == n)].groupby("impl"):
            out.append(_row(1, f"seal vs peer {impl}", be, n, mine, float(p["min_ns"].min()),
                            "ns", 1.0))
    return out


def sawtooth(raw: pd.DataFrame) -> list[dict]:
    """2: n against n rounded down to 16; a remainder of r blocks after whole groups
    against r blocks at the bulk rate (64 KiB seal)."""
    out = []
    for be, g in _part(raw, "seal").groupby("backend", sort=False):
        ns = _by_n(g, "min_ns")
        for n, t in sorted(ns.items()):
            down = n // 16 * 16
            if n % 16 and down in ns:
                ref = ns[down]
                lim = SAW_RATIO if n >= SAW_FROM else (ref + SAW_NS) / ref
                out.append(_row(2, "n vs n rounded down to 16", be, n, t, ref, "ns", lim))
        base = 1024
        rate = ns.get(65536, math.nan) / 4096  # ns per block at the bulk rate
        grp = get(str(be)).group
        for n, t in sorted(ns.items()):
            r = (n - base) // 16
            if n % 16 == 0 and 0 < r < grp and base in ns:
                ref = r * rate
                out.append(_row(2, "remainder of r blocks vs r blocks at the bulk rate", be, n,
                                t - ns[base], ref, "ns",
                                (REMAINDER_RATIO * ref + REMAINDER_NS) / ref, detail=f"r={r}"))
    return out


def short(raw: pd.DataFrame) -> list[dict]:
    """3: the 16-byte seal against its serial floor; at 16 and 64 B the best backend against
    the fastest."""
    out = []
    seal = _part(raw, "seal")
    for be, g in seal.groupby("backend", sort=False):
        fl = _part(raw, "floor").query("backend == @be")
        ts = _by_n(g)
        if 16 in ts and len(fl):
            per_link = float(fl["min_ticks"].min()) / float(fl["n"].iloc[0])
            out.append(_row(3, "16 B seal vs serial floor", be, 16, ts[16], per_link, "ticks",
                            FLOOR_LIMIT))
            # back to back, 16-byte seals overlap in the core: the check's time per call is a
            # throughput; one call at a time (`driver.SERIAL`) gives the latency beside it,
            # less an empty call timed the same way (the fence and the call)
            one = _part(raw, "seal_serial").query("backend == @be")
            empty = _part(raw, "seal_serial_empty")  # one for every backend
            if len(one):
                t, detail = float(one["min_ticks"].min()), "lfence after each call"
                if len(empty):
                    e = float(empty["min_ticks"].min())
                    t, detail = t - e, f"{detail}, less an empty call's {e:.1f} ticks"
                out.append(_row(3, "16 B seal one call at a time vs serial floor (context)",
                                be, 16, t, per_link, "ticks", math.nan, detail=detail))
    if not seal.empty:
        best = max(seal["backend"].unique(), key=lambda b: get(b).rank)
        for n in (16, 64):
            at = seal[seal["n"] == n].groupby("backend")["min_ns"].min()
            if best in at:
                out.append(_row(3, "best backend vs fastest backend", best, n, float(at[best]),
                                float(at.min()), "ns", SAME_AS_FASTEST,
                                detail=f"fastest {at.idxmin()}"))
    return out


def utag_split(sweep: pd.DataFrame, conf: pd.DataFrame) -> str:
    """The buffers whose pages share a µtag with the key context's (``utag_ctx``, see
    `vgkernels.bench.utag`) against the others, by their paired ratios to the fastest."""
    hit = dict(zip(sweep["offset"].astype(int), sweep["utag_ctx"].astype(bool), strict=True))
    r = conf.assign(hit=conf["offset"].astype(int).map(hit))
    parts = []
    for flag, name in ((True, "sharing a µtag with the key context"), (False, "the others")):
        s = r[r["hit"] == flag]["paired_ratio"]
        n_all = sum(1 for v in hit.values() if v == flag)
        if n_all:
            parts.append(f"{name}: {n_all}" + (f", up to {s.max():.3f}" if len(s) else ""))
    return "; ".join(parts)


def stack_classes(sweep: pd.DataFrame, conf: pd.DataFrame) -> str:
    """The stack offsets by their place in a line (offset mod 64: a caller's 16-byte aligned
    stack takes one of four), each the median over the lines of its sweep minimum against the
    fastest offset's."""
    r = sweep.assign(cls=sweep["offset"].astype(int) % 64,
                     rel=sweep["min_ns"] / sweep["min_ns"].min())
    by = r.groupby("cls")["rel"].median()
    lines = r.groupby("cls").size().max()
    return (f"by offset mod 64 (median over {lines} lines of the minima): "
            + ", ".join(f"{c}: {v:.3f}" for c, v in by.items()))


def ctx_split(sweep: pd.DataFrame, conf: pd.DataFrame) -> str:
    """The builder's key context (offset 0, the fastest of its candidates) and the fresh
    ones over 3% slower than the fastest, by their paired ratios."""
    r = dict(zip(conf["offset"].astype(int), conf["paired_ratio"], strict=True))
    fresh = [v for o, v in r.items() if o != 0]
    n_fresh = int((sweep["offset"].astype(int) != 0).sum())
    slow = [v for v in fresh if v > SAME_AS_FASTEST]
    kept = f"the builder's: {r[0]:.3f}; " if 0 in r else ""
    return (f"{kept}fresh contexts over {SAME_AS_FASTEST}: {len(slow)} of {n_fresh}"
            + (f", up to {max(slow):.3f}" if slow else ""))


# (sweep part, what it varies, limit, more detail from (sweep, confirmation) rows).  The
# output's address (its pages' µtags), the stack's offsets within a line (the issue's
# sweep steps by 256 bytes) and the key context's pages are not placements the issue names:
# context rows without a limit, only where they were confirmed in pairs, and without a
# minima row.
PLACEMENTS = (("place_io", "output offset from input", PLACEMENT_LIMIT, None),
              ("place_align", "alignment of the output in a cache line", PLACEMENT_LIMIT, None),
              ("place_stack", "stack offset", PLACEMENT_LIMIT, None),
              ("place_va", "(context) the output buffer's address, page offset fixed", math.nan,
               utag_split),
              ("place_stack16", "(context) the stack's 16-byte offsets within a line",
               math.nan, stack_classes),
              ("place_ctx", "(context) the key context's pages, stack and buffers fixed",
               math.nan, ctx_split))


def placement(raw: pd.DataFrame) -> list[dict]:
    """4: slowest against fastest placement, per backend and size; the nonce store's cost.

    Where the sweep's offsets were timed again beside its fastest (``<part>_confirm``
    rows), the check is the largest paired ratio (median over rounds of slow / fast in the same
    round) and the sweep's own minima become a context row: with one minimum per offset over a
    few samples each, the largest of 64 minima mostly measures the VM's slow phases."""
    out = []
    for part, what, limit, explain in PLACEMENTS:
        context = math.isnan(limit)
        conf = _part(raw, f"{part}_confirm")
        for (be, n), g in _part(raw, part).groupby(["backend", "n"], sort=False):
            worst = g.loc[g["min_ns"].idxmax()]
            sweep = (float(worst["min_ns"]), float(g["min_ns"].min()),
                     f"slowest at {int(worst['offset'])}")
            c = conf[(conf["backend"] == be) & (conf["n"] == n)] if not conf.empty else conf
            if c.empty:
                if not context:
                    out.append(_row(4, f"placement: {what}", be, n, *sweep[:2], "ns",
                                    limit, detail=sweep[2]))
                continue
            fast = c[c["role"] == "fastest"].iloc[0]
            slow = c[c["role"] == "slow"]
            w = slow.loc[slow["paired_ratio"].idxmax()]
            detail = (f"slowest at {int(w['offset'])} vs {int(fast['offset'])}, "
                      f"paired over {int(w['rounds'])} rounds "
                      f"[{w['paired_lo']:.3f}, {w['paired_hi']:.3f}]")
            if explain is not None:
                detail = f"{detail}; {explain(g, c)}"
            out.append(_row(4, f"placement: {what}", be, n, float(w["median_ns"]),
                            float(fast["median_ns"]), "ns", limit, detail=detail,
                            ratio=float(w["paired_ratio"])))
            if not context:
                out.append(_row(4, f"placement sweep minima (context): {what}", be, n,
                                *sweep[:2], "ns", math.nan, detail=sweep[2]))
    nonce = _part(raw, "nonce")
    for be, g in nonce.groupby("backend", sort=False):
        by = g.groupby("mode")["min_ns"].min()
        if "none" not in by:
            continue
        for mode in ("store8", "store4"):
            if mode in by:
                ref = float(by["none"])
                out.append(_row(4, f"nonce just written ({mode[-1]}-byte store)", be, 16,
                                float(by[mode]), ref, "ns", (ref + NONCE_NS) / ref))
    return out


def _pairs(raw: pd.DataFrame, parts: tuple[str, ...]) -> dict[tuple, pd.Series]:
    """(backend, n, op) -> its same-round pair row (`bench.targets.paired_rows`), from the
    first of ``parts`` that has one."""
    out: dict[tuple, pd.Series] = {}
    for part in reversed(parts):  # the first part wins
        for _, r in _part(raw, f"{part}_paired").iterrows():
            out[(r["backend"], int(r["n"]), r["op"])] = r
    return out


def _compared(target: int, check: str, be: str, n: int, op: str, mine: float, ref: float,
              limit: float, pairs: dict[tuple, pd.Series], detail: str = "") -> dict:
    """A row of ``op`` against its reference: the paired ratio where the run has one (the
    medians as measured / reference, the minima's ratio in the detail), else the minima."""
    pr = pairs.get((be, int(n), op))
    if pr is None:
        return _row(target, check, be, n, mine, ref, "ns", limit, detail=detail)
    note = (f"paired over {int(pr['rounds'])} rounds [{pr['paired_lo']:.3f}, "
            f"{pr['paired_hi']:.3f}], minima {mine / ref:.3f}")
    return _row(target, check, be, n, float(pr["head_ns"]), float(pr["base_ns"]), "ns", limit,
                detail=f"{detail}; {note}" if detail else note,
                ratio=float(pr["paired_ratio"]))


def records(raw: pd.DataFrame) -> list[dict]:
    """5: gather and two-slice against copy + in-place seal (pieces n + 1): the median of
    their same-round ratios where the sweeps kept samples, else the minima's ratio."""
    sw = pd.concat([_part(raw, "sweep_records"), _part(raw, "sweep_sizes")])
    if sw.empty:
        return []
    pairs = _pairs(raw, ("sweep_records", "sweep_sizes"))
    rec = _part(raw, "sweep_records")
    asked = set(zip(rec["backend"], rec["n"], strict=True))  # where two_slice was measured
    sw = sw[(sw["impl"] == "vgkernels") & (sw["shape"] == "n+1")]
    best = sw.groupby(["backend", "n", "op"])["min_ns"].min().unstack("op")
    out = []
    for (be, n), r in best.iterrows():
        if pd.isna(r.get("copy_ip")):
            continue
        for op in ("gather", "two_slice"):
            if op in r and not pd.isna(r[op]):
                out.append(_compared(5, f"{op} vs copy + seal", be, n, op, float(r[op]),
                                     float(r["copy_ip"]), RECORD_LIMIT, pairs,
                                     detail="n+1 a multiple of 16" if (n + 1) % 16 == 0
                                     else ""))
            elif op == "two_slice" and (be, n) in asked:  # it declined the shape
                out.append(_row(5, "two_slice vs copy + seal", be, n, math.nan,
                                float(r["copy_ip"]), "ns", RECORD_LIMIT, detail="declined"))
    return out


def opening(raw: pd.DataFrame) -> list[dict]:
    """6: open (out of place) against seal (in place) at every size (paired as `records`)."""
    sw = _part(raw, "sweep_sizes")
    if sw.empty:
        return []
    pairs = _pairs(raw, ("sweep_sizes",))
    sw = sw[sw["impl"] == "vgkernels"]
    best = sw.groupby(["backend", "n", "op"])["min_ns"].min().unstack("op")
    return [_compared(6, "open vs seal", be, n, "open_out", float(r["open_out"]),
                      float(r["seal"]), OPEN_LIMIT, pairs)
            for (be, n), r in best.iterrows()
            if not pd.isna(r.get("open_out")) and not pd.isna(r.get("seal"))]


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """The targets table (see the module's docstring)."""
    rows: list[dict] = []
    for f in (bulk, peers, sawtooth, short, placement, records, opening):
        rows += f(raw)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["holds"] = df["holds"].astype("boolean")
    return df


def summary(tab: pd.DataFrame) -> pd.DataFrame:
    """Per target and backend: checks, how many hold, the worst ratio against its limit."""
    t = tab.dropna(subset=["limit"]).assign(margin=lambda d: d["ratio"] / d["limit"])
    g = t.groupby(["target", "backend"])
    return pd.DataFrame({"checks": g.size(), "hold": g["holds"].sum().astype(int),
                         "worst_ratio_over_limit": g["margin"].max()}).reset_index()


def aes_rate(raw: pd.DataFrame) -> pd.DataFrame:
    """AES instructions issued per core cycle, per width and independent chains (the
    driver's clock probe gives the core clock of the chunk)."""
    a = _part(raw, "aes_rate")
    if a.empty:
        return pd.DataFrame(columns=["width", "chains", "aes_per_cycle", "block_rounds_per_cycle"])
    cycles = a["min_ticks"] * a["core_hz"] / a["tsc_hz"]
    ops = a["aes_per_iter"] * a["n"] / a["bytes_per_iter"]
    out = a.assign(aes_per_cycle=ops / cycles)[["width", "chains", "aes_per_cycle"]]
    out = out.assign(block_rounds_per_cycle=out["aes_per_cycle"] * out["width"])
    return out.astype({"width": int, "chains": int}).sort_values(["width", "chains"]) \
        .reset_index(drop=True)


REPLAY_PARTS = ("loop", "cut_alu", "cut_moves", "free", "alu", "moves", "rest3", "rest2",
                "rest1", "core")
# the free curve: the other vector instructions from none to all, evenly thinned
_CURVE = ("core", "rest1", "rest2", "rest3", "free")


def loop_replay(raw: pd.DataFrame) -> pd.DataFrame:
    """Target 1's hot loop replayed on its own (`vgkernels.bench.replay`), per backend and
    part: instructions, the other vector instructions kept (of the loop's; ``in_place``: of
    those, left on their own registers for want of an EVEX form), ticks/B and the ratio to
    the part of its AES and multiplies alone (``core``)."""
    cols = ["backend", "part", "instructions", "others", "others_total", "in_place",
            "ticks_per_B", "vs_core"]
    rows = raw[raw["part"].astype(str).str.startswith("replay_")] if "part" in raw else raw[:0]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for be, g in rows.groupby("backend", sort=False):
        per = {str(r["part"])[7:]: r for _, r in g.iterrows()}
        core = per.get("core")
        ref = float(core["min_ticks"]) / float(core["n"]) if core is not None else math.nan
        for part in (p for p in REPLAY_PARTS if p in per):
            r = per[part]
            tb = float(r["min_ticks"]) / float(r["n"])
            out.append({"backend": be, "part": part, "instructions": int(r["instructions"]),
                        "others": int(r["others"]), "others_total": int(r["others_total"]),
                        "in_place": int(r.get("in_place", 0)), "ticks_per_B": tb,
                        "vs_core": tb / ref})
    return pd.DataFrame(out, columns=cols)


def loop_budget(rep: pd.DataFrame, limit: float = BULK_LIMIT) -> pd.DataFrame:
    """Per backend: the loop against its AES and multiplies (``loop_vs_core``), the same with
    the chains through its computing instructions or through its loads, stores and moves cut
    (``cut_alu_vs_core``, ``cut_moves_vs_core``), with nothing chaining through the other
    work (``free_vs_core``), with only its computing instructions or only its loads, stores
    and moves (``alu_vs_core``, ``moves_vs_core``), and how many other vector instructions
    a loop could have before the free curve (core, 1/4 .. all of them) crosses ``limit``
    (linear between the measured points; NaN without the free parts or when even all of them
    stay below)."""
    cols = ["backend", "others_total", "loop_vs_core", "cut_alu_vs_core", "cut_moves_vs_core",
            "free_vs_core", "alu_vs_core", "moves_vs_core", "others_at_limit"]
    out = []
    for be, g in rep.groupby("backend", sort=False):
        by = g.set_index("part")
        curve = g[g["part"].isin(_CURVE)].sort_values("others")
        at = math.nan
        pts = list(zip(curve["others"], curve["vs_core"], strict=True))
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            if y0 <= limit < y1:
                at = x0 + (limit - y0) * (x1 - x0) / (y1 - y0)
                break
        out.append({"backend": be, "others_total": int(g["others_total"].iloc[0]),
                    **{f"{p}_vs_core": float(by["vs_core"].get(p, math.nan))
                       for p in ("loop", "cut_alu", "cut_moves", "free", "alu", "moves")},
                    "others_at_limit": at if len(pts) > 2 else math.nan})
    return pd.DataFrame(out, columns=cols)


def heat(raw: pd.DataFrame, part: str = "place_io") -> pd.DataFrame:
    """Placement cost relative to the fastest placement: rows (backend, size), columns
    offset."""
    p = _part(raw, part)
    if p.empty:
        return pd.DataFrame()
    rel = p["min_ns"] / p.groupby(["backend", "n"])["min_ns"].transform("min")
    return p.assign(rel=rel).pivot_table(index=["backend", "n"], columns="offset",
                                         values="rel", aggfunc="min")


def failing(tab: pd.DataFrame) -> pd.DataFrame:
    """The checks that do not hold, worst first."""
    f = tab[tab["holds"].eq(False)].assign(over=lambda d: d["ratio"] / d["limit"])
    return f.sort_values("over", ascending=False)


__all__ = ["COLUMNS", "REPLAY_PARTS", "aes_rate", "bulk", "failing", "heat", "loop_budget",
           "loop_replay", "opening", "peers", "placement", "records", "sawtooth", "short",
           "summary", "table"]
