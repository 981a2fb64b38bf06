# %% [markdown]
# # 05 Two-slice path: two-slice first against copy first
#
# A TLS record is sealed from two pieces: the payload (n bytes) and the content-type byte.
# Backends whose table row has `two_slice` export an entry (`seal_two_slice`) that takes
# that shape directly. This compares the two-slice path (`two_slice`), copying the pieces and
# sealing in place (`copy_ip`, "copy first") and the general gather (`gather`), for
# n = 16..3000 around every n % 16, n % 16 == 15 included (there the byte completes the last
# block); the short records (up to 128 bytes with the byte) take the short path.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend with a two-slice path

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.backends import availability
from vgkernels.report import two_slice

nb = report.start("05_two_slice", profile, out_dir, data_dir, backends,
                     only=two_slice.has_two_slice)
chosen = report.choose_backends(backends, nb.profile)
eligible = [b for b in nb.backends if availability()[b] is None]
display(Markdown(f"Profile **{nb.profile.name}**; backends with a two-slice path measured "
                 f"here: {', '.join(eligible) or 'none'}"))

# %%
if eligible:
    res = nb.sweep("two_slice", backends=eligible, sizes=two_slice.sizes(nb.profile))
    df = res.df
else:
    df = pd.DataFrame()

# %% [markdown]
# ## Two-slice first against copy first per n: times (ns, best of k) and their ratio

# %%
tab = two_slice.table(df)
for be in eligible:
    t = tab[tab["backend"] == be].drop(columns="backend") if len(tab) else tab
    nb.table(t, f"thread_table-{be}")
    display(Markdown(f"**{be}**"), t.set_index("n") if len(t) else t)

# %%
fig = two_slice.plot(tab)
nb.figure(fig, "ratio", headline=bool(eligible), title="copy first / two-slice first")
plt.show()

# %%
nb.headline(two_slice.headline(tab))
nb.conclude(two_slice.conclusions(tab, chosen, eligible),
            recommendation=two_slice.recommendation(tab, eligible))
