# %% [markdown]
# # 02 Block counts: the stitched loop's tail, split against full
#
# Every block count 1..72 (16..1152 bytes; the background thread's 384, 640, 1024 and 1088
# among them) per backend, with `tail=split` (the stitched loop covers whole groups; the rest goes
# through separate ctr32 + ghash calls) against `tail=full` (the stitched loop takes the
# leftover blocks too), measured as alternating runs A, B, A, B. In place (`seal`) and out of
# place from two pieces (`gather` of n + 1 bytes: the TLS record shape), against OpenSSL
# masked to the same CPU features (`openssl`, and `openssl_copy`: copy the pieces, then seal
# in place). Cells are best-of-k in ns.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one)
peers = True  # OpenSSL masked per backend (one worker process per backend)

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.report import block_counts

nb = report.start("02_block_counts", profile, out_dir, data_dir, backends)
display(Markdown(f"Profile **{nb.profile.name}** (k = {nb.profile.k}, {nb.profile.passes} "
                 f"passes, {nb.profile.runs} A/B pairs); backends: {', '.join(nb.backends)}"))

# %%
res = nb.sweep("blocks", sizes=block_counts.sizes(nb.profile), ab=("tail=split", "tail=full"),
               runs=nb.profile.runs, peers=peers)
df = res.df
display(Markdown(f"{len(df)} rows; driver overhead {res.overhead_ns:.1f} ns per call "
                 "(not subtracted)."))

# %% [markdown]
# ## Seal time at 384, 640, 1024 and 1088 B: tail=split runs → tail=full runs (ns)
#
# Each cell is "split runs → full runs" (best of k of each run, in run order), in place and
# from two pieces (n + 1 bytes); OpenSSL's cells are the range of its runs; the last column is
# the in-place change from the best split run to the best full run.

# %%
for be in nb.backends:
    t = block_counts.thread_table(df, be)
    if len(t):
        nb.table(t, f"thread_table-{be}")
        display(Markdown(f"**{be}**"), t.set_index("bytes"))

# %%
for be in nb.backends:
    nb.table(block_counts.thread_table(df, be, sizes=None), f"all_sizes-{be}")

# %% [markdown]
# ## Seal time against block count: steps at group boundaries and the per-block slope

# %%
g = block_counts.plot_steps(df)
nb.figure(g, "steps", headline=True, title="seal time against block count, split vs full")
plt.show()

# %%
g = block_counts.plot_increments(df)
nb.figure(g, "increments", title="marginal cost of one more block")
plt.show()

# %%
slope_df = nb.table(block_counts.slopes(df), "slopes")
slope_df

# %%
nb.headline(block_counts.headline(df))
nb.conclude(block_counts.conclusions(df, slope_df), recommendation=block_counts.recommendation(df))
