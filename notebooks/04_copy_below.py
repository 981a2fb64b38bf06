# %% [markdown]
# # 04 copy_below: gather against copy + seal in place
#
# Encrypting a text given as two pieces (n bytes, then 1 byte: the TLS record shape) either
# gathers from the pieces (`gather`: `seal_gather`, out of place) or copies them into the
# output and seals in place (`copy_ip`). Per backend, from 16 B to 64 KiB, with every
# aligned size (the first piece ends on a block boundary) next to its unaligned twin one byte
# shorter, and dense sizes added where the two cross. The threshold below which copying wins
# comes from `vgkernels.analysis.copy_below` (the smallest size from which the gather is at
# least as fast at every larger measured size, within `rtol`), with a bootstrap confidence
# interval. The aim is a gather that never loses, so that the thresholds fall to zero.
#
# Writes `copy_below.json` (this CPU's table, `vgkernels.dispatch` format) into the report
# directory; with `install=True` also into the user's data directory, where `vgkernels.api`
# finds it first for this CPU (`vgkernels info` shows which table applies).

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one)
rtol = 0.01  # the gather counts as "at least as fast" within this
install = False  # also install the table for this CPU in the user's data directory

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from vgkernels import dispatch, report
from vgkernels.report import copy_below as cb

nb = report.start("04_copy_below", profile, out_dir, data_dir, backends)
display(Markdown(f"Profile **{nb.profile.name}** (k = {nb.profile.k}, {nb.profile.passes} "
                 f"passes, {nb.profile.n_boot} bootstrap replicates); backends: "
                 f"{', '.join(nb.backends)}"))

# %%
res = nb.sweep("copy_below", sizes=cb.sizes(nb.profile), refine=cb.refine(nb.profile))
samples = res.samples
refined = res.meta["params"].get("refined_sizes") or {}
display(Markdown(f"{len(res.df)} cases, {len(samples)} samples; sizes added where gather and "
                 f"copy+ip cross: " + (", ".join(f"{be}: {len(v)}" for be, v in refined.items())
                                       or "none")))

# %% [markdown]
# ## Thresholds: copy below these sizes, with bootstrap confidence intervals

# %%
results = cb.thresholds(samples, n_boot=nb.profile.n_boot, rtol=rtol)
nb.table(cb.threshold_table(results), "thresholds")

# %%
doc = cb.document(results, samples, {**res.meta, "run_id": res.run_id})
path = nb.file(cb.write(doc, nb.paths.out / "copy_below.json"))
if install:
    installed = dispatch.install(doc)
    display(Markdown(f"Installed the thresholds for this CPU into `{installed}`."))
display(Markdown(f"Wrote `{path.name}` (this CPU's table, the format `vgkernels.dispatch` reads): "
                 + "; ".join(f"`{be}` ({e['aligned']}, {e['unaligned']})"
                             for be, e in doc["backends"].items())))

# %%
g = cb.plot_ratio(results)
nb.figure(g, "ratio", headline=True, title="gather / copy+ip against size (lines: ratio; "
          "dotted: threshold; band: its CI; dashed: 1 + rtol)")
plt.show()
display(Markdown(cb.RATIO_CAPTION))

# %% [markdown]
# ## gather / copy+ip per size, every backend (best of k; below 1: the gather is faster)
#
# The sizes of the profile's grid; the per-backend tables with the times in ns and the sizes
# added around crossings are in `tables/04_copy_below-thread_table-<backend>.csv`.

# %%
table = cb.ratio_tables(samples)
for be in nb.backends:
    t = table[table["backend"] == be].drop(columns="backend") if len(table) else table
    if len(t):
        nb.table(t, f"thread_table-{be}")
cb.compact_table(samples, cb.sizes(nb.profile) or sorted(set(res.meta["params"]["sizes"])))

# %% [markdown]
# ## Range of gather / copy+ip per backend and alignment, and where the gather loses most

# %%
nb.table(cb.summary_stats(results), "summary")

# %%
nb.headline(cb.headline(results))
nb.conclude(cb.statements(results, samples), recommendation=cb.recommendation(results))
