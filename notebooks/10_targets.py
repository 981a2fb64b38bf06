# %% [markdown]
# # 10 Targets: issue 12 on this host
#
# Every target of issue 12, measured in one run by the native driver: in-place seal against
# the instruction-mix bound (a generated loop of exactly the AES and carry-less-multiply
# instructions the backend's stitched loop for long messages issues, counted in its
# assembly), the sawtooth and remainder costs, the 16-byte seal against its serial floor
# (back to back, as the check, and one call at a time for context: calls back to back
# overlap in the core), placement and "nonce just written", gather and two-slice against
# copy + seal, open against seal, and the peers at the same instruction-set level. Minimum of
# the samples; on a shared machine the slow side of a comparison is inflated, so a failure
# near its limit needs a second run.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>-<llvm cpu>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # default: aesni_pclmul_avx, vaes_avx2, vaes_avx512 (the usable ones; records
# also aesni_pclmul)

# %%
import matplotlib.pyplot as plt

from vgkernels import report
from vgkernels.analysis import targets as at
from vgkernels.report import targets as tg

nb = report.start("10_targets", profile, out_dir, data_dir, backends, only=tg.only(backends))
raw = tg.measure(nb.profile, nb.backends if backends else None)
tab = at.table(raw)

# %% [markdown]
# ## The targets table (measured, bound or reference, ratio, limit, holds)

# %%
nb.table(tab, "targets")

# %%
nb.table(at.summary(tab), "targets_summary")

# %% [markdown]
# ## Placement: seal_out time by output offset from the input (x fastest)

# %%
fig = tg.heat_plot(raw)
nb.figure(fig, "placement_heat", headline=True, title="seal_out by output page offset")
plt.show()

# %% [markdown]
# ## A nonce just written: 16 B seal ns after an 8-byte or 4-byte store into the nonce

# %%
nb.table(tg.nonce_table(raw), "nonce_store")

# %% [markdown]
# ## `vaesenc` issue rate per core cycle, by width and independent chains

# %%
nb.table(at.aes_rate(raw), "aes_rate")

# %% [markdown]
# ## Target 1: the bulk loop's hot path replayed on its own
#
# The loop long messages run in, taken from the backend's assembly and run by itself
# (`vgkernels.bench.replay`): as is (`loop`), its AES rounds and multiplies alone (`core`),
# and, where the host has AVX-512 and the loop leaves vector registers 16-31 unused, with all
# (`free`) or 3/4, 2/4, 1/4 (`rest3` .. `rest1`) of its other vector instructions on
# registers of their own, so that nothing chains through them, or with only those that
# compute (`alu`: XORs, shuffles, adds) or only its loads, stores and register moves
# (`moves`), or whole with only the chains through one of those classes cut (`cut_alu`,
# `cut_moves`: which chains the loop waits for). `vs_core` is each part's time over
# `core`'s; `others_at_limit` is how many other vector instructions the loop could have
# before the curve from `core` through `rest1` .. `free` crosses target 1's limit.

# %%
replayed = at.loop_replay(raw)
nb.table(replayed, "loop_replay")
nb.table(at.loop_budget(replayed), "loop_budget")

# %%
nb.conclude(tg.conclusions(tab, raw), recommendation=tg.recommendation(tab))
