"""Every number that tunes the search and the answer, in one table (rag/tuned.toml), each with where
it comes from.

    value("support.SUPPORT")        -> 0.5
    TABLE["support.SUPPORT"].how    -> "by hand"   (TABLE[…].why says why it was not measured)
    EMBED_MODELS["multilingual-e5-small-q4_0.gguf"].value["floor_cosine"]  -> 0.862

Each Number says how it was set:
    fit       a command chose it on named sets by a stated rule (`evaluate.py … --tune`)
    measured  a command compared a few values on named sets; this one won
    by hand   typed in; `why` gives the reason (a number from the literature, a reference for the
              others, a bound that no set has tested)
with the command, the sets, the commit and its date, and the figures per corpus as docs/ report
them. The modules read their numbers from here (rag/search/ranking.py, rag/answer/choose.py,
rag/check/support.py …) and keep their names, so the code reads as before. `ask_rag.py --explain`
without a question prints the table.

Precedence, as before: a number stored with the index (`evaluate.py --tune --store`: vector weight
and cosine thresholds) wins over EMBED_MODELS, and a threshold stored in the cache (`evaluate.py
--answerable --tune --store`, `--judge --tune --store`) over ANSWER_MODELS, for the model it names;
a flag wins over both.

Does not handle: numbers that only size a thing without tuning it (timeouts, token limits, how many
lines).
"""
import tomllib
from collections import namedtuple
from pathlib import Path

Number = namedtuple("Number", "value how command sets commit figures why",
                    defaults=("", "", "", "", ""))

HOW = {"fit": "angepasst", "measured": "gemessen", "by hand": "von Hand"}  # as --explain says it
TOML = Path(__file__).with_name("tuned.toml")  # the table, shipped with the package (read only)


def load(path=TOML):
    """(embedding models, answer models, numbers) of the table, each {name: Number}."""
    with open(path, "rb") as f:
        table = tomllib.load(f)
    return tuple({name: Number(**entry) for name, entry in table.get(section, {}).items()}
                 for section in ("embed_models", "answer_models", "numbers"))


EMBED_MODELS, ANSWER_MODELS, TABLE = load()


def value(name):
    """The number itself. Example: value("records.TOP_K") -> 4"""
    return TABLE[name].value


def rows():
    """(name, value, how, where it comes from) for every number, the per-model ones first
    (--explain)."""
    out = [(f"embed: {m}", n.value, n.how, n) for m, n in EMBED_MODELS.items()]
    out += [(f"answer: {m}", n.value, n.how, n) for m, n in ANSWER_MODELS.items()]
    return out + [(name, n.value, n.how, n) for name, n in TABLE.items()]
