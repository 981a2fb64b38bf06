# %% [markdown]
# # 08 Constant time: taint over the optimised IR, the machine code, a timing test
#
# Every kernel set is checked statically (`vgkernels.ct`): a taint analysis over the optimised
# IR that is compiled (secret: key, round keys, H and its powers, text, keystream, GHASH state,
# the tag; public: lengths, pointers, nonce, AAD, the context's header words) reports branches,
# switches, addresses, divisions and calls on secrets; the object code's conditional jumps and
# indexed accesses are traced back and tied to the IR. The check is static, so it covers
# backends this CPU cannot run. Negative controls (an S-box table lookup, an early-exit tag
# compare, a branch on a plaintext byte) go through the same path and must be caught.
#
# Then a dudect-style timing test through the native driver: Welch's t between two input
# classes (seal: zero against random plaintext; open: a tag wrong in byte 0 against byte 15;
# key setup: a fixed against random keys), samples interleaved at random, on each usable
# backend and on the controls.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one); the static check: every one

# %%
import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.backends import BACKENDS, availability
from vgkernels.bench.driver import driver
from vgkernels.ct import timing
from vgkernels.report import constant_time as rct

nb = report.start("08_constant_time", profile, out_dir, data_dir, backends)
static_backends = nb.backends if (nb.profile.tiny or backends) else [b.name for b in BACKENDS]
timed_backends = [b for b in nb.backends if availability()[b] is None]
n_samples = rct.samples(nb.profile)
display(Markdown(f"Profile **{nb.profile.name}**; static check: {', '.join(static_backends)}; "
                 f"timing: {', '.join(timed_backends) or 'none usable'}, {n_samples:,} samples "
                 f"per test{' (a smoke test)' if nb.profile.tiny else ''}"))

# %% [markdown]
# ## Static check per backend

# %%
static, ctl_report = rct.static_table(static_backends, nb.profile)
nb.table(static, "static")
static

# %% [markdown]
# ## The negative controls' findings

# %%
nb.table(rct.findings_table(ctl_report), "control_findings")

# %% [markdown]
# ## Timing: Welch's t, fixed against random

# %%
results = timing.run(n_samples, backends=timed_backends, drv=driver())
tt = nb.table(rct.timing_table(results), "timing")
tt

# %%
plot = rct.abs_t_for_plot(tt)
ax = sns.barplot(data=plot, x="abs_t_plot", y="test", hue="impl", dodge=False)
ax.set_xscale("log")
ax.axvline(timing.THRESHOLD, color="crimson", ls="--", lw=1)
ax.set_xlabel(f"|t| (log; dashed: {timing.THRESHOLD})")
ax.set_ylabel("")
ax.set_title(f"Welch's t, {n_samples:,} samples per test"
             + (" (tiny: smoke test)" if nb.profile.tiny else ""))
nb.figure(ax, "abs_t", title="|t| per backend and operation")
plt.show()

# %%
kern = tt[tt["impl"] == "kernel"]
nb.headline({"static_errors": int(static["errors"][static["name"] != "controls"].sum()),
             "known_j0": int(static["known"].sum()),
             "max_abs_t_kernels": float(kern["abs_t"].max()) if len(kern) else None,
             "samples": n_samples})
nb.conclude(rct.conclusions(static, tt, nb.profile),
            recommendation=rct.recommendation(static, tt, nb.profile))
