"""The threat model cannot drift: docs/research.md and docs/deployment.md state the same
table."""

from tests.paths import ROOT

DOCS = ROOT / "docs"
HEADING = "## Who can do what (threat model)"


def threat_model(page: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert HEADING in text, page
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0].strip()


def test_research_and_deployment_state_the_same_threat_model():
    table = threat_model("research.md")
    assert table == threat_model("deployment.md")
    for who in ("anyone", "a writer (a rater)", "another website", "a researcher"):
        assert f"\n| {who} |" in table
