"""The answer across datasets (issue 82 item 4): the Bayesian hierarchical model of Corani, Benavoli, Demšar, Mangili
and Zaffalon (*Statistical comparison of classifiers through Bayesian hierarchical modelling*, Machine Learning 106,
2017), sampled with NumPyro's NUTS (a maintained library: docs/PROTOCOL.md says why this one).

For dataset i with J_i splits of k-fold cross-validation, the differences x_ij (a − b test score) are
multivariate normal around the dataset's true difference δ_i, with variance σ_i² and correlation ρ = 1/k between
any two splits (they share training rows: the correlation Nadeau and Bengio's correction assumes); the δ_i are
drawn from a Student t (location δ₀, scale σ₀, ν degrees of freedom) that stands for the population of datasets;
the priors are the paper's: δ₀ uniform on ±max|x|, σ₀ and σ_i uniform up to 1,000 times the spread among and
within datasets, ν − 1 gamma with shape uniform on (0.5, 5) and rate on (0.05, 0.15), all on the data scaled by
its mean within-dataset spread. The likelihood reads each dataset's mean, spread and split count alone (they are
sufficient for the equicorrelated normal), so datasets may have different numbers of splits.

What it gives: for a *new* dataset (δ_new ~ t(ν, δ₀, σ₀)), the probabilities that a is behind (δ_new < −r),
equivalent (|δ_new| ≤ r) or ahead (δ_new > r) for a region of practical equivalence ±r; and for each dataset
the same of its own δ_i, shrunk toward what the others show. Seeded: the same data and seed give the same figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

ROPES = (0.01, 0.005)  # the field's usual region of practical equivalence, and the study's pre-registered margin
SEED = 0
WARMUP, SAMPLES, CHAINS = 1000, 2000, 2
STD_UPPER = 1000.0  # the paper's bound on each spread, in units of the data's
TARGET_ACCEPT = 0.95  # smaller steps than NUTS's 0.8: the paper's centred model has a funnel where σ₀ is small
ALPHA, BETA = (0.5, 5.0), (0.05, 0.15)  # the paper's bounds on the gamma prior of ν − 1


@dataclass(frozen=True)
class Posterior:
    """What the model says, for a pair over datasets: ``new`` maps a rope r to (behind, equivalent, ahead) for a new
    dataset; ``per_dataset`` has one row per dataset (its mean difference, splits, and per rope the shrunk
    probabilities ``behind_<r>``, ``equivalent_<r>``, ``ahead_<r>``)."""

    new: dict[float, tuple[float, float, float]]
    per_dataset: pd.DataFrame
    n_datasets: int
    n_splits: int
    divergences: int = 0
    delta0: tuple[float, float] = field(default=(math.nan, math.nan))  # posterior mean and sd of δ₀


PAD = 16  # a fit's datasets are padded to a multiple of this (masked out of the likelihood): one compiled sampler
# serves every pair and size of about as many datasets


def _model(n, mean, ss, mask, rho, bounds):  # jax arrays, untyped
    """The hierarchical model on sufficient statistics (arrays of one length: splits, mean, sum of squares, and
    the mask of the rows that are datasets, each dataset's ρ; padding rows draw from the prior and add nothing to the likelihood).
    Non-centred (δ_i = δ₀ + σ₀·z_i), the same model, which NUTS samples without the funnel's divergences."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    delta_hi, std0_hi, std_hi = bounds[0], bounds[1], bounds[2]
    q = n.shape[0]
    delta0 = numpyro.sample("delta0", dist.Uniform(-delta_hi, delta_hi))
    std0 = numpyro.sample("std0", dist.Uniform(0.0, std0_hi))
    a = numpyro.sample("gamma_alpha", dist.Uniform(*ALPHA))
    b = numpyro.sample("gamma_beta", dist.Uniform(*BETA))
    nu = 1.0 + numpyro.sample("nu_minus_one", dist.Gamma(a, b))
    with numpyro.plate("datasets", q):
        delta = numpyro.sample("delta", dist.StudentT(nu, delta0, std0))
        sigma = numpyro.sample("sigma", dist.Uniform(0.0, std_hi))
    # x_i ~ N(δ_i·1, σ_i²((1 − ρ)I + ρ11ᵀ)): eigenvalue σ²(1 − ρ + Jρ) along 1, σ²(1 − ρ) across it
    var = sigma**2
    along = var * (1 - rho + n * rho)
    across = var * (1 - rho)
    loglik = -0.5 * (n * jnp.log(2 * jnp.pi) + jnp.log(along) + (n - 1) * jnp.log(across)
                     + n * (mean - delta) ** 2 / along + ss / across)
    numpyro.factor("splits", (loglik * mask).sum())


def fit(per_dataset: pd.DataFrame, folds: int | np.ndarray, ropes: tuple[float, ...] = ROPES, seed: int = SEED,
        draws: tuple[int, int, int] = (WARMUP, SAMPLES, CHAINS)) -> Posterior:
    """The posterior for one pair: ``per_dataset`` has one row per dataset (``dataset``, ``diff``: the mean over its
    splits, ``sd``: their standard deviation, NaN for one split, ``n_splits``); ``folds`` the k of the design."""
    import jax
    from numpyro.infer import MCMC, NUTS
    from scipy import stats

    d = per_dataset.dropna(subset=["diff"]).reset_index(drop=True)
    if len(d) < 2:
        raise ValueError(f"the hierarchical model needs two datasets or more, got {len(d)}")
    n = d.n_splits.to_numpy(dtype=float)
    sd = d.sd.fillna(0.0).to_numpy(dtype=float)
    within = float(np.mean(sd[n >= 2])) if (n >= 2).any() else 0.0
    scale = within if within > 0 else float(np.std(d["diff"])) or 1.0
    mean = d["diff"].to_numpy(dtype=float) / scale
    # floor each spread a little above zero: a dataset whose splits agree to the digit has σ_i → 0, where NUTS cannot
    # step; a thousandth of the data's spread is far below any difference the study reads
    ss = np.maximum(sd / scale, 1e-3) ** 2 * np.maximum(n - 1, 0)
    among = float(np.std(mean)) or 1.0
    bounds = (float(np.max(np.abs(mean))) or 1.0, among * STD_UPPER, max(float(np.mean(sd / scale)), 1e-3) * STD_UPPER)
    q = len(d)
    kept = per_dataset["diff"].notna().to_numpy()
    rho = 1.0 / np.broadcast_to(np.asarray(folds, dtype=float), (len(per_dataset),))[kept]
    pad = -q % PAD
    args = {"n": np.pad(n, (0, pad), constant_values=2.0), "mean": np.pad(mean, (0, pad)),
            "ss": np.pad(ss, (0, pad), constant_values=1.0), "mask": np.pad(np.ones(q), (0, pad)),
            "rho": np.pad(rho, (0, pad), constant_values=0.5)}
    warmup, samples, chains = draws
    mcmc = MCMC(NUTS(_model, target_accept_prob=TARGET_ACCEPT), num_warmup=warmup, num_samples=samples,
                num_chains=chains, chain_method="sequential",
                progress_bar=False, jit_model_args=True)
    mcmc.run(jax.random.PRNGKey(seed), **args, bounds=jax.numpy.asarray(bounds),
             extra_fields=("diverging",))
    post = {k: np.asarray(v, dtype=float) for k, v in mcmc.get_samples().items()}
    post["delta"] = post["delta"][:, :q]
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    nu = 1.0 + post["nu_minus_one"]
    new: dict[float, tuple[float, float, float]] = {}
    out = d[["dataset", "diff", "n_splits"]].copy()
    for r in ropes:
        rs = r / scale
        below = stats.t.cdf(-rs, nu, post["delta0"], post["std0"])
        above = stats.t.sf(rs, nu, post["delta0"], post["std0"])
        new[r] = (float(below.mean()), float(1 - below.mean() - above.mean()), float(above.mean()))
        delta = post["delta"]  # samples × datasets
        out[f"behind_{r:g}"] = (delta < -rs).mean(axis=0)
        out[f"ahead_{r:g}"] = (delta > rs).mean(axis=0)
        out[f"equivalent_{r:g}"] = 1 - out[f"behind_{r:g}"] - out[f"ahead_{r:g}"]
    return Posterior(new, out, len(d), int(n.sum()), divergences,
                     (float(post["delta0"].mean() * scale), float(post["delta0"].std() * scale)))
