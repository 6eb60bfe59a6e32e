"""Judges: model verdicts on a rating study's instrument, stored as panels of their own and
calibrated against the human raters (measures, the human ceiling, the alternative annotator
test, the system level, the disagreements)."""
