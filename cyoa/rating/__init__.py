"""Rating studies: people read stories and answer an instrument, several raters per story.

- :mod:`.importing`: judgements, stories and FEI questions read from files (pure);
- :mod:`.experiment`: a rating experiment stored from them, in one transaction.

The instruments are in :mod:`cyoa.instruments`, the statistics in :mod:`cyoa.analysis`
(:mod:`cyoa.analysis.ratings`), reading through :mod:`cyoa.analysis.rating_data`.
"""
