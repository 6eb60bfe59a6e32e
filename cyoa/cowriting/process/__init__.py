"""How the writer wrote: the keystroke record of a co-writing session and what is built on it."""
