"""The dashboards' analyses, stored and computed in the background: :mod:`.store` (the
``analyses`` and ``analysis_jobs`` rows) and :mod:`.jobs` (serving the stored one, computing a
newer one off the request path). Each wing gives only what differs: what its data version and
answers are, and how its analysis is computed."""
