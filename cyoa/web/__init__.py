"""The plumbing every study kind shares, below the wings: the participant's door
(:mod:`.participants`), the shared parts (:mod:`.parts`), researcher accounts and blueprints
(:mod:`.auth`, :mod:`.research`), tables, charts and cards, security headers, Socket.IO, rate
limits and completion codes. Nothing here knows a study kind."""
