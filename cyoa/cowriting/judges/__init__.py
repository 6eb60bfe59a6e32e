"""Judges of the writers' choices: a model card shown each round's two suggestions, in both
orders, asked which continues the story better (prompts, runs, figures, report)."""
