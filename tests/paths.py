"""Where the tests find the repository and their data, whatever folder a test file sits in.

A test names ``ROOT / "docs"`` or ``DATA / "scales"`` instead of counting parents of its own
``__file__``, so it can move between folders of ``tests/`` without an edit."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
