"""Fabula Entropy Indexing: binary entropy of each probe's answers, ETC and EWC per story, and
their comparison between sources, worked out by hand."""

import math

import pandas as pd
import pytest

from cyoa.rating.analysis.fei import analyze_fei, binary_entropy, question_entropies, story_indices
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
    # ETC: A (0 + .405639)/2 = .202820; B (1 + .811278)/2 = .905639.
    assert summary[("ETC", "A")].mean.mean == pytest.approx(H_QUARTER / 4)
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
