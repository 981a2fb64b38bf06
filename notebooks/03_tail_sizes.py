# %% [markdown]
# # 03 Tail sizes: leftover blocks, partial bytes, cost models
#
# Per backend, block counts `stitch_min + k * group + t` for every leftover `t` of
# `0..group-1` after whole groups of the stitched loop (each backend's group and stitch_min
# are printed below, from its backend row), and partial final blocks of 1..15 bytes, for
# `tail=split` and `tail=full` in alternating runs. Two cost models are fitted to the
# best-of-k times per backend, variant and operation:
#
# * linear: `fixed + per_block * blocks + per_partial * (bytes % 16 != 0)`;
# * grouped: piecewise linear with a break at every group boundary,
#   `fixed + per_group_iter * (blocks // group) + per_leftover_block * (blocks % group)
#   + per_partial * (bytes % 16 != 0)`;
#
# and every size is compared with the linear model (`excess`): where the leftover costs
# more than the model says.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one)
rtol = 0.10  # flag sizes measured above the linear model by more than this

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.backends import availability
from vgkernels.report import tail_sizes

nb = report.start("03_tail_sizes", profile, out_dir, data_dir, backends)
display(Markdown(f"Profile **{nb.profile.name}** (k = {nb.profile.k}, {nb.profile.passes} "
                 f"passes, {nb.profile.runs} A/B pairs); backends: {', '.join(nb.backends)}"))

# %%
frames = []
for be in nb.backends:
    if availability()[be] is not None:
        display(Markdown(f"`{be}` skipped: {availability()[be]}"))
        continue
    group, stitch_min = tail_sizes.geometry(be)
    sizes = tail_sizes.plan(be, nb.profile)
    display(Markdown(f"`{be}`: group {group}, stitch_min {stitch_min}: leftovers of "
                     f"1..{group - 1} blocks after the {group}-block loop; {len(sizes)} sizes "
                     f"from {min(sizes)} to {max(sizes)} bytes"))
    res = nb.sweep("blocks", backends=[be], sizes=sizes, ab=("tail=split", "tail=full"),
                   runs=nb.profile.runs, peers=False, label=f"tails {be}")
    frames.append(res.df)
df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

# %% [markdown]
# ## Cost models per backend, tail and operation: coefficients (ns) and fit quality

# %%
lin, grp = tail_sizes.fit_models(df) if len(df) else ({}, {})
models = nb.table(tail_sizes.model_table(lin, grp), "models")
models

# %% [markdown]
# ## What t leftover blocks add after whole groups (ns), and partial final blocks

# %%
rem = nb.table(tail_sizes.remainder_cost(df) if len(df) else pd.DataFrame(), "remainder")
rem

# %%
g = tail_sizes.plot_leftover(df)
nb.figure(g, "leftover", headline=True, title="ns added by t leftover blocks")
plt.show()

# %%
g = tail_sizes.plot_partial(df)
nb.figure(g, "partial", title="partial final block")
plt.show()

# %% [markdown]
# ## Sizes measured above the linear model by more than rtol (flagged)

# %%
ex = tail_sizes.excess_table(df, lin, rtol=rtol) if lin else pd.DataFrame()
nb.table(ex, "excess")
ex[ex["flagged"]] if len(ex) else ex

# %%
g = tail_sizes.plot_excess(ex, rtol=rtol)
nb.figure(g, "excess", title="measured / linear model - 1")
plt.show()

# %%
nb.headline({"models": len(lin), "flagged": int(ex["flagged"].sum()) if len(ex) else 0})
nb.conclude(tail_sizes.conclusions(models, rem, ex, rtol=rtol),
            recommendation=tail_sizes.recommendation(rem, ex, rtol=rtol))
