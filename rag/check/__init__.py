"""After the model's text exists: citations, support and evidence, the fact check, echo, see-also,
the guard's answer side; pipeline.py runs them in one order, each returns one Check (record.py)."""
