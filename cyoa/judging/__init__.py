"""What both kinds' judges share, below the wings: a prompt template's placeholders read and
checked (:mod:`.templates`) and the run machinery that asks a judge model every prompt of a
run, stores each verdict as it comes and resumes without repeats (:mod:`.runs`). Each wing
gives only what differs: its prompts, how an answer is read and where verdicts are stored."""
