"""How many readers per question a Fabula Entropy Indexing study needs.

FEI scores a question by the binary entropy H of its readers' true/false answers and a source
by E(Q), the mean over its questions (Castricato et al. 2021, Eq. 2–3;
:mod:`cyoa.rating.analysis.fei`). With m readers the entropy is a plug-in estimate
H(X / m), X ~ Binomial(m, p) for a question whose readers answer true with probability p:
biased low (a fair question read by 3 readers scores 0.69 bits on average, not 1) and
noisy. For m = 2 … 15 readers this module gives, exactly by enumerating the binomial:

- **expected entropy** E[H(X/m)] and its **bias** E[H(X/m)] − H(p), averaged over the
  questions (bits);
- **SD of a source's E(Q)** over ``questions`` questions, √(Σ_q Var H_q) / Q when the
  questions' shares are fixed (bits): the readers' part of E(Q)'s uncertainty;

and by seeded simulation the **power** of the analysis's test between two sources: each
story's mean entropy is one observation of its source, compared by the two-sided
Mann–Whitney U (:func:`cyoa.rating.analysis.scales.compare_sources`; here its normal
approximation with tie correction, ``scipy.stats.mannwhitneyu``). A simulated story draws its
questions' shares from its source's (the pilot's questions, or one assumed share) and its
readers' answers from the binomial. The recommended readers per question are the fewest
whose bias is within ``tolerance`` bits (default 0.1) for both sources and whose power
reaches the target.

References:
    Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
    Coherence. Third Workshop on Narrative Understanding (Eq. 2–3).
    Miller, G. (1955). Note on the bias of information estimates. In Information Theory in
    Psychology (the plug-in entropy's bias, about −(k − 1) / (2 m ln 2) bits).
    Mann, H. B. and Whitney, D. R. (1947). Annals of Mathematical Statistics 18(1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

READERS = tuple(range(2, 16))
TOLERANCE = 0.1
TARGET = 0.8
ALPHA = 0.05
SIMULATIONS = 400
# The largest design planned: each number of readers simulates SIMULATIONS studies × stories
# × questions answers per source (at these bounds about 1.6 million, a few seconds).
MAX_STORIES = 200
MAX_QUESTIONS = 20

Progress = Callable[[int, int], None]


def _entropies(readers: int) -> np.ndarray:
    """H(x / readers) in bits for x = 0 … readers."""
    return true_entropy(np.arange(readers + 1) / readers)


def true_entropy(p: float | np.ndarray) -> np.ndarray:
    """H(p) in bits, 0 at p = 0 and 1 (Shannon 1948)."""
    share = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(-share * np.log2(share) - (1 - share) * np.log2(1 - share))


def entropy_moments(p: float | Sequence[float], readers: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean and variance (bits, bits²) of the plug-in entropy H(X / readers) of questions
    whose readers answer true with probability ``p``, X ~ Binomial(readers, p), computed
    exactly over x = 0 … readers."""
    from scipy import stats

    shares = np.atleast_1d(np.asarray(p, dtype=float))
    if np.any((shares < 0) | (shares > 1)) or readers < 1:
        raise ValueError(f"A share of true answers lies in [0, 1] and readers ≥ 1, got {p}.")
    chances = stats.binom.pmf(np.arange(readers + 1)[:, None], readers, shares)
    h = _entropies(readers)[:, None]
    mean = (chances * h).sum(axis=0)
    return mean, (chances * (h - mean) ** 2).sum(axis=0)


@dataclass(frozen=True)
class ReadersCell:
    """One number of readers per question: per source (A, B) the expected entropy, its bias
    and the SD of E(Q) (bits), and the power of the between-source test with its 95%
    Clopper–Pearson Monte-Carlo interval."""

    readers: int
    expected: tuple[float, float]
    bias: tuple[float, float]
    sd: tuple[float, float]
    power: float
    low: float
    high: float


@dataclass(frozen=True)
class ReadersPlan:
    stories: int
    questions: int
    tolerance: float
    target: float
    alpha: float
    simulations: int
    seed: int
    true: tuple[float, float]
    cells: tuple[ReadersCell, ...]
    chosen: ReadersCell | None


def simulated_power(
    shares: tuple[Sequence[float], Sequence[float]],
    readers: int,
    stories: int,
    questions: int,
    *,
    simulations: int = SIMULATIONS,
    alpha: float = ALPHA,
    seed: int | np.random.Generator = 0,
) -> tuple[float, float, float]:
    """Power (with its 95% Clopper–Pearson interval) of the two-sided Mann–Whitney test of
    the two sources' per-story mean entropies: ``stories`` per source, ``questions`` per story,
    ``readers`` per question, each question's share drawn from its source's ``shares``."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    table = _entropies(readers)
    means = []
    for pool in shares:
        p = rng.choice(np.asarray(pool, dtype=float), (simulations, stories, questions))
        means.append(table[rng.binomial(readers, p)].mean(axis=2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_values = stats.mannwhitneyu(means[0], means[1], axis=1, method="asymptotic").pvalue
    # A study whose story means are all equal has no p (NaN) and does not reject.
    rejections = int(np.sum(p_values <= alpha))
    interval = stats.binomtest(rejections, simulations).proportion_ci(0.95, method="exact")
    return rejections / simulations, float(interval.low), float(interval.high)


def plan_readers(
    shares: tuple[Sequence[float], Sequence[float]],
    stories: int,
    questions: int,
    *,
    readers: Sequence[int] = READERS,
    tolerance: float = TOLERANCE,
    target: float = TARGET,
    alpha: float = ALPHA,
    simulations: int = SIMULATIONS,
    seed: int = 0,
    progress: Progress | None = None,
) -> ReadersPlan:
    """Bias, SD of E(Q) and power for each number of ``readers`` per question (see the module
    docstring), and the chosen number: the fewest with |bias| ≤ ``tolerance`` bits for both
    sources and power ≥ ``target``. ``shares``: each source's questions' probabilities of a
    true answer; ``stories`` per source, ``questions`` per story."""
    if stories < 2 or questions < 1 or min(len(shares[0]), len(shares[1])) < 1:
        raise ValueError(
            "An FEI plan needs at least 2 stories per source, 1 question per story and a "
            f"share of true answers for each source, got {stories} stories, {questions} "
            "questions."
        )
    if stories > MAX_STORIES or questions > MAX_QUESTIONS:
        raise ValueError(
            f"An FEI plan takes at most {MAX_STORIES} stories per source and {MAX_QUESTIONS} "
            f"questions per story, got {stories} stories, {questions} questions: plan a "
            "smaller design."
        )
    if not 0 < tolerance < 1 or not 0 < target < 1 or not 0 < alpha < 1:
        raise ValueError("The tolerance (bits), target power and α lie between 0 and 1.")
    true = tuple(float(true_entropy(np.asarray(pool, dtype=float)).mean()) for pool in shares)
    cells = []
    for done, m in enumerate(sorted(set(readers)), start=1):
        moments = [entropy_moments(pool, m) for pool in shares]
        expected = tuple(float(mean.mean()) for mean, _ in moments)
        total = stories * questions
        sd = tuple(float(math.sqrt(var.mean() * total) / total) for _, var in moments)
        rng = np.random.default_rng([seed, m])
        power = simulated_power(
            shares, m, stories, questions, simulations=simulations, alpha=alpha, seed=rng
        )
        bias = (expected[0] - true[0], expected[1] - true[1])
        cells.append(ReadersCell(m, expected, bias, sd, *power))
        if progress:
            progress(done, len(set(readers)))
    fits = [c for c in cells if max(map(abs, c.bias)) <= tolerance and c.power >= target]
    chosen = fits[0] if fits else None
    return ReadersPlan(
        stories, questions, tolerance, target, alpha, simulations, seed, true, tuple(cells),
        chosen,
    )  # fmt: skip
