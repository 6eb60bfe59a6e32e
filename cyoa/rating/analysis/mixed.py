"""Source means and their differences from a linear mixed model with crossed random effects
for story and rater: the headline intervals of a rating study's scores.

A rating is y = μ_source + a_story + b_rater + c_rater×source + e, with a_story ~
N(0, σ²_story), b_rater ~ N(0, σ²_rater), c_rater×source ~ N(0, σ²_rater×source) (one per
rater and source: how much raters differ in which source they prefer; lme4's
``(1 | rater) + (1 | rater:source)``) and e ~ N(0, σ²_residual), all independent. The
rater × source component is left out where it cannot be told from the rater (each rater rated
one source) or from the residual (no rater rated two stories of one source); the method says
so (Baayen, Davidson & Bates 2008; Barr, Levy, Scheepers & Tily 2013); the sources are fixed
effects (one mean each). The stories of a source are a sample of what it writes and the raters
a sample of people, so a source's mean is uncertain through both: Var(source mean) is, in a
balanced design where every rater rates every story, σ²_story/n_stories + (σ²_rater +
σ²_rater×source)/n_raters + σ²_residual/(n_stories · n_raters) (Cornfield & Tukey 1956). A
t interval over story means leaves out the raters' share: with four raters it covered the
true mean about half the time.

- **Fit**: restricted maximum likelihood (REML; Patterson & Thompson 1971), the variances
  profiled as in lme4 (Bates et al. 2015): the story block of the random effects' equations is
  diagonal, so each evaluation solves one raters × raters system and any number of stories
  costs little. ``statsmodels``' ``MixedLM`` gives the same estimates (a test checks it) but
  takes minutes at a thousand stories, as it handles crossed effects as one dense group.
- **Intervals and tests**: estimate ± t(df) · SE, where SE² = c'(X'V⁻¹X)⁻¹c at the REML
  variances and df is Satterthwaite's (1946) approximation, df = 2·SE⁴ / (g'Ag) with g the
  gradient of SE² in the three variances and A their asymptotic covariance (the inverse of
  REML's expected information, ½ tr(P V_k P V_l)); Giesbrecht & Burns (1985), as lmerTest
  does (Kuznetsova et al. 2017). It holds for unbalanced data; in a balanced design it is the
  Welch–Satterthwaite df of the mean squares. With few raters df is small and the interval
  wide, as it should be: a simulation check (bench/rating_coverage.py) gives 93–97% coverage.
- **Variance components** and their shares of the total, ICC(story) and ICC(rater)
  (Shrout & Fleiss 1979); each rater's predicted offset (BLUP, Henderson 1975), their
  severity: positive for a rater who rates higher than the model predicts.
- **Fallback**: where the model cannot be fitted (fewer than :data:`MIN_RATERS` raters or
  :data:`MIN_STORIES` stories in a source, no story rated twice, every rating the same, no
  residual variance, no convergence), a cluster
  bootstrap over stories (within their source) and raters, each resampled with replacement
  (Davison & Hinkley 1997, §3.8; Owen 2007), percentile intervals, labelled as such.
- **Raters of unknown identity** (imported files whose rater ids are positions, "the first
  rater of this story"): no rater effect, since rater "1" of two stories need not be one
  person; their differences stay in the residual.

References:
    Cornfield, J. and Tukey, J. W. (1956). Average values of mean squares in factorials.
    Annals of Mathematical Statistics 27(4).
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance
    components. Biometrics Bulletin 2(6).
    Patterson, H. D. and Thompson, R. (1971). Recovery of inter-block information when block
    sizes are unequal. Biometrika 58(3).
    Henderson, C. R. (1975). Best linear unbiased estimation and prediction under a selection
    model. Biometrics 31(2).
    Giesbrecht, F. G. and Burns, J. C. (1985). Two-stage analysis based on a mixed model:
    large-sample asymptotic theory and small-sample simulation results. Biometrics 41(2).
    Shrout, P. E. and Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin 86(2).
    Bates, D., Mächler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects
    models using lme4. Journal of Statistical Software 67(1).
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests
    in linear mixed effects models. Journal of Statistical Software 82(13).
    Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application, §3.8.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2).
    Holm, S. (1979).
    Baayen, R. H., Davidson, D. J. and Bates, D. M. (2008). Mixed-effects modeling with crossed
    random effects for subjects and items. Journal of Memory and Language 59(4).
    Barr, D. J., Levy, R., Scheepers, C. and Tily, H. J. (2013). Random effects structure for
    confirmatory hypothesis testing: keep it maximal. Journal of Memory and Language 68(3).
    Westfall, J., Kenny, D. A. and Judd, C. M. (2014). Statistical power and optimal design in
    experiments in which samples of participants respond to samples of stimuli. Journal of
    Experimental Psychology: General 143(5).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from cyoa.stats import holm

if TYPE_CHECKING:
    from scipy import sparse

CONFIDENCE = 0.95
# The fewest raters (of known identity) whose variance the model estimates: with two, the
# rater variance rests on one degree of freedom and the interval on almost nothing.
MIN_RATERS = 3
# The fewest stories per source for the model; with one, story and source are the same thing.
MIN_STORIES = 2
BOOTSTRAP_REPLICATES = 1000


@dataclass(frozen=True)
class SourceMean:
    """A source's mean with its interval: ``se`` its standard error, ``df`` the t interval's
    degrees of freedom (``None`` for a bootstrap interval); ``clipped``: an end reached past
    the scale and was cut at its bound."""

    source: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    se: float | None
    df: float | None
    clipped: bool = False


@dataclass(frozen=True)
class SourceDifference:
    """``first`` − ``second`` with its interval and two-sided p (``p_holm``: Holm-adjusted
    across the pairs); the bootstrap gives no p."""

    first: str
    second: str
    difference: float
    ci_low: float | None
    ci_high: float | None
    se: float | None
    df: float | None
    p_value: float | None
    p_holm: float | None = None


@dataclass(frozen=True)
class VarianceComponents:
    """The model's variances (squared units of the score) and their shares of the total:
    ``icc_story`` = σ²_story / (σ²_story + σ²_rater + σ²_rater×source + σ²_residual),
    ``icc_rater`` and ``icc_rater_source`` likewise (``None`` without that effect).
    ``rater_source``: the rater × source component, how much raters differ in how they rate
    one source against another."""

    story: float
    rater: float | None
    residual: float
    icc_story: float
    icc_rater: float | None
    rater_source: float | None = None
    icc_rater_source: float | None = None


@dataclass(frozen=True)
class ModelEstimate:
    """Source means and pairwise differences of one score (``what``), from the mixed model or
    the bootstrap (``method`` says which, ``note`` why the bootstrap), with how many stories,
    raters and ratings they rest on; ``replicates`` and ``dropped`` (replicates without a
    story in some source) for the bootstrap; ``rater_offsets``: each rater's BLUP."""

    what: str
    method: str
    means: tuple[SourceMean, ...]
    differences: tuple[SourceDifference, ...]
    components: VarianceComponents | None
    stories: int
    raters: int | None
    observations: int
    replicates: int | None = None
    dropped: int = 0
    note: str | None = None
    rater_offsets: dict[str, float] | None = None


class ModelNotFitted(ValueError):
    """The mixed model cannot be fitted to these ratings; the message says why."""


# Why the rater × source component is left out of a fit, by what it cannot be told from.
NESTED_RATERS = "each rater rated one source, so it cannot be told from the rater's"
SINGLE_RATINGS = "no rater rated two stories of one source, so it cannot be told from the residual"


@dataclass(frozen=True)
class _Design:
    """Cell-means fixed effects ``x`` (one column per source), the random effects' indicator
    ``z`` (stories, then raters, then rater × source cells when the model has them), and the
    counts the block solver needs; ``cells``: how many rater × source cells (0 when the
    component is left out, ``cells_absent`` saying why; None when there are no raters)."""

    sources: tuple[str, ...]
    raters: tuple[str, ...]
    cells: int
    cells_absent: str | None
    x: np.ndarray
    y: np.ndarray
    z: sparse.csr_matrix
    stories: int
    story_counts: np.ndarray
    others_gram: np.ndarray  # Z_o'Z_o of the raters' and cells' columns
    crossed: sparse.csr_matrix  # stories × (raters, cells): ratings of each story in each
    # (n, crossed'crossed over the stories rated n times) for each n: the story block's
    # elimination at any λ_story without touching the stories
    story_grams: tuple[tuple[float, np.ndarray], ...]
    zt_xy: np.ndarray  # Z'[X y], which the deviance uses at every λ
    xy_xy: np.ndarray  # [X y]'[X y]


def rater_source_absent(frame: pd.DataFrame) -> str | None:
    """Why a rater × source component cannot be estimated from ``frame`` (``source``,
    ``rater_id``), or None when it can. It needs a rater who rated two sources (otherwise a
    rater's cell is the rater) and a cell with two ratings (otherwise a cell's effect is that
    rating's residual)."""
    if not (frame.groupby("rater_id")["source"].nunique() > 1).any():
        return NESTED_RATERS
    if frame.groupby(["rater_id", "source"]).size().max() < 2:
        return SINGLE_RATINGS
    return None


def _story_grams(
    crossed: sparse.csr_matrix, counts: np.ndarray
) -> tuple[tuple[float, np.ndarray], ...]:
    grams = []
    for count in np.unique(counts):
        rows = crossed[np.flatnonzero(counts == count)]
        grams.append((float(count), (rows.T @ rows).toarray()))
    return tuple(grams)


def _design(frame: pd.DataFrame, with_raters: bool) -> _Design:
    from scipy import sparse

    sources = tuple(sorted(frame["source"].unique()))
    x = (frame["source"].to_numpy()[:, None] == np.array(sources)[None, :]).astype(float)
    story_codes, story_ids = pd.factorize(frame["story_id"])
    n, stories = len(frame), len(story_ids)
    absent = rater_source_absent(frame) if with_raters else None
    others: list[np.ndarray] = []
    rater_ids: list = []
    if with_raters:
        rater_codes, rater_ids = pd.factorize(frame["rater_id"])
        others.append(rater_codes)
    if with_raters and absent is None:
        others.append(frame.groupby(["rater_id", "source"], sort=False).ngroup().to_numpy())
    widths = [int(codes.max()) + 1 for codes in others]
    offsets = np.cumsum([0, *widths])
    columns = [story_codes] + [stories + offsets[i] + codes for i, codes in enumerate(others)]
    z = sparse.csr_matrix(
        (np.ones(n * len(columns)), (np.tile(np.arange(n), len(columns)), np.concatenate(columns))),
        shape=(n, stories + int(offsets[-1])),
    )
    z_others = z[:, stories:]
    crossed = (z[:, :stories].T @ z_others).tocsr()
    xy = np.column_stack([x, frame["score"].to_numpy(dtype=float)])
    return _Design(
        sources=sources,
        raters=tuple(str(r) for r in rater_ids),
        cells=widths[1] if len(widths) > 1 else 0,
        cells_absent=absent,
        x=x,
        y=frame["score"].to_numpy(dtype=float),
        z=z,
        stories=stories,
        story_counts=np.bincount(story_codes, minlength=stories).astype(float),
        others_gram=(z_others.T @ z_others).toarray(),
        crossed=crossed,
        story_grams=_story_grams(crossed, np.bincount(story_codes, minlength=stories)),
        zt_xy=np.asarray(z.T @ xy),
        xy_xy=xy.T @ xy,
    )


class _Blocks:
    """A = ΛZ'ZΛ + I for Λ = diag(λ_story, λ_rater, λ_cell) (relative standard deviations),
    solved by eliminating its diagonal story block: only the (raters + cells) system is
    factored."""

    def __init__(self, design: _Design, lam: np.ndarray) -> None:
        from scipy.linalg import cho_factor

        self.design = design
        sizes = [piece.stop - piece.start for piece in _pieces(design)]
        self.lam = np.concatenate(
            [np.full(size, value) for size, value in zip(sizes, lam, strict=True)]
        )
        others = self.lam[design.stories :]
        self.a = lam[0] ** 2 * design.story_counts + 1.0
        # B = λ_story · crossed · Λ_o, applied through the sparse ``crossed`` (a story meets
        # only its own raters and cells) and never formed.
        self.others = others
        # B'diag(1/a)B = Λ_o (Σ_n λ²_story G_n / (λ²_story n + 1)) Λ_o, G_n over the stories
        # rated n times: a few dense sums per λ, cheaper than the sparse product.
        schur = design.others_gram.copy()
        for count, gram in design.story_grams:
            schur -= (lam[0] ** 2 / (lam[0] ** 2 * count + 1.0)) * gram
        schur *= others[:, None]
        schur *= others[None, :]
        schur[np.diag_indices_from(schur)] += 1.0
        self.log_det = float(np.log(self.a).sum())
        self.factor = None
        if len(design.raters):
            self.factor = cho_factor(schur, check_finite=False)
            self.log_det += 2.0 * float(np.log(np.diag(self.factor[0])).sum())

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """A⁻¹ rhs for a (stories + raters) × m right-hand side."""
        from scipy.linalg import cho_solve

        s = self.design.stories
        top, bottom = rhs[:s], rhs[s:]
        if self.factor is None:
            return top / self.a[:, None]
        scale = self.lam[0]
        crossed = self.design.crossed
        to_others = scale * self.others[:, None] * (crossed.T @ (top / self.a[:, None]))
        x_r = cho_solve(self.factor, bottom - to_others, check_finite=False)
        to_stories = scale * (crossed @ (self.others[:, None] * x_r))
        return np.vstack([(top - to_stories) / self.a[:, None], x_r])

    def h_inverse(self, m: np.ndarray) -> np.ndarray:
        """H⁻¹ m, where V = σ² H = σ²(I + ZΛΛZ'), by Woodbury: m − ZΛA⁻¹ΛZ'm."""
        z = self.design.z
        inner = self.lam[:, None] * (z.T @ m)
        return m - z @ (self.lam[:, None] * self.solve(inner))


def _profiled(design: _Design, lam: np.ndarray) -> tuple[float, np.ndarray, float, _Blocks]:
    """REML deviance (−2 log-likelihood up to a constant, σ² profiled out), β̂ and σ̂²."""
    blocks = _Blocks(design, lam)
    u = blocks.lam[:, None] * design.zt_xy
    cross = design.xy_xy - u.T @ blocks.solve(u)
    p = design.x.shape[1]
    xtx, xty, yty = cross[:p, :p], cross[:p, p], cross[p, p]
    beta = np.linalg.solve(xtx, xty)
    dof = design.y.size - p
    sigma2 = max(float(yty - xty @ beta), 1e-300) / dof
    sign, log_det_x = np.linalg.slogdet(xtx)
    deviance = blocks.log_det + log_det_x + dof * (1.0 + math.log(2.0 * math.pi * sigma2))
    return float(deviance), beta, sigma2, blocks


def _fit(design: _Design) -> tuple[np.ndarray, np.ndarray, float, _Blocks]:
    """REML fit: the relative standard deviations λ (lme4's parameterisation; the deviance
    depends on |λ| only, so the search is unconstrained and |λ| kept) minimising the profiled
    deviance by Nelder–Mead, as lme4 does, with β̂ and σ̂² at them."""
    from scipy import optimize

    parameters = len(_pieces(design))
    result = optimize.minimize(
        lambda lam: _profiled(design, np.abs(lam))[0],
        x0=np.ones(parameters),
        method="Nelder-Mead",
        options={"xatol": 1e-5, "fatol": 1e-8, "maxiter": 2000},
    )
    if not result.success or not np.all(np.isfinite(result.x)):
        raise ModelNotFitted("the model's fit did not converge")
    lam = np.abs(np.asarray(result.x, dtype=float))
    _, beta, sigma2, blocks = _profiled(design, lam)
    return lam, beta, sigma2, blocks


@dataclass(frozen=True)
class _Fitted:
    design: _Design
    beta: np.ndarray
    theta: np.ndarray  # σ²_story, (σ²_rater, (σ²_rater×source,)) σ²_residual
    cov_h: np.ndarray  # (X'H⁻¹X)⁻¹
    zhx: np.ndarray  # Z'H⁻¹X
    hx: np.ndarray  # H⁻¹X
    covariance: np.ndarray  # asymptotic covariance of theta
    offsets: np.ndarray  # BLUPs of the random effects (stories, raters, cells)


def _pieces(design: _Design) -> list[slice]:
    """The random effects' blocks of Z: stories, then raters and cells where present."""
    edges = np.cumsum([0, design.stories, len(design.raters), design.cells])
    return [slice(int(edges[i]), int(edges[i + 1])) for i in range(3) if edges[i + 1] > edges[i]]


def _information(design: _Design, blocks: _Blocks, theta: np.ndarray, cov_h, zhx) -> np.ndarray:
    """REML's expected information of (σ²_k..., σ²_residual): ½ tr(P V_k P V_l), V_k = Z_kZ_k',
    from the q × q matrix Z'PZ; the residual's terms use PVP = P (so tr(P²) needs no n × n
    matrix)."""
    ztz = (design.z.T @ design.z).tocsr()
    inner = blocks.lam[:, None] * blocks.solve(blocks.lam[:, None] * ztz.toarray())
    zhz = ztz.toarray() - ztz @ inner
    sigma2 = theta[-1]
    zpz = (zhz - zhx @ cov_h @ zhx.T) / sigma2
    pieces = _pieces(design)
    k = len(pieces)
    cross = [[float(np.sum(zpz[a, b] ** 2)) for b in pieces] for a in pieces]
    traces = [float(np.trace(zpz[a, a])) for a in pieces]
    squared = [
        (traces[i] - sum(theta[j] * cross[i][j] for j in range(k))) / sigma2 for i in range(k)
    ]
    dof = design.y.size - design.x.shape[1]
    trace_p = (dof - sum(theta[j] * traces[j] for j in range(k))) / sigma2
    trace_pp = (trace_p - sum(theta[j] * squared[j] for j in range(k))) / sigma2
    info = np.empty((k + 1, k + 1))
    for i, j in itertools.product(range(k), range(k)):
        info[i, j] = 0.5 * cross[i][j]
    for i in range(k):
        info[i, k] = info[k, i] = 0.5 * squared[i]
    info[k, k] = 0.5 * trace_pp
    return info


def _additive_residual(design: _Design) -> float:
    """The residual sum of squares of the scores on the story, rater (and rater × source)
    effects as fixed effects (least squares, solved for the others through the Schur
    complement of the diagonal story block; the sources lie within the stories). Zero when
    every rating is its story's level plus its rater's offsets: REML's residual variance then
    goes to 0, and its search would chase it to the iteration limit, so the model is refused
    before the search."""
    from scipy import sparse

    s, crossed = design.stories, design.crossed
    rhs = design.zt_xy[:, -1]
    story_means = rhs[:s] / design.story_counts
    schur = (
        design.others_gram
        - (crossed.T @ sparse.diags(1.0 / design.story_counts) @ crossed).toarray()
    )
    offsets = np.linalg.lstsq(schur, rhs[s:] - crossed.T @ story_means, rcond=None)[0]
    levels = np.concatenate([story_means - crossed @ offsets / design.story_counts, offsets])
    return float(np.sum((design.y - design.z @ levels) ** 2))


def fit_model(frame: pd.DataFrame, raters_known: bool = True) -> _Fitted:
    """The crossed model fitted to ``frame`` (``story_id``, ``source``, ``rater_id``,
    ``score``; no NaN); :class:`ModelNotFitted` with the reason when it cannot be."""
    _check_fittable(frame, raters_known)
    design = _design(frame, raters_known)
    spread = float(np.var(design.y))
    if spread == 0:
        raise ModelNotFitted("every rating is the same")
    if _additive_residual(design) <= 1e-20 * spread * design.y.size:
        raise ModelNotFitted("the ratings leave the model no residual variance")
    lam, beta, sigma2, blocks = _fit(design)
    if sigma2 < 1e-10 * spread:
        raise ModelNotFitted("the ratings leave the model no residual variance")
    theta = np.concatenate([sigma2 * lam**2, [sigma2]])
    hx = blocks.h_inverse(design.x)
    cov_h = np.linalg.inv(design.x.T @ hx)
    zhx = design.z.T @ hx
    with np.errstate(all="ignore"):
        info = _information(design, blocks, theta, cov_h, zhx)
    if not np.all(np.isfinite(info)):
        raise ModelNotFitted("the model's variance estimates are singular")
    covariance = np.linalg.pinv(info)
    residual = design.y - design.x @ beta
    u = blocks.solve(blocks.lam[:, None] * (design.z.T @ residual[:, None]))
    offsets = (blocks.lam[:, None] * u).ravel()
    return _Fitted(design, beta, theta, cov_h, zhx, hx, covariance, offsets)


def _check_fittable(frame: pd.DataFrame, raters_known: bool) -> None:
    stories = frame.groupby("source")["story_id"].nunique()
    if (stories < MIN_STORIES).any():
        source = stories[stories < MIN_STORIES].index[0]
        raise ModelNotFitted(
            f"{source} has {int(stories[source])} story: the model needs {MIN_STORIES} or "
            "more per source"
        )
    raters = frame["rater_id"].nunique()
    if raters_known and raters < MIN_RATERS:
        raise ModelNotFitted(f"{raters} raters: the model needs {MIN_RATERS} or more")
    if frame.groupby("story_id").size().max() < 2:
        raise ModelNotFitted("no story was rated twice: story and rater cannot be told apart")


def contrast(fitted: _Fitted, weights: np.ndarray) -> tuple[float, float, float]:
    """Estimate, standard error and Satterthwaite df of c'β for ``weights`` c (one per
    source): SE² = σ² c'(X'H⁻¹X)⁻¹c; df = 2 SE⁴ / (g'Ag), g_k = ∂SE²/∂σ²_k =
    w'V_k w with w = V⁻¹X(X'V⁻¹X)⁻¹c (Giesbrecht & Burns 1985)."""
    sigma2 = fitted.theta[-1]
    variance = float(sigma2 * weights @ fitted.cov_h @ weights)
    direction = fitted.cov_h @ weights
    gradient = [
        float(np.sum((fitted.zhx[piece] @ direction) ** 2)) for piece in _pieces(fitted.design)
    ]
    gradient.append(float(np.sum((fitted.hx @ direction) ** 2)))
    g = np.asarray(gradient)
    spread = float(g @ fitted.covariance @ g)
    df = 2.0 * variance**2 / spread if spread > 0 else math.inf
    return float(weights @ fitted.beta), math.sqrt(variance), df


def _interval(
    estimate: float, se: float, df: float, confidence: float
) -> tuple[float | None, float | None]:
    from scipy import stats as scipy_stats

    if not math.isfinite(se) or not df > 0:
        return None, None
    half = float(scipy_stats.t.ppf((1 + confidence) / 2, df)) * se
    return estimate - half, estimate + half


def _clip(
    low: float | None, high: float | None, bounds: tuple[float, float] | None
) -> tuple[float | None, float | None, bool]:
    """An interval cut at the scale's bounds; True when an end was cut."""
    if low is None or high is None or bounds is None:
        return low, high, False
    cut_low, cut_high = max(low, float(bounds[0])), min(high, float(bounds[1]))
    return cut_low, cut_high, (cut_low, cut_high) != (low, high)


def _components(fitted: _Fitted) -> VarianceComponents:
    theta = [float(value) for value in fitted.theta]
    total = sum(theta)
    rater = theta[1] if len(theta) >= 3 else None
    cells = theta[2] if len(theta) == 4 else None

    def share(value: float | None) -> float | None:
        return None if value is None else (value / total if total > 0 else 0.0)

    return VarianceComponents(
        story=theta[0],
        rater=rater,
        residual=theta[-1],
        icc_story=share(theta[0]),
        icc_rater=share(rater),
        rater_source=cells,
        icc_rater_source=share(cells),
    )


def _model_estimate(
    fitted: _Fitted, what: str, bounds: tuple[float, float] | None, confidence: float
) -> ModelEstimate:
    from scipy import stats as scipy_stats

    design = fitted.design
    sources = design.sources
    means = []
    for index, source in enumerate(sources):
        estimate, se, df = contrast(fitted, np.eye(len(sources))[index])
        low, high, clipped = _clip(*_interval(estimate, se, df, confidence), bounds)
        means.append(SourceMean(source, estimate, low, high, se, df, clipped))
    differences = []
    for first, second in itertools.combinations(range(len(sources)), 2):
        weights = np.zeros(len(sources))
        weights[first], weights[second] = 1.0, -1.0
        estimate, se, df = contrast(fitted, weights)
        low, high = _interval(estimate, se, df, confidence)
        p = float(2 * scipy_stats.t.sf(abs(estimate) / se, df)) if se > 0 else None
        differences.append(
            SourceDifference(sources[first], sources[second], estimate, low, high, se, df, p)
        )
    offsets = fitted.offsets[design.stories : design.stories + len(design.raters)]
    with_raters = bool(design.raters)
    return ModelEstimate(
        what=what,
        method=model_method(with_raters, confidence, design.cells_absent),
        means=tuple(means),
        differences=_with_holm(differences),
        components=_components(fitted),
        stories=design.stories,
        raters=len(design.raters) if with_raters else None,
        observations=int(design.y.size),
        rater_offsets=dict(zip(design.raters, (float(v) for v in offsets), strict=True))
        if with_raters
        else None,
    )


def model_method(
    with_raters: bool, confidence: float = CONFIDENCE, rater_source_absent: str | None = None
) -> str:
    """What the model's intervals model, in a sentence; ``rater_source_absent``: why the
    rater × source component was left out (None: it is in the model)."""
    effects = "story (raters of unknown identity)"
    if with_raters and rater_source_absent is None:
        effects = "story, rater and rater × source"
    elif with_raters:
        effects = f"story and rater (no rater × source term: {rater_source_absent})"
    return (
        f"linear mixed model (REML), random {effects}; {int(confidence * 100)}% t intervals "
        "with Satterthwaite df"
    )


def _with_holm(differences: list[SourceDifference]) -> tuple[SourceDifference, ...]:
    tested = [i for i, difference in enumerate(differences) if difference.p_value is not None]
    adjusted = holm([differences[i].p_value for i in tested])
    result = list(differences)
    for index, p in zip(tested, adjusted, strict=True):
        result[index] = SourceDifference(**{**differences[index].__dict__, "p_holm": p})
    return tuple(result)


def source_model(
    frame: pd.DataFrame,
    what: str,
    bounds: tuple[float, float] | None = None,
    *,
    raters_known: bool = True,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    replicates: int = BOOTSTRAP_REPLICATES,
) -> ModelEstimate | None:
    """Each source's mean score and each pair's difference, from the crossed mixed model, or
    from the cluster bootstrap where the model cannot be fitted (see the module docstring).

    ``frame``: one row per rating with ``story_id``, ``source``, ``rater_id`` and ``score``
    (NaN rows are left out); ``bounds``: the scale's ends, at which an interval is cut.
    ``raters_known``: False when rater ids are positions, not people (no rater effect).
    ``None`` without a rating. Units: those of the score; variances in squared units.
    """
    rows = frame.dropna(subset=["score"])
    if rows.empty:
        return None
    rows = rows.astype({"story_id": str, "source": str, "rater_id": str})
    try:
        # The matrices are small: one BLAS thread is fastest, and several threads on a busy
        # machine (generation running beside the analysis) wait on each other.
        with threadpool_limits(1):
            fitted = fit_model(rows, raters_known)
    except (ModelNotFitted, np.linalg.LinAlgError) as error:
        reason = str(error) if isinstance(error, ModelNotFitted) else "the model is singular"
        return cluster_bootstrap(
            rows, what, bounds, raters_known=raters_known, confidence=confidence,
            seed=seed, replicates=replicates, reason=reason,
        )  # fmt: skip
    return _model_estimate(fitted, what, bounds, confidence)


def _bootstrap_means(
    rows: pd.DataFrame, sources: tuple[str, ...], raters_known: bool, seed: int, replicates: int
) -> tuple[np.ndarray, np.ndarray]:
    """The sources' means (mean over stories of each story's mean) of the data and of each
    replicate (replicates × sources; NaN where a source lost every story)."""
    story_codes, story_ids = pd.factorize(rows["story_id"])
    rater_codes = pd.factorize(rows["rater_id"])[0] if raters_known else np.zeros(len(rows), int)
    raters = int(rater_codes.max()) + 1
    totals = np.zeros((len(story_ids), raters))
    counts = np.zeros((len(story_ids), raters))
    np.add.at(totals, (story_codes, rater_codes), rows["score"].to_numpy(dtype=float))
    np.add.at(counts, (story_codes, rater_codes), 1.0)
    source_of = rows.groupby("story_id")["source"].first().reindex(story_ids).to_numpy()
    rng = np.random.default_rng(seed)
    rater_weights = (
        rng.multinomial(raters, np.full(raters, 1 / raters), size=replicates).astype(float)
        if raters_known
        else np.ones((replicates, 1))
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        story_means = (totals @ rater_weights.T) / (counts @ rater_weights.T)
    plain = (totals.sum(axis=1) / counts.sum(axis=1))[:, None]
    observed, resampled = np.empty(len(sources)), np.empty((replicates, len(sources)))
    for index, source in enumerate(sources):
        own = np.flatnonzero(source_of == source)
        weights = rng.multinomial(own.size, np.full(own.size, 1 / own.size), size=replicates)
        means = story_means[own]
        valid = weights.T * ~np.isnan(means)
        with np.errstate(invalid="ignore", divide="ignore"):
            resampled[:, index] = np.nansum(valid * np.nan_to_num(means), axis=0) / valid.sum(0)
        observed[index] = float(plain[own].mean())
    return observed, resampled


def cluster_bootstrap(
    rows: pd.DataFrame,
    what: str,
    bounds: tuple[float, float] | None,
    *,
    raters_known: bool,
    confidence: float,
    seed: int,
    replicates: int,
    reason: str,
) -> ModelEstimate:
    """Source means and differences with percentile intervals from ``replicates`` resamples
    of stories (within their source) and raters, both with replacement, a rating kept with
    the product of its story's and rater's multiplicities (Owen 2007); ``reason``: why the
    model was not used. A replicate in which a source has no rated story is dropped and
    counted; a source with one story gets no interval."""
    sources = tuple(sorted(rows["source"].unique()))
    observed, resampled = _bootstrap_means(rows, sources, raters_known, seed, replicates)
    kept = resampled[~np.isnan(resampled).any(axis=1)]
    single = set(rows.groupby("source")["story_id"].nunique().loc[lambda n: n < 2].index)
    tail = 100 * (1 - confidence) / 2

    def percentile(values: np.ndarray, unusable: bool) -> tuple[float | None, float | None]:
        if unusable or not len(values):
            return None, None
        low, high = np.percentile(values, [tail, 100 - tail])
        return float(low), float(high)

    means = []
    for index, source in enumerate(sources):
        low, high, clipped = _clip(*percentile(kept[:, index], source in single), bounds)
        means.append(SourceMean(source, float(observed[index]), low, high, None, None, clipped))
    differences = []
    for first, second in itertools.combinations(range(len(sources)), 2):
        unusable = bool({sources[first], sources[second]} & single)
        low, high = percentile(kept[:, first] - kept[:, second], unusable)
        estimate = float(observed[first] - observed[second])
        differences.append(
            SourceDifference(sources[first], sources[second], estimate, low, high, None, None, None)
        )
    resampled_what = "stories (within source) and raters" if raters_known else "stories"
    return ModelEstimate(
        what=what,
        method=f"cluster bootstrap over {resampled_what}, {replicates} replicates, "
        f"{int(confidence * 100)}% percentile intervals",
        means=tuple(means),
        differences=tuple(differences),
        components=None,
        stories=int(rows["story_id"].nunique()),
        raters=int(rows["rater_id"].nunique()) if raters_known else None,
        observations=len(rows),
        replicates=replicates,
        dropped=replicates - len(kept),
        note=f"The mixed model was not fitted: {reason}.{_few_raters(rows, raters_known)}",
    )


def _few_raters(rows: pd.DataFrame, raters_known: bool) -> str:
    """A warning when raters are too few to be resampled: n raters give only C(2n − 1, n)
    distinct bootstrap draws of raters (3 for 2 raters), so the percentile interval cannot
    reflect how much another set of raters would move the means."""
    raters = int(rows["rater_id"].nunique())
    if not raters_known or raters >= MIN_RATERS:
        return ""
    draws = math.comb(2 * raters - 1, raters)
    return (
        f" With {raters} rater{'s' if raters != 1 else ''} a resample of raters takes one of "
        f"{draws} distinct draw{'s' if draws != 1 else ''}: the intervals understate the "
        "uncertainty due to who rated; read them as too narrow."
    )


def planned_contrast(
    layout: pd.DataFrame,
    variances: tuple[float, float, float],
    weights: np.ndarray,
    rater_source: float = 0.0,
) -> tuple[float, float]:
    """The standard error and Satterthwaite df that :func:`contrast` would report for c'β
    (``weights`` c, one per source in sorted order) if ratings laid out as ``layout``
    (``story_id``, ``source``, ``rater_id``) were fitted and REML found exactly
    ``variances`` (σ²_story, σ²_rater, σ²_residual) and ``rater_source`` (σ²_rater×source):
    the quantities of an analytic power calculation for this model (Westfall, Kenny and Judd
    2014). Where the layout cannot tell the rater × source component apart, the fit leaves it
    out and it is counted where the fit would find it: in the rater's variance when each rater
    rates one source, in the residual when no rater rates two stories of one source (the
    ratings' covariance is then the same). Units: those of the score."""
    design = _design(layout.assign(score=0.0), True)
    story, rater, residual = (float(v) for v in variances)
    if not residual > 0 or min(story, rater, rater_source) < 0:
        raise ValueError("The residual variance must be positive and the others 0 or more.")
    if design.cells_absent == NESTED_RATERS:
        rater += rater_source
    elif design.cells_absent == SINGLE_RATINGS:
        residual += rater_source
    cells = [rater_source] if design.cells else []
    theta = np.asarray([story, rater, *cells, residual])
    blocks = _Blocks(design, np.sqrt(theta[:-1] / theta[-1]))
    hx = blocks.h_inverse(design.x)
    cov_h = np.linalg.inv(design.x.T @ hx)
    zhx = design.z.T @ hx
    with np.errstate(all="ignore"):
        info = _information(design, blocks, theta, cov_h, zhx)
    covariance = np.linalg.pinv(info)
    fitted = _Fitted(design, np.zeros(len(design.sources)), theta, cov_h, zhx, hx, covariance,
                     np.zeros(0))  # fmt: skip
    _, se, df = contrast(fitted, np.asarray(weights, dtype=float))
    return se, df
