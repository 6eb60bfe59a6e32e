"""Where the project's own files are: the checkout root (models/, experiments/, docs/)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
