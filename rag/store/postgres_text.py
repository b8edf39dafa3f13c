"""Python values in PostgreSQL's text forms: a vector for pgvector, a cascade stage of the search as
a tsquery.

    vector_text([0.5, 1.0])                       -> "[0.5,1.0]"
    tsquery([[("frist", False), ("kuendi", True)]]) -> "('frist' | 'kuendi':*)"

Does not handle: anything but these two forms (the queries themselves: rag/store/postgres.py).
"""
from rag.store import vectors


def vector_text(values):
    """Python floats -> pgvector's text form with the float32 values exactly.

    Example: [0.5, 1.0] -> "[0.5,1.0]"
    """
    return "[" + ",".join(map(repr, vectors.floats(vectors.pack(values)))) + "]"


def tsquery(groups):
    """One cascade stage as a tsquery: AND over groups, OR within.

    Example: [[("frist", False), ("kuendi", True)], [("drucker", False)]]
             -> "('frist' | 'kuendi':*) & ('drucker')"
    """
    def lexeme(word, prefix):
        return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'" + (":*" if prefix else "")
    return " & ".join("(" + " | ".join(lexeme(w, p) for w, p in group) + ")" for group in groups)
