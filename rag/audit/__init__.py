"""The audit trail: one JSON line per answer (log.py), so an answer can be traced to the text it
used."""
