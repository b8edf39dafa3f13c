"""The question sets (JSON Lines) and, in eval/measure/, what evaluate.py measures with them.

A package only so that `from eval.measure import retrieval` works (`eval` shadows no module of the
standard library; the builtin eval() is untouched, nobody binds the name); the scripts here still
run as scripts: `python3 eval/make_pii.py` -> eval/pii.jsonl.

Does not handle: anything at import time (this file defines nothing).
"""
