# %% [markdown]
# # 01 Inventory: CPU, backends, kernels, compile times, correctness
#
# What this machine offers vgkernels: the CPU's features, which backends are usable (and why
# the others are not), the kernel sets built for each usable backend (the default
# `tail=full` and `tail=split`; the full profile adds every group size), how large they are
# (generated IR lines, assembly instructions and machine-code bytes per function), how long
# they take to compile cold (the quick profile times each backend's default set) and to load
# from the disk cache, and a quick self-check against the reference model and `cryptography`.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one)

# %%
import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import Markdown, display

from vgkernels import cpu, report
from vgkernels.backends import availability
from vgkernels.report import inventory as inv

nb = report.start("01_inventory", profile, out_dir, data_dir, backends)
usable_here = [b for b in nb.backends if availability()[b] is None]
display(Markdown(f"Profile **{nb.profile.name}**; backends: {', '.join(nb.backends)}; "
                 f"writing to `{nb.paths.out}`"))

# %% [markdown]
# ## CPU and features

# %%
info = cpu.info()
display(Markdown(f"**{info.model}** — LLVM CPU `{info.llvm_cpu}`"))
nb.table(inv.cpu_table(), "cpu_features")

# %% [markdown]
# ## Backends

# %%
backend_df = nb.table(inv.backend_table(), "backends")
backend_df

# %% [markdown]
# ## Kernel sets built, and their size (IR lines, instructions, machine-code bytes)

# %%
# each set built and listed in a worker process, one per core
per_set, per_fn = inv.kernel_sizes_of((b, v) for b in usable_here
                                      for v in inv.variants(b, nb.profile))
nb.table(per_set, "kernel_sets")
nb.table(per_fn, "kernel_functions")
per_set

# %% [markdown]
# ## Machine-code bytes of each exported function, per backend and variant

# %%
exported = per_fn[per_fn["exported"]]
nb.table(exported.pivot_table(index="function", columns=["backend", "variant"],
                              values="obj_bytes", aggfunc="first"),
         "exported_bytes", index=True)

# %%
if len(exported):
    g = sns.catplot(data=exported.assign(obj_bytes=exported["obj_bytes"].astype(float)),
                    x="obj_bytes", y="function", hue="backend", col="tail", kind="bar",
                    height=5, aspect=1.0)
    g.set_axis_labels("machine code (bytes)", "")
    g.figure.suptitle("Exported functions: machine-code bytes per backend and tail", y=1.03)
    nb.figure(g, "function_bytes", title="machine-code bytes per exported function")
    plt.show()

# %% [markdown]
# ## Compile times (cold: no cache; warm: from the disk cache)

# %%
times = nb.table(inv.compile_table(usable_here, nb.profile), "compile_times")
times

# %%
fig = inv.plot_compile_times(times)
nb.figure(fig, "compile_times", title="compile times (cold, s) and warm loads (ms)")
plt.show()

# %% [markdown]
# ## Self-check against the reference model and cryptography

# %%
check = nb.table(inv.selfcheck_table(nb.backends, nb.profile.selfcheck_cases), "selfcheck")
check

# %%
nb.headline({"cpu_model": info.model, "llvm_cpu": info.llvm_cpu,
             "usable": [b for b, why in availability().items() if why is None],
             "selfcheck_ok": bool(check["ok"].dropna().astype(bool).all()) if len(check)
             else None})
nb.conclude(inv.conclusions(info, backend_df, per_set, per_fn, times, check),
            recommendation=inv.recommendation(backend_df, check))
