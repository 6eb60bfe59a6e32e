"""The co-writing wing: writers write a story in turns with paired suggestions from two
systems (Clark & Smith, NAACL 2021).

- the study itself: :mod:`.spec`, :mod:`.flow` (the rules), :mod:`.service`, :mod:`.store`,
  :mod:`.recording`, :mod:`.runner` (the suggestions), :mod:`.pages` and :mod:`.sockets` (the
  writer's page), :mod:`.assignment`, :mod:`.messages`;
- :mod:`.analysis`: the paper's tables and their statistics; :mod:`.research`: the
  researcher's pages (form, dashboard, replay, exports, evaluation card, participants);
- :mod:`.wing` builds the wing's parts (:mod:`.parts`) and registers its pages.
"""
