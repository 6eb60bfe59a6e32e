"""How the writer wrote, not only what: the keystroke record of each writing page.

The page records every change to the writer's own line and to the edit box of a chosen
suggestion as a text operation, with the suggestions' views and the page's visibility and
connection, and sends them in batches through its outbox; they are stored in
``text_operations`` (docs/data-dictionary.md), one row per event, numbered by the page.

``operations.py`` applies them to texts (pure), ``store.py`` stores and loads them,
``batches.py`` reads a batch off the wire, ``check.py`` compares the record with what the
writer submitted, and ``timeline.py`` lays a session out for the keystroke-grain replay.
"""
