# %% [markdown]
# # 09 Across hosts: the same backend on different CPUs
#
# The seal of every backend (in place, 13-byte AAD, best of k through the native driver) as
# measured on each machine whose quick run is kept under `data/hosts/<run>/seal.csv`, next to
# this report's own run (notebook 06's rows). Each machine is named by its CPU, family and
# model, LLVM CPU name and run: two VMs that both say "AMD EPYC" stay apart. Runs on different
# days and hosts differ by more than the kernels (clock, neighbours): read ratios, not digits.
#
# `-p keep_host_data=true` adds this run's rows to `data/hosts/` (commit them).

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>-<llvm cpu>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # unused: every backend any machine measured is shown
hosts_dir = None  # data/hosts/ of the checkout by default
keep_host_data = False  # also write this run's rows into data/hosts/<report folder>/

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.report import across_hosts as hs

nb = report.start("09_across_hosts", profile, out_dir, data_dir, backends)
root = hosts_dir or hs.default_root()
kept = hs.load_hosts(root)
current = hs.this_run(nb.paths.data, nb.paths.out.name)
if keep_host_data and len(current):
    display(Markdown(f"Kept this run's rows in `{hs.save_host(nb.paths.out, root)}`."))
df = hs.merged(kept, current)
display(Markdown(f"{kept['run'].nunique() if len(kept) else 0} kept run(s) from `{root}`; "
                 f"this run: {len(current)} rows."))

# %% [markdown]
# ## Seal ns per backend and size, one column per machine (best of k)

# %%
t = nb.table(hs.table(df), "seal_by_machine")
t

# %%
g = hs.plot(df)
nb.figure(g, "seal_by_machine", headline=True, title="seal GB/s per backend, one line per machine")
plt.show()

# %%
nb.conclude(hs.conclusions(df), recommendation=hs.recommendation(df))
