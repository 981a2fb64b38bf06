# %% [markdown]
# # 07 Predict for CPUs not at hand
#
# Each backend's kernels compiled for a named CPU (LLVM's model of it: scheduling and the
# backend's features), then `llvm-mca` (Debian's `llvm-19`) on the steady-state stitched loop,
# the leftover chunk's loop and the key setup's H-power loop: cycles per iteration, per block
# and per byte, the busiest ports and which instructions load them, and the bound. Only the
# backends each CPU has the features for (LLVM's own definition of the CPU, probed with
# `llc`). Then the host's measured rate (the driver, seal in place, 8 -> 16 KiB slope in core
# cycles) beside its prediction, and a per-CPU recommendation table written as data.
# The report batch runs this notebook only when llvm-mca is installed.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # host backends to measure (None: every usable one; tiny: the best)
cpus = None  # LLVM CPU names (None: znver3 znver4 znver5 icelake-server sapphirerapids)

# %%
from IPython.display import Markdown, display

from vgkernels import cpu as vgcpu
from vgkernels import report
from vgkernels.predict import mca, predictor, recommend, validate
from vgkernels.report import prediction as pr

nb = report.start("07_predict", profile, out_dir, data_dir, backends)
why = mca.missing_reason()
if why:
    raise RuntimeError(why)
tool = mca.find()
host_cpu = vgcpu.info().llvm_cpu
targets = pr.cpus(nb.profile, cpus)
display(Markdown(f"llvm-mca **{tool.version}** (`{tool.path}`); CPUs: {', '.join(targets)}; "
                 f"host: `{host_cpu}`; profile **{nb.profile.name}**"))

# %% [markdown]
# ## Predictions: CPUs x backends x variants

# %%
# every case compiles the kernels for one CPU: one process per core (workers=0); quick sweeps
# the variants on the host's CPU only, full on every CPU
swept = pr.sweep_cpus(nb.profile, host_cpu, targets)
df = predictor.table(targets, pr.backends(nb.profile, nb.backends), pr.variants(nb.profile),
                     workers=0, sweep_cpus=swept)
sweeping = pr.variants(nb.profile) == "sweep"
display(Markdown("variants swept on: "
                 + (", ".join(swept or targets) if sweeping else "none (the defaults only)")))
nb.table(df, "predictions")
nb.table(pr.stitch_pivot(df), "stitch_cycles_per_byte", index=True)

# %% [markdown]
# The leftover chunk's loop (u = min(G/W, 4) vectors per iteration), and the keystream and
# GHASH loops on their own (each half's bound without the other):

# %%
pr.stitch_pivot(df, "leftover")

# %%
pr.stitch_pivot(df, "ctr")

# %%
pr.stitch_pivot(df, "ghash")

# %%
g = pr.plot(df)
nb.figure(g, "stitch", headline=True, title="predicted cycles/byte of the stitched loop")

# %% [markdown]
# ## Which variant wins, per CPU and backend

# %%
win = nb.table(pr.winners(df), "winners")
win

# %% [markdown]
# ## Does the model know that AES and the multiplies share pipes?

# %%
pipes = nb.table(pr.shared_pipes(targets), "shared_pipes")
pipes

# %% [markdown]
# ## The host: measured beside predicted (shared machine: the timings are noisy)

# %%
cases = validate.host_cases(nb.backends, sweep=pr.host_sweep(nb.profile))
v = validate.compare(host_cpu, cases, k=nb.profile.k, passes=nb.profile.passes)
nb.table(v, "host_validation")
v

# %%
nb.table(pr.region_ratios(v), "host_ratios")

# %%
fig = pr.plot_host(v)
nb.figure(fig, "host", title=f"measured against predicted on {host_cpu}")

# %% [markdown]
# ## The per-CPU recommendation table (data)

# %%
table = recommend.derive(df, tool.version)
path = nb.file(recommend.write(table, nb.paths.out / recommend.FILENAME))
display(Markdown(f"wrote `{path.name}`"))

# %%
nb.headline(pr.headline(v, win))
nb.conclude(pr.conclusions(v, win, pipes, host_cpu))
