"""The arena-rank side of bench/arena_check.py, run with the Python of its own environment
(bench/requirements-arena.txt; never the app's, which has neither JAX nor NumPy 2.3).

Reads ``{"systems": [...], "rows": [[a, b, y, w, x1, x2], ...]}`` on stdin (``a``, ``b``
indices into ``systems``, ``y`` 1 when ``a`` was chosen, ``w`` the row's weight, ``x`` its style
differences) and writes arena-rank's fits as JSON on stdout: ``bt`` (``BradleyTerry``,
unweighted), ``bt_weighted`` (the same with ``w``), ``cbt_reg0`` (``ContextualBradleyTerry``
with ``reg = 0``) and ``cbt`` (its default ``reg = 1``), each with the ratings in log-odds
(``(rating − 1000) / α``, ``α = 400 / ln 10``), their sandwich variances in log-odds², and the
style coefficients; the Bradley–Terry fits also ``variance_pinv`` (:func:`_pinv_variances`).
Rows are not aggregated, so ``counts`` are 1. The optimiser's tolerances
are :data:`TOLERANCE`, arena-rank's defaults otherwise.
"""

import json
import sys

import jax.numpy as jnp
import numpy as np
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset

# L-BFGS stops at arena-rank's default 1e-9 (mean log-likelihood), which leaves the style fit
# about 1e-6 from the optimum; 1e-12 leaves it well inside the comparison's 1e-6.
TOLERANCE = 1e-12


def _log_odds(model, result):
    ratings = (jnp.asarray(result["ratings"]) - model.init_rating) / model.alpha
    variances = jnp.asarray(result["variances"]) / model.alpha**2
    coeffs = result.get("coeffs")
    return {
        "theta": [float(v) for v in ratings],
        "variance": [float(v) for v in variances],
        "coefficients": [] if coeffs is None else [float(v) for v in coeffs],
    }


def _pinv_variances(model, dataset) -> list[float]:
    """The strengths' sandwich variances from arena-rank's own Hessian and gradient
    covariance without ``hessian_reg``, with the pseudo-inverse: the Hessian is singular along
    a common shift of the strengths, which the centring removes."""
    hessian, gradient_cov = model.compute_hessian_and_covariance(
        model.params["ratings"],
        dataset.pairs,
        dataset.outcomes,
        dataset.counts,
        dataset.opt_weights,
        0.0,
        model.n_competitors,
    )
    inverse = np.linalg.pinv(np.asarray(hessian))
    return [float(v) for v in np.diag(inverse @ np.asarray(gradient_cov) @ inverse)]


def main() -> None:
    data = json.load(sys.stdin)
    systems = data["systems"]
    rows = jnp.asarray(data["rows"], dtype=jnp.float64)
    pairs = rows[:, :2].astype(jnp.int32)
    outcomes, weights, features = rows[:, 2], rows[:, 3], rows[:, 4:]
    out = {}
    for name, w in (("bt", jnp.ones_like(weights)), ("bt_weighted", weights)):
        dataset = PairDataset(systems, pairs, outcomes, jnp.ones_like(w), w, w)
        model = BradleyTerry(len(systems), ftol=TOLERANCE, gtol=TOLERANCE)
        out[name] = _log_odds(model, model.compute_ratings_and_cis(dataset))
        out[name]["variance_pinv"] = _pinv_variances(model, dataset)
    for name, reg in (("cbt_reg0", 0.0), ("cbt", 1.0)):
        dataset = ContextualPairDataset(systems, pairs, outcomes, features, jnp.ones_like(weights))
        model = ContextualBradleyTerry(
            len(systems), features.shape[1], reg=reg, ftol=TOLERANCE, gtol=TOLERANCE
        )
        out[name] = _log_odds(model, model.compute_ratings_and_cis(dataset))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
