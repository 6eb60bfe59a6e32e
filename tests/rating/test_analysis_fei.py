"""Fabula Entropy Indexing: binary entropy of each probe's answers, ETC and EWC per story, and
their comparison between sources, worked out by hand."""

import math

import pandas as pd
import pytest

from cyoa.rating.analysis.fei import (
    analyze_fei,
    binary_entropy,
    entropy_at_readers,
    question_entropies,
    story_indices,
)
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.render import render_rating_analysis
from cyoa.rating.instruments import FeiQuestion, fei_instrument

H_QUARTER = 0.8112781244591328  # H(1/4) = −¼·log₂¼ − ¾·log₂¾ = 0.5 + 0.311278


def test_binary_entropy_in_bits():
    assert binary_entropy(0.5) == 1.0
    assert binary_entropy(0.0) == 0.0
    assert binary_entropy(1.0) == 0.0
    assert binary_entropy(0.25) == pytest.approx(0.5 + 0.75 * math.log2(4 / 3))
    assert binary_entropy(0.25) == pytest.approx(H_QUARTER)
    assert binary_entropy(0.75) == pytest.approx(H_QUARTER)


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan")])
def test_binary_entropy_refuses_a_share_outside_0_1(p):
    with pytest.raises(ValueError, match="lies in"):
        binary_entropy(p)


# (story, source, question, kind, answers: 1 = true)
PROBES = [
    ("a1", "A", "q1", "transitional", [1, 1, 1, 1]),  # p = 1   → H = 0
    ("a1", "A", "q2", "world", [1, 1, 0, 0]),  # p = 1/2 → H = 1
    ("a2", "A", "q3", "transitional", [1, 0, 0, 0]),  # p = 1/4 → H = .811278
    ("a2", "A", "q4", "transitional", [1, 1, 1, 1]),  # H = 0
    ("a2", "A", "q5", "world", [0, 0, 0, 0]),  # H = 0
    ("b1", "B", "q6", "transitional", [1, 1, 0, 0]),  # H = 1
    ("b1", "B", "q7", "world", [1, 0, 0, 0]),  # H = .811278
    ("b2", "B", "q8", "transitional", [1, 1, 1, 0]),  # p = 3/4 → H = .811278
    ("b2", "B", "q9", "world", [1]),  # one answer: no entropy, left out
]
FEI = fei_instrument(
    FeiQuestion(story, question, kind, f"Probe {question}?")
    for story, _, question, kind, _ in PROBES
)


def judgements():
    rows = [
        (story, source, f"r{rater}", question, float(answer))
        for story, source, question, _, answers in PROBES
        for rater, answer in enumerate(answers)
    ]
    return pd.DataFrame(rows, columns=["story_id", "source", "rater_id", "item", "value"])


def test_entropy_of_each_question():
    questions, skipped = question_entropies(FEI, judgements())
    entropy = {question.question_id: question.entropy for question in questions}
    assert entropy == pytest.approx(
        {
            "q1": 0,
            "q2": 1,
            "q3": H_QUARTER,
            "q4": 0,
            "q5": 0,
            "q6": 1,
            "q7": H_QUARTER,
            "q8": H_QUARTER,
        }
    )
    assert skipped == 1
    q3 = next(question for question in questions if question.question_id == "q3")
    assert (q3.answers, q3.p_true, q3.kind, q3.story_id) == (4, 0.25, "transitional", "a2")


def test_etc_and_ewc_per_story():
    questions, _ = question_entropies(FEI, judgements())
    stories = {story.story_id: story for story in story_indices(questions)}
    # a2: ETC = (H(q3) + H(q4)) / 2 = .811278 / 2; EWC = H(q5) = 0.
    assert stories["a2"].etc == pytest.approx(H_QUARTER / 2)
    assert stories["a2"].ewc == 0.0
    assert (stories["a2"].etc_questions, stories["a2"].ewc_questions) == (2, 1)
    # b2's only world question had one answer: no EWC.
    assert stories["b2"].ewc is None and stories["b2"].etc == pytest.approx(H_QUARTER)


def test_per_source_means_and_tests():
    result = analyze_fei(FEI, judgements())
    summary = {(s.index, s.source): s for s in result.summaries}
    # ETC, E(Q) over the source's questions: A (0 + .811278 + 0)/3 = .270426;
    # B (1 + .811278)/2 = .905639.
    assert summary[("ETC", "A")].mean.mean == pytest.approx(H_QUARTER / 3)
    assert summary[("ETC", "B")].mean.mean == pytest.approx((1 + H_QUARTER) / 2)
    assert summary[("ETC", "A")].questions == 3
    # EWC: A (1 + 0)/2 = .5 over 2 stories; B .811278 from b1 alone.
    assert summary[("EWC", "A")].mean.mean == pytest.approx(0.5)
    assert summary[("EWC", "B")].mean.n == 1
    tests = {test.what: test for test in result.tests}
    # ETC: both A stories below both B stories: U_A = 0, r = −1, exact two-sided p = 2/6.
    assert tests["ETC"].statistic == 0.0 and tests["ETC"].effect == -1.0
    assert tests["ETC"].p_value == pytest.approx(1 / 3)
    # EWC: A (1, 0) against B (.811): U_A = 1 of 2 pairs, r = 0, p = 1.
    assert tests["EWC"].effect == 0.0 and tests["EWC"].p_value == pytest.approx(1.0)
    # Holm over (1/3, 1): 2 · 1/3 = 2/3, then max(2/3, 1) = 1.
    assert tests["ETC"].p_holm == pytest.approx(2 / 3)
    assert tests["EWC"].p_holm == pytest.approx(1.0)
    assert result.skipped_questions == 1


def test_a_coherent_source_has_lower_entropy_than_a_guessing_one():
    # Readers of "clear" stories all answer alike; readers of "muddled" ones split 2–2.
    probes = []
    for n in range(4):
        probes.append((f"clear{n}", "clear", f"c{n}", "transitional", [1, 1, 1, 1]))
        probes.append((f"muddled{n}", "muddled", f"m{n}", "transitional", [1, 0, 1, 0]))
    instrument = fei_instrument(FeiQuestion(s, q, k, "?") for s, _, q, k, _ in probes)
    rows = [
        (story, source, f"r{rater}", question, float(answer))
        for story, source, question, _, answers in probes
        for rater, answer in enumerate(answers)
    ]
    frame = pd.DataFrame(rows, columns=["story_id", "source", "rater_id", "item", "value"])
    result = analyze_fei(instrument, frame)
    means = {(s.index, s.source): s.mean.mean for s in result.summaries}
    assert means[("ETC", "clear")] == 0.0 and means[("ETC", "muddled")] == 1.0
    (test,) = result.tests  # no world questions: EWC has nothing to compare
    assert test.what == "ETC" and test.p_value < 0.05


# --- E(Q) per source, readers per question, corrupted copies against their originals -------


def frame_of(probes, families=None):
    """Judgements of ``probes`` = (story, source, question, kind, answers); ``families``: story
    → the story it is a copy of (its family)."""
    families = families or {}
    rows = [
        (story, source, f"r{rater}", question, float(answer), families.get(story, story))
        for story, source, question, _, answers in probes
        for rater, answer in enumerate(answers)
    ]
    columns = ["story_id", "source", "rater_id", "item", "value", "family"]
    return pd.DataFrame(rows, columns=columns)


def instrument_of(probes):
    return fei_instrument(FeiQuestion(s, q, k, "?") for s, _, q, k, _ in probes)


def test_a_sources_figure_is_e_of_q_over_all_its_questions_not_the_mean_of_story_means():
    # s1 has one question its readers split on (H = 1); s2 has three they agree on (H = 0).
    # The mean of the two story means is 0.50; E(Q) over the source's four questions is 0.25.
    probes = [
        ("s1", "A", "q1", "world", [1, 1, 0, 0]),
        ("s2", "A", "q2", "world", [1, 1, 1, 1]),
        ("s2", "A", "q3", "world", [0, 0, 0, 0]),
        ("s2", "A", "q4", "world", [1, 1, 1, 1]),
    ]
    (summary,) = analyze_fei(instrument_of(probes), frame_of(probes)).summaries
    assert summary.mean.mean == 0.25
    assert (summary.mean.n, summary.mean.questions) == (2, 4)


def test_a_sources_interval_is_a_bootstrap_over_stories_that_stays_inside_0_and_1():
    # Two stories: a replicate draws s1 twice (E = 1), s2 twice (E = 0) or one of each
    # (E = 1/4), with chances 1/4, 1/4, 1/2: the 2.5% and 97.5% percentiles are 0 and 1.
    probes = [
        ("s1", "A", "q1", "world", [1, 1, 0, 0]),
        ("s2", "A", "q2", "world", [1, 1, 1, 1]),
        ("s2", "A", "q3", "world", [0, 0, 0, 0]),
        ("s2", "A", "q4", "world", [1, 1, 1, 1]),
    ]
    (summary,) = analyze_fei(instrument_of(probes), frame_of(probes)).summaries
    assert (summary.mean.ci_low, summary.mean.ci_high) == (0.0, 1.0)
    # Many stories near the top of the scale: the interval never passes 1 bit.
    near_one = [(f"t{n}", "B", f"p{n}", "world", [1, 1, 0, 0 if n else 1]) for n in range(8)]
    (high,) = analyze_fei(instrument_of(near_one), frame_of(near_one), seed=3).summaries
    assert 0 <= high.mean.ci_low < high.mean.mean < high.mean.ci_high <= 1
    again = analyze_fei(instrument_of(near_one), frame_of(near_one), seed=3).summaries[0]
    assert (again.mean.ci_low, again.mean.ci_high) == (high.mean.ci_low, high.mean.ci_high)


def test_a_question_rarefied_to_fewer_readers_averages_its_entropy_over_every_subset():
    # Four readers split 2–2: of the 6 pairs of them, 4 disagree (H = 1) and 2 agree (H = 0).
    assert entropy_at_readers(true=2, answers=4, readers=2) == pytest.approx(4 / 6)
    # Three of the four: every triple holds one or two of the two "true" answers, H(1/3).
    assert entropy_at_readers(true=2, answers=4, readers=3) == pytest.approx(binary_entropy(1 / 3))
    # At its own number of readers a question keeps its plug-in entropy.
    assert entropy_at_readers(true=3, answers=7, readers=7) == pytest.approx(binary_entropy(3 / 7))


def test_three_readers_of_a_question_people_split_on_evenly_score_069_bits_on_average():
    # Why readers per question matter: the plug-in entropy of 3 readers drawn from a 50/50
    # population is H(1/3) = .918 with chance 6/8 and 0 with chance 2/8, .689 on average.
    average = sum(math.comb(3, k) * binary_entropy(k / 3) for k in range(4)) / 8
    assert average == pytest.approx(0.689, abs=5e-4)


# Originals read by 7 readers: 11 world questions, two split 3–4 (H(3/7) = .985): E = .179.
ORIGINALS = [
    (f"o{n // 4}", "human", f"o{n}", "world", [1, 1, 1, 0, 0, 0, 0] if n < 2 else [1] * 7)
    for n in range(11)
]
# Corrupted copies read by 7 readers: 12 world questions, two split 1–6 and nine 2–5, one
# unanimous: E = (2·H(1/7) + 9·H(2/7)) / 12 = .746. Readers r0 and r1 disagree on two.
CORRUPTED_7 = [
    (
        f"c{n // 4}",
        "human (corrupted)",
        f"c{n}",
        "world",
        [0, 1, 0, 0, 0, 0, 0] if n < 2 else [0, 0, 1, 1, 0, 0, 0] if n < 11 else [0] * 7,
    )
    for n in range(12)
]
CORRUPTED_2 = [(s, source, q, k, answers[:2]) for s, source, q, k, answers in CORRUPTED_7]


def test_sources_are_compared_at_an_equal_number_of_readers_per_question():
    full = analyze_fei(instrument_of(ORIGINALS + CORRUPTED_7), frame_of(ORIGINALS + CORRUPTED_7))
    means = {s.source: s.mean.mean for s in full.summaries}
    assert means["human"] == pytest.approx(0.179, abs=5e-4)
    assert means["human (corrupted)"] == pytest.approx(0.746, abs=5e-4)
    assert not full.warnings
    # Exclusions leave the corrupted stories 2 readers per question: their plug-in E falls
    # to 2/12 = .167, below the originals' .179, and the conclusion reverses.
    cut = analyze_fei(instrument_of(ORIGINALS + CORRUPTED_2), frame_of(ORIGINALS + CORRUPTED_2))
    summary = {s.source: s for s in cut.summaries}
    assert summary["human (corrupted)"].mean.mean == pytest.approx(2 / 12)
    assert summary["human"].mean.mean > summary["human (corrupted)"].mean.mean
    # Readers per question are reported per source, and the sources compared at 2 readers:
    # the originals' split questions then score 2·3·4 / (7·6) = 4/7 each, E = (8/7) / 11.
    assert (summary["human"].readers_min, summary["human"].readers_max) == (7, 7)
    assert summary["human (corrupted)"].readers_max == 2
    assert summary["human"].readers == summary["human (corrupted)"].readers == 2
    assert summary["human"].equal.mean == pytest.approx(8 / 7 / 11)
    assert summary["human (corrupted)"].equal.mean > summary["human"].equal.mean
    (warning,) = cut.warnings
    assert "EWC" in warning and "2 readers" in warning and "7" in warning


# Six stories and their corrupted copies (family = the original). Originals: readers agree
# on both questions. Copies: readers of c1–c5 split on 1 and 2 of 2 questions in turn, c6's
# agree: differences copy − original of H(1/4)/2 … and one zero.
PAIRED_ORIGINALS = [
    (f"s{n}", "model", f"s{n}q{k}", "transitional", [1, 1, 1, 1])
    for n in range(1, 7)
    for k in (1, 2)
]
SPLITS = {1: [1, 1, 1, 1], 2: [1, 0, 0, 0], 3: [1, 1, 0, 0]}  # H = 0, .811, 1
PAIRED_COPIES = [
    (f"s{n}-shuffled", "model (shuffled)", f"s{n}q{k}@c", "transitional", SPLITS[code])
    for n, codes in {1: (2, 1), 2: (3, 1), 3: (2, 2), 4: (3, 2), 5: (3, 3), 6: (1, 1)}.items()
    for k, code in zip((1, 2), codes, strict=True)
]
PAIR_FAMILIES = {f"s{n}-shuffled": f"s{n}" for n in range(1, 7)}


def test_each_corrupted_copy_is_compared_with_its_own_original():
    probes = PAIRED_ORIGINALS + PAIRED_COPIES
    result = analyze_fei(instrument_of(probes), frame_of(probes, PAIR_FAMILIES))
    (paired,) = result.paired
    assert (paired.index, paired.copies, paired.originals, paired.pairs) == (
        "ETC",
        "model (shuffled)",
        "model",
        6,
    )
    differences = [H_QUARTER / 2, 0.5, H_QUARTER, (1 + H_QUARTER) / 2, 1.0, 0.0]
    assert paired.mean_difference == pytest.approx(sum(differences) / 6)
    assert 0 < paired.ci_low < paired.mean_difference < paired.ci_high <= 1
    # Wilcoxon signed-rank over the 5 non-zero differences, all positive: of the 2⁵ sign
    # patterns only "all +" and "all −" are as extreme: exact two-sided p = 2/32.
    assert paired.p_value == pytest.approx(2 / 32)
    assert paired.effect == 1.0  # matched-pairs rank-biserial r: every difference positive
    # The copies are not a second independent source: no unpaired test between the two.
    assert result.tests == ()


def test_a_copy_without_its_original_in_the_data_is_named_and_left_out_of_the_pairs():
    probes = PAIRED_ORIGINALS[2:] + PAIRED_COPIES  # s1's answers are missing
    result = analyze_fei(instrument_of(probes), frame_of(probes, PAIR_FAMILIES))
    (paired,) = result.paired
    assert paired.pairs == 5
    assert any("s1-shuffled" in warning for warning in result.warnings)


def test_the_report_shows_readers_the_equal_reader_figures_the_pairs_and_the_warnings():
    probes = ORIGINALS + CORRUPTED_2 + PAIRED_ORIGINALS + PAIRED_COPIES
    analysis = analyze_ratings(
        instrument_of(probes), frame_of(probes, PAIR_FAMILIES), bootstrap=200
    )
    markdown = render_rating_analysis(analysis, "markdown")
    assert "E(Q) over each source's questions [95% percentile bootstrap" in markdown
    assert "0.179 [" in markdown and "(3 stories, 11 questions)" in markdown
    assert "| EWC | 2 | 0.104 [" in markdown and "[7–7]" in markdown and "[2–2]" in markdown
    assert "| ETC | model (shuffled) | model | 6 | 0.604 [" in markdown
    assert "| 15.0 | 0.0625 | 0.0625 | 1.00 |" in markdown
    assert "Warning: EWC: questions had different numbers of readers" in markdown
    csv_text = render_rating_analysis(analysis, "csv")
    assert "fei_paired,ETC model (shuffled) vs model,p_value,0.0625" in csv_text
    assert "fei,EWC human (corrupted),readers_max,2" in csv_text
    assert "fei_warnings,1,warning," in csv_text
