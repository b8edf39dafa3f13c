"""Ranking: the lexical cascade, vectors and their fusion (ranking), query expansion and follow-ups
(expand)."""
