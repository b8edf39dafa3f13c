"""The audit room: what the project keeps about answers after they were given. The audit trail,
one JSON line per answer (log.py), so an answer can be traced to the text it used; the votes on
answers (feedback.py)."""
