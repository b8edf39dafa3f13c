"""What an indexing run tells its reader, on stdout (the summary) and stderr (flags, personal data).

    summary(dict(added=2, changed=1, removed=0, unchanged=5, embedded=7, reused=3), 40, "384", 1.2,
            "knowledge.db")
    -> "Seiten: 2 neu, 1 geändert, 0 entfernt, 5 unverändert
        · Chunks: 7 eingebettet, 3 wiederverwendet,
        40 im Index (Dimension 384) · 1.2 s → knowledge.db"

Only pages written in this run are reported, so an unchanged wiki prints nothing on stderr.
Does not handle: the values of personal data (never printed, only counted per kind).
"""
import json
import os
import sys

from rag.privacy import detect
from rag.privacy import mask


def summary(stats, count, dim, seconds, label):
    """The one line a run ends with: pages and chunks by what happened to them, the index's size."""
    return (f"Seiten: {stats['added']} neu, {stats['changed']} geändert, {stats['removed']} "
            f"entfernt, {stats['unchanged']} unverändert · Chunks: {stats['embedded']} "
            f"eingebettet, {stats['reused']} wiederverwendet, {count} im Index (Dimension {dim}) "
            f"· {seconds:.1f} s → {label}")


def report_flags(index, paths):
    """One stderr line per chunk of `paths` that rag/text/safety.py flagged: its rule and the words
    that matched."""
    for path, heading, flags in index.flagged():
        if path in paths:
            for flag in json.loads(flags) if isinstance(flags, str) else flags:
                print(f"Markiert: {path} › {heading}: {flag['rule']} „{flag['match']}“",
                      file=sys.stderr)


def pii_settings():
    """(kinds, keep) from RAG_PII_KINDS and RAG_PII_KEEP, as ask_rag.py masks them (ValueError: bad
    kind)."""
    return (mask.parse_kinds(os.environ.get("RAG_PII_KINDS")),
            mask.parse_keep(os.environ.get("RAG_PII_KEEP")))


def report_pii(index, paths):
    """One stderr line per page of this run with personal data: counts per kind, never the values.

    Example: "Personenbezogene Daten: hr-it/x.md: 2 IBAN, 1 TELEFON" (the index keeps the text as
    it is; ask_rag.py masks it at ask time, see rag/privacy/mask.py; RAG_PII_KINDS/RAG_PII_KEEP
    apply)
    """
    kinds, keep = pii_settings()
    for path in sorted(paths):
        found = detect.describe(detect.counts("\n\n".join(index.page_contents(path)), kinds, keep))
        if found:
            print(f"Personenbezogene Daten: {path}: {found}", file=sys.stderr)


def report(index, written):
    """Flags and personal data of the pages written in this run ([(path, …)])."""
    report_flags(index, {path for path, *_ in written})
    report_pii(index, [path for path, *_ in written])
