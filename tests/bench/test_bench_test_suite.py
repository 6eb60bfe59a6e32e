"""The test-suite benchmark (bench/test_suite.py): what it sums from a run's JUnit report and
what its page keeps."""

from bench.test_suite import NOTES, page, summary

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" timestamp="2026-12-02T05:14:19.5">
<testcase classname="tests.rating.test_a" name="one" time="10.5"/>
<testcase classname="tests.rating.test_a" name="two" time="2.0"><skipped/></testcase>
<testcase classname="tests.rating.test_b" name="three" time="1.5"><failure/></testcase>
<testcase classname="tests.test_top" name="four" time="0.25"/>
</testsuite></testsuites>
"""


def test_the_summary_sums_each_folder_and_file_over_the_workers(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(REPORT)
    run = summary(junit)
    assert run["measured"] == "2026-12-02 05:14 UTC"
    assert run["outcomes"] == {"passed": 2, "skipped": 1, "failure": 1}
    assert run["worker_seconds"] == 14.2  # 14.25, to a tenth
    assert run["folders"] == {"tests/rating": 14.0, "tests": 0.2}
    assert list(run["slowest_files"]) == [
        "tests/rating/test_a.py",
        "tests/rating/test_b.py",
        "tests/test_top.py",
    ]


def test_the_page_puts_each_run_in_its_column_and_keeps_the_notes(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(REPORT)
    run = {"commit": "abc1234", "wall_s": 725.0, "cpu_s": 1300.0, **summary(junit)}
    text = page({"before": {**run, "wall_s": 1805.0}, "after": run}, "## Notes\n\nKept.\n")
    assert "| | before | after |" in text
    assert "| wall | 1,805 s (30 min 5 s) | 725 s (12 min 5 s) |" in text
    assert "| … `tests/rating/` | 14 s | 14 s |" in text
    assert text.endswith(f"{NOTES}\n## Notes\n\nKept.\n")
