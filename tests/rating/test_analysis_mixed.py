"""The crossed story × rater mixed model behind a rating study's headline intervals: its
estimates against statsmodels and the hand-worked balanced case, its coverage and size in
simulated studies (bench/rating_coverage.py, smaller here), the labelled bootstrap where it
cannot be fitted, and each rater's severity on the quality-control table."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from statsmodels.regression.mixed_linear_model import MixedLM

from bench.rating_coverage import DESIGNS, check_design, simulate_study  # noqa: E402
from cyoa import store
from cyoa.cli import cli
from cyoa.rating.analysis.mixed import fit_model, source_model
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.render import render_rating_analysis
from cyoa.rating.analysis.report import (
    POSITIONAL_NOTE,
    quality_rows,
    rating_report,
    render_report,
)
from cyoa.rating.instruments import AISS_V1

CROSSED, NESTED, UNBALANCED, RATER_SOURCE = DESIGNS


def _mixedlm(frame: pd.DataFrame, effects: dict[str, str]):
    reference = MixedLM.from_formula(
        "score ~ 0 + source",
        groups="g",
        vc_formula=effects,
        data=frame.assign(g=1, cell=frame["rater_id"] + ":" + frame["source"]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = reference.fit(reml=True)
    components = dict(zip(reference.exog_vc.names, result.vcomp, strict=True))
    return [*(components[name] for name in effects), result.scale], result.fe_params.to_numpy()


@pytest.mark.parametrize(("design", "seed"), [(UNBALANCED, 3), (RATER_SOURCE, 4)])
def test_the_model_s_variances_and_means_are_those_of_statsmodels_mixedlm(design, seed):
    # Raters rate both sources here: the model has the rater × source cells as a third effect.
    frame = simulate_study(design, np.random.default_rng(seed))
    fitted = fit_model(frame)
    effects = {"story": "0 + C(story_id)", "rater": "0 + C(rater_id)", "cell": "0 + C(cell)"}
    variances, means = _mixedlm(frame, effects)
    # A component at its bound of 0 agrees to 1e-4 (statsmodels stops near, not at, the bound).
    assert fitted.theta == pytest.approx(variances, rel=1e-3, abs=1e-4)
    assert fitted.beta == pytest.approx(means, abs=1e-5)


def test_with_raters_nested_in_sources_the_model_has_no_rater_by_source_term_and_says_why():
    frame = simulate_study(NESTED, np.random.default_rng(3))
    fitted = fit_model(frame)
    variances, means = _mixedlm(frame, {"story": "0 + C(story_id)", "rater": "0 + C(rater_id)"})
    assert fitted.theta == pytest.approx(variances, rel=1e-3)
    assert fitted.beta == pytest.approx(means, abs=1e-5)
    model = source_model(frame, "score")
    assert model.components.rater_source is None
    assert "no rater × source term: each rater rated one source" in model.method


def test_in_a_balanced_crossed_design_a_source_mean_s_variance_is_cornfield_and_tukey_s_sum():
    frame = simulate_study(CROSSED, np.random.default_rng(4))
    model = source_model(frame, "score")
    parts = model.components
    stories, raters = CROSSED.stories, CROSSED.raters
    variance = (
        parts.story / stories
        + (parts.rater + parts.rater_source) / raters
        + parts.residual / (stories * raters)
    )
    assert model.means[0].se ** 2 == pytest.approx(variance, rel=1e-6)
    # The difference: the rater main effect cancels, each rater's cells do not.
    difference = 2 * (parts.story / stories + parts.rater_source / raters)
    difference += 2 * parts.residual / (stories * raters)
    assert model.differences[0].se ** 2 == pytest.approx(difference, rel=1e-6)
    total = parts.story + parts.rater + parts.rater_source + parts.residual
    assert parts.icc_story == pytest.approx(parts.story / total)
    assert parts.icc_rater == pytest.approx(parts.rater / total)
    assert parts.icc_rater_source == pytest.approx(parts.rater_source / total)
    assert model.stories == 2 * stories and model.raters == raters and model.observations == 80


def test_over_200_crossed_studies_the_95_interval_of_a_source_mean_covers_the_truth_93_to_97():
    shares = check_design(CROSSED, studies=200, seed=0)
    assert shares["fitted"] == 1.0
    assert 0.93 <= shares["mean"] <= 0.97
    assert 0.93 <= shares["difference"] <= 0.97
    # What the analysis gave before: a t interval over story means, far below its level.
    assert shares["t_mean"] < 0.85


def test_with_raters_nested_in_sources_the_test_of_a_true_null_keeps_its_size():
    shares = check_design(NESTED, studies=200, seed=0)
    assert shares["rejected"] <= 0.06
    assert 0.93 <= shares["difference"] <= 0.97
    # Mann–Whitney over story means, as before: far above .05.
    assert shares["mw_rejected"] > 0.10


def test_with_two_raters_the_model_is_not_fitted_and_a_labelled_cluster_bootstrap_is_used():
    frame = simulate_study(CROSSED, np.random.default_rng(5))
    two = frame[frame["rater_id"].isin(["r0", "r1"])]
    model = source_model(two, "score", (1, 5), seed=0, replicates=500)
    assert model.components is None
    assert model.method.startswith("cluster bootstrap over stories (within source) and raters")
    assert "500 replicates" in model.method
    assert model.note.startswith(
        "The mixed model was not fitted: 2 raters: the model needs 3 or more. With 2 raters "
        "a resample of raters takes one of 3 distinct draws: the intervals understate"
    )
    mean = model.means[0]
    assert mean.ci_low < mean.mean < mean.ci_high
    assert model.differences[0].p_value is None


def test_ratings_that_are_all_the_same_fall_back_to_the_bootstrap_without_a_warning():
    frame = simulate_study(CROSSED, np.random.default_rng(9)).assign(score=4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = source_model(frame, "score", (1, 5))
    assert model.note == "The mixed model was not fitted: every rating is the same."
    assert (model.means[0].ci_low, model.means[0].ci_high) == (4.0, 4.0)


def test_ratings_that_rater_offsets_explain_exactly_are_said_to_leave_no_residual_at_once():
    # Each rater gives every story the same score: REML's residual variance goes to 0, which
    # the search would chase for 2,000 iterations (seconds per item on the dashboard).
    frame = pd.DataFrame(
        {
            "story_id": ["h1", "h1", "h2", "m1", "m2", "m2"],
            "source": ["human", "human", "human", "model", "model", "model"],
            "rater_id": ["harsh", "kind", "kinder", "kind", "harsh", "kinder"],
            "score": [2.0, 4.0, 4.0, 4.0, 2.0, 4.0],
        }
    )
    model = source_model(frame, "score", (1, 5))
    assert model.components is None
    assert model.note == (
        "The mixed model was not fitted: the ratings leave the model no residual variance."
    )
    # Without a rater effect the same ratings differ within a story, and the model is fitted.
    assert source_model(frame, "score", (1, 5), raters_known=False).components is not None


def test_a_source_with_one_story_gets_a_bootstrap_mean_without_an_interval():
    frame = pd.DataFrame(
        {
            "story_id": ["a", "a", "b", "b", "c", "c"],
            "source": ["x", "x", "y", "y", "y", "y"],
            "rater_id": ["r1", "r2", "r1", "r2", "r1", "r2"],
            "score": [3.0, 4.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    model = source_model(frame, "score", (1, 5))
    assert model.note.startswith("The mixed model was not fitted: x has 1 story")
    assert model.means[0].mean == 3.5 and model.means[0].ci_low is None


def test_intervals_stay_inside_the_scale():
    rng = np.random.default_rng(6)
    frame = simulate_study(UNBALANCED, rng)
    frame["score"] = np.where(frame["source"] == "A", 5.0, frame["score"])
    frame.loc[frame.index[0], "score"] = 4.0
    model = source_model(frame, "score", (1, 5))
    mean = model.means[0]
    assert mean.ci_high <= 5.0 and mean.clipped


def test_rater_ids_that_are_positions_get_no_rater_effect():
    frame = simulate_study(CROSSED, np.random.default_rng(7))
    model = source_model(frame, "score", raters_known=False)
    assert model.components.rater is None and model.raters is None
    assert model.rater_offsets is None
    assert "raters of unknown identity" in model.method


def aiss_judgements(lenient: str = "r0", shift: int = 2) -> pd.DataFrame:
    """Two sources × 6 stories, 4 raters answering every AISS item of every story; rater
    ``lenient`` answers ``shift`` points higher (capped at 5)."""
    rng = np.random.default_rng(8)
    rows = []
    for source in ("human", "model"):
        for story in range(6):
            quality = rng.integers(2, 4)
            for rater in ("r0", "r1", "r2", "r3"):
                for item in AISS_V1.items:
                    answer = int(quality + rng.integers(0, 2))
                    if item.reverse or item.id == "9":
                        answer = 6 - answer
                    if rater == lenient:
                        answer = min(5, answer + shift) if not item.reverse else answer
                    rows.append((f"{source}{story}", source, rater, item.id, float(answer)))
    return pd.DataFrame(rows, columns=["story_id", "source", "rater_id", "item", "value"])


def test_analyze_prints_the_model_s_means_first_and_says_what_they_model():
    analysis = analyze_ratings(AISS_V1, aiss_judgements(), bootstrap=50)
    text = render_rating_analysis(analysis)
    headline = text.index("## Source means from the mixed model")
    assert headline < text.index("## Factors over story means")
    assert "random story, rater and rater × source; 95% t intervals with Satterthwaite df" in text
    assert "## Variance components (mixed model)" in text
    tables = [row[0] for row in csv.reader(io.StringIO(render_rating_analysis(analysis, "csv")))]
    assert next(table for table in tables[1:] if table != "study") == "model_means"
    coherence = analysis.scales.model("Coherence")
    assert coherence.differences[0].first == "human" and coherence.raters == 4


def import_aiss(tmp_path: Path, judgements: pd.DataFrame, *options: str) -> Path:
    path = tmp_path / "aiss.csv"
    judgements.to_csv(path, index=False)
    db_path = tmp_path / "cyoa.sqlite"
    result = CliRunner().invoke(
        cli,
        ["--db", str(db_path), "import-ratings", str(path), "--format", "long",
         "--instrument", "aiss-v1", "--name", "aiss", *options],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return db_path


def test_a_lenient_rater_has_the_highest_severity_on_the_quality_table(tmp_path):
    db = store.connect(import_aiss(tmp_path, aiss_judgements("r2")))
    try:
        # No interval is looked at: a few bootstrap replicates, one report rendered twice.
        report = rating_report(db, "aiss", judges=True, bootstrap=50)
        rows = {
            row["rater_id"]: row["severity"] for row in quality_rows(report.review, report.severity)
        }
        text = render_report(report, "markdown")
        body = json.loads(render_report(report, "json"))
    finally:
        db.close()
    assert max(rows, key=rows.get) == "r2" and rows["r2"] > 0.5
    assert sum(rows.values()) == pytest.approx(0.0, abs=1e-6)
    assert "Rater severity (each rater's offset in the mixed model" in text
    assert body["quality"]["per_rater"][2]["severity"] == pytest.approx(rows["r2"])


def test_raters_numbered_per_story_get_no_per_rater_quality_control_and_a_note(tmp_path):
    db_path = import_aiss(tmp_path, aiss_judgements(), "--rater-ids", "positions")
    db = store.connect(db_path)
    try:
        report = rating_report(db, "aiss", judges=True, bootstrap=50)
        text = render_report(report, "markdown")
    finally:
        db.close()
    assert quality_rows(report.review, report.severity) == []
    assert report.severity.note == POSITIONAL_NOTE
    assert POSITIONAL_NOTE in text
    assert report.all_raters.scales.model("Coherence").components.rater is None


def test_when_raters_differ_in_which_source_they_prefer_the_difference_s_interval_covers_93_to_97():
    # Six raters rate every story of both sources, each preferring one source by their own
    # amount (rater × source SD 0.5, as large as the stories'): without that component the
    # interval of A − B treats each rater's preference as noise that averages out over stories.
    shares = check_design(RATER_SOURCE, studies=200, seed=0)
    assert shares["fitted"] == 1.0
    assert 0.93 <= shares["difference"] <= 0.97
    assert shares["rejected"] <= 0.07
