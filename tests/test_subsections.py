"""A how-to source without steps joined with the subsections below it that hold them
(rag/search/subsections.py)."""
import pytest

from conftest import load_json, run_script, write_wiki
from rag.search import subsections
from rag.search.ranking import Source
from rag.store.base import Row

PAGE = [  # (chunk_index, heading, content) of one page, as the store holds it
    (0, "MariaDB", "Fehler nach einem Stromausfall."),
    (1, "MariaDB › Lösungsansatz", "Achtung: vorher ein Backup anlegen."),
    (2, "MariaDB › Lösungsansatz › Schritte", "1. Per SSH anmelden.\n2. `ib_logfile0` verschieben."),
    (3, "MariaDB › Lösungsansatz › Schritte", "3. `service mysql start`"),
    (4, "MariaDB › Lösungsansatzliste", "1. Nicht darunter.\n2. Nur ähnlich benannt."),
]


class Page:
    """A store's ids_below() and sources() over {path: PAGE-like rows}; a page the reader may not read is absent."""
    def __init__(self, pages):
        self.rows = {f"{path}#{i}": Row(f"{path}#{i}", path, i, h, c, "[]")
                     for path, rows in pages.items() for i, h, c in rows}

    def ids_below(self, prefix):
        return {doc_id for doc_id, row in self.rows.items() if row.path.startswith(prefix)}

    def sources(self, doc_ids):
        return {doc_id: self.rows[doc_id] for doc_id in doc_ids}


def source(path, chunk_index, heading, content):
    return Source(f"{path}#{chunk_index}", path, chunk_index, heading, content, [], cosine=0.9)


def test_a_parent_without_steps_gets_its_subsections_under_their_headings():
    index = Page({"db.md": PAGE, "db.md.alt": [(0, "MariaDB › Lösungsansatz › Alt", "1. Alt.\n2. Alt.")]})
    parent = source("db.md", 1, "MariaDB › Lösungsansatz", "Achtung: vorher ein Backup anlegen.")
    (joined,) = subsections.join(index, [parent])
    assert (joined.heading, joined.chunks, joined.cosine) == ("MariaDB › Lösungsansatz", (1, 2, 3), 0.9)
    assert joined.content == ("Achtung: vorher ein Backup anlegen.\n\n### Schritte\n\n"
                              "1. Per SSH anmelden.\n2. `ib_logfile0` verschieben.\n\n3. `service mysql start`")


@pytest.mark.parametrize("content, rows, max_chars", [
    ("1. Schon Schritte.\n2. Noch einer.", PAGE, 4000),  # the parent has steps itself
    ("Achtung: Backup.", [r for r in PAGE if r[0] != 2 and r[0] != 3], 4000),  # no subsection below it
    ("Achtung: Backup.", [(1, "MariaDB › Lösungsansatz", "x"), (2, "MariaDB › Lösungsansatz › Hinweis", "Nur Text.")],
     4000),  # the subsection has no steps either
    ("Achtung: Backup.", PAGE, 60),  # too long together
])
def test_a_parent_stays_alone(content, rows, max_chars):
    parent = source("db.md", 1, "MariaDB › Lösungsansatz", content)
    assert subsections.join(Page({"db.md": rows}), [parent], max_chars=max_chars) == [parent]


def test_a_parent_whose_subsection_came_first_stays_alone_and_the_subsection_stays_a_candidate():
    child = source("db.md", 2, "MariaDB › Lösungsansatz › Schritte", "1. Per SSH anmelden.\n2. `ib_logfile0` verschieben.")
    parent = source("db.md", 1, "MariaDB › Lösungsansatz", "Achtung: vorher ein Backup anlegen.")
    assert subsections.join(Page({"db.md": PAGE}), [child, parent]) == [child, parent]
    joined, later = subsections.join(Page({"db.md": PAGE}), [parent, child])
    assert joined.chunks == (1, 2, 3) and later is child


def test_a_how_to_question_gets_the_steps_below_the_parent_through_the_core(store_env, tmp_path):
    wiki = write_wiki(tmp_path / "kb", {"mariadb.md": """\
        # MariaDB startet nicht

        ## Möglicher Lösungsansatz

        Achtung: Lege vorher ein Backup der Datenbank an.

        ### Schritt-für-Schritt-Anleitung

        1. Per SSH als root anmelden.
        2. Die Datei `ib_logfile0` nach `/tmp` verschieben.
        3. `service mysql start` ausführen.
        """})
    assert run_script("build_index.py", "--wiki", str(wiki), env=store_env).returncode == 0
    found = load_json(run_script("ask_rag.py", "--retrieve-only", "--json", "--top-k", "4",
                                 "Wie behebe ich das mit einem Lösungsansatz für MariaDB?", env=store_env).stdout)
    parent = next(s for s in found["sources"] if s["heading"] == "MariaDB startet nicht › Möglicher Lösungsansatz")
    assert len(parent["chunks"]) == 2  # its own chunk and the steps' chunk below it
