# %% [markdown]
# # 06 Peers and roofline
#
# Throughput (GB/s = bytes / ns, best of k) of every backend's seal against its peers, each
# masked to the same CPU features (`OPENSSL_ia32cap`, one worker process per backend, the
# effective capability vector read back): the system's OpenSSL (Debian's 3.0 has no VAES
# code: under the VAES masks it runs its AES-NI + AVX path), the OpenSSL 4 that the
# `cryptography` wheel bundles (VAES/AVX-512 GCM), aws-lc from the `awscrt` wheel (the
# `peers` extra; VAES/AVX-512 and AES-NI + AVX GCM) and any EVP_AEAD library given with
# `vgkernels report --peer NAME=PATH`, all called natively; and `cryptography`'s AESGCM,
# whose time includes the Python call.  "vs best peer" is the fastest of them at the
# backend's level in this run, named.  Then each backend's share of its CTR-only roofline:
# the `roofline` sweep times `ctr32` (AES keystream alone), `ghash`, `encrypt_blocks`
# (stitched CTR + GHASH) and `seal`.

# %% tags=["parameters"]
profile = "quick"  # tiny | quick | full
out_dir = None  # report directory (default reports/<date>-<host>/)
data_dir = None  # sweep data (default <out_dir>/data)
backends = None  # None: every usable backend (tiny: the best one)
peers = True  # OpenSSL, aws-lc, --peer libraries (masked per backend), cryptography

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from vgkernels import report
from vgkernels.bench import apicost
from vgkernels.report import peers_roofline as pr

nb = report.start("06_peers_roofline", profile, out_dir, data_dir, backends)
display(Markdown(f"Profile **{nb.profile.name}** (k = {nb.profile.k}, {nb.profile.passes} "
                 f"passes); backends: {', '.join(nb.backends)}"))

# %%
res = nb.sweep("peers", sizes=pr.sizes(nb.profile), peers=peers)
df = res.df
masks = res.meta.get("masks") or {}
if masks:
    display(Markdown("Peer masks: " + "; ".join(f"`{be}`: `OPENSSL_ia32cap={m}`"
                                                for be, m in masks.items())))
display(pr.peer_paths(df))

# %% [markdown]
# ## Seal throughput against the peers (GB/s per size)

# %%
g = pr.plot_throughput(df)
nb.figure(g, "throughput", headline=True, title="GB/s against bytes, per backend vs its peers")
plt.show()

# %%
fig = pr.plot_all(df)
nb.figure(fig, "throughput_all", title="seal GB/s of every backend")
plt.show()

# %% [markdown]
# ## vgkernels against each peer per size (ns, best of k; ratios: the peer's time over ours)

# %%
cmp = nb.table(pr.compare_table(df), "compare")
cmp

# %% [markdown]
# ## Roofline: seal against the CTR-only keystream rate

# %%
roof = nb.sweep("roofline", sizes=pr.roofline_sizes(nb.profile))
rt = nb.table(pr.roofline_table(roof.df), "roofline")
rt

# %%
fig = pr.plot_roofline(rt)
nb.figure(fig, "roofline", headline=True, title="share of the CTR-only roofline")
plt.show()

# %% [markdown]
# ## The Python API's call cost against cryptography's AESGCM
#
# `AesGcm.encrypt` / `decrypt` / two pieces / a streaming update, timed as Python calls in
# interleaved batches next to `cryptography`'s AESGCM (the stream against our own one-shot).
# The kernel's time is inside every figure; at 16 B the difference is the binding.

# %%
api = pd.concat([apicost.measure(pr.api_sizes(nb.profile), be, k=nb.profile.k)
                 for be in nb.backends], ignore_index=True)
nb.table(api, "api_cost_rows")
api_t = nb.table(pd.concat([apicost.table(g).assign(backend=be)
                            for be, g in api.groupby("backend", sort=False)]), "api_cost")
api_t

# %%
head = pr.headline(df, rt)
for be, h in apicost.headline(api).items():
    head["backends"].setdefault(be, {}).update(h)
nb.headline(head)
nb.conclude(pr.conclusions(df, rt), recommendation=pr.recommendation(df))
