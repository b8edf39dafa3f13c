"""Who may read which page, as the index stores it, and the SQL that keeps the rest out of every
candidate query.

    rows("personal/gehalt.md", ("personal", "leitung"))
    -> [("personal/gehalt.md", ""), ("personal/gehalt.md", "leitung"),
        ("personal/gehalt.md", "personal")]
    hidden_sql(("it",), "?") -> ("SELECT path FROM access WHERE grp = '' AND path NOT IN
                                  (SELECT path FROM access WHERE grp IN (?))", ["it"])

Table `access` (both stores): one row (path, '') for every page with a rule, the mark "restricted",
plus one row (path, group) per group that may read it. A page without rows is open to everyone; a
page with only the mark is readable by nobody but a reader of everything (`groups=None`). A reader
is `Reader(name, groups)`: groups None reads everything (the terminal, --serve-key), a tuple only
the open pages and the pages of these groups.

The stores put `hidden_sql` into their queries (lexical, vector, sources, sections, folders, counts;
SQLite through a temporary table filled from it once per opened store), so no step above them ever
sees a hidden chunk: nothing is filtered after a top k. A restricted reader's BM25 uses their own N
and document frequencies (`idf`, `bm25`), so no score tells what a hidden page contains.

Does not handle: reading the rules from the wiki (rag/ingest/access_rules.py), users and keys
(rag/store/users.py), rules per chunk (a page is the unit).
"""
import math
import re
from collections import namedtuple

K1, B = 1.2, 0.75  # BM25 as FTS5 computes it
HEADING_WEIGHT = 2.0  # bm25(fts, 2.0, 1.0): a heading word counts twice over a body word

# groups: None = reads everything; a tuple = open pages + these groups
Reader = namedtuple("Reader", "name groups")
EVERYTHING = Reader("", None)
GROUP = re.compile(r"[\w][\w.-]*")  # a group name: letters, digits, _ . - (e.g. personal, it-ops)

SQLITE_TABLE = ("CREATE TABLE IF NOT EXISTS access (path TEXT NOT NULL, grp TEXT NOT NULL, "
                "PRIMARY KEY (path, grp));")
POSTGRES_TABLE = ("CREATE TABLE IF NOT EXISTS access (path text NOT NULL, grp text NOT NULL, "
                  "PRIMARY KEY (path, grp));")


def rows(path, groups):
    """The access rows of one page: none for an open page (groups None), else the mark and one row
    per group."""
    if groups is None:
        return []
    return [(path, "")] + [(path, g) for g in sorted(set(groups))]


def rules(pairs):
    """{path: (groups…)} from (path, grp) rows.

    Example: [("a.md", ""), ("a.md", "hr")] -> {"a.md": ("hr",)}
    """
    found = {}
    for path, grp in pairs:
        found.setdefault(path, [])
        if grp:
            found[path].append(grp)
    return {path: tuple(sorted(groups)) for path, groups in found.items()}


def groups_of(reader):
    """The groups to filter by, None for a reader of everything.

    Example: Reader("jana", ["hr"]) -> ("hr",)
    """
    if reader is None or reader.groups is None:
        return None
    return tuple(sorted(set(reader.groups)))


def hidden_sql(groups, mark):
    """(SQL selecting the paths hidden from these groups, its parameters); mark: "?" (SQLite) or
    "%s"."""
    if mark == "%s":
        return ("SELECT path FROM access WHERE grp = '' AND path NOT IN "
                "(SELECT path FROM access WHERE grp = ANY(%s))", [list(groups)])
    return ("SELECT path FROM access WHERE grp = '' AND path NOT IN "
            f"(SELECT path FROM access WHERE grp IN ({','.join('?' * len(groups))}))",
            list(groups))


def changed(old, new):
    """The paths whose rule differs: {path: groups or None}.

    Example: {"a.md": ("hr",)}, {} -> {"a.md": None}
    """
    out = {path: new.get(path) for path in old if old[path] != new.get(path)}
    out.update({path: groups for path, groups in new.items()
                if groups is not None and old.get(path) != groups})
    return out


def idf(total, df):
    """BM25's inverse document frequency as FTS5 computes it (≤ 0 becomes 1e-6).

    Example: idf(10, 1) -> 1.8458…
    """
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def bm25(heading, body, phrases, idfs, avgdl):
    """One chunk's BM25 as FTS5's bm25(fts, 2.0, 1.0) computes it (ext/fts5/fts5_aux.c), from its
    search text (its words are FTS5's tokens: rag/text/german.py writes them) with the given IDF per
    phrase (word, prefix?).

    Example: bm25("drucker", "toner wechseln", [("drucker", False), ("ton", True)], [2.0, 1.0], 3.0)
             -> 2.0 * 4.4 / 3.2 + 1.0 * 2.2 / 2.2 = 3.75
    """
    weights, length = {}, 0
    for weight, text in ((HEADING_WEIGHT, heading), (1.0, body)):
        for word in text.split():
            weights[word] = weights.get(word, 0.0) + weight
            length += 1
    norm = K1 * (1 - B + B * length / avgdl)
    score = 0.0
    for (word, prefix), idf_ in zip(phrases, idfs):
        freq = (sum(w for t, w in weights.items() if t.startswith(word)) if prefix
                else weights.get(word, 0.0))
        score += idf_ * (freq * (K1 + 1.0) / (freq + norm))
    return score
