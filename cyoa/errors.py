"""Errors that both study kinds raise to the person asking, each message a sentence that says
what to do next."""


class AnalysisError(ValueError):
    """The data cannot be analysed (or exported, or read) as asked; the message says what to
    do next."""


class PlanInputError(ValueError):
    """A typed assumption or option a plan cannot use; the message names it."""


class SchemaError(RuntimeError):
    """The database cannot be brought to this code's schema (e.g. it is newer)."""
