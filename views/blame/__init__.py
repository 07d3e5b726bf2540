"""``hpcsa blame``: idleness, overhead and GPU idle blame from a database's traces. Which frames mean what
(:mod:`.rules`), the time sweep of one process (:mod:`.sweep`), the attribution to contexts as new metrics
(:mod:`.attribute`) and the report (:mod:`.report`)."""
