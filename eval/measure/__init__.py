"""What evaluate.py measures, one module per measurement; evaluate.py parses the flags and dispatches.

    common      JSON Lines, fact matching, running ask_rag.py and build_index.py, the answer server
    retrieval   Recall@1/@5, MRR@10 and refusals per mode; --tune             (default)
    pii         precision and recall of the personal-data recogniser            (--pii)
    factcheck   wrong answers flagged, right answers flagged                    (--factcheck)
    answers     the whole pipeline with the real answer model                   (--answers)
    answerable  the answerability check alone and its threshold                 (--answerable)
    injections  the attack set, each case on its own copy of the wiki           (--injections)
    followups   query expansion and follow-up questions                         (--expand, --followups)

Example: `python3 evaluate.py --pii` -> eval.measure.pii.run_pii(args) -> a German table on stdout.
Does not handle: parsing flags (evaluate.py does that).
"""
