"""reStructuredText (Sphinx) pages as the Markdown the chunker reads: titles, notes, code, tables.

    project = Project(Path("handbuch"), ["index.rst", "quota.rst"])
    text = "Quota\\n=====\\n\\n.. hint:: Erst prüfen.\\n\\n.. code:: bash\\n\\n   quota -s\\n"
    to_markdown("quota.rst", text, project)
    -> ("# Quota\\n\\nHinweis:\\nErst prüfen.\\n\\n```bash\\nquota -s\\n```\\n", [])

Section titles become # headings by the order a page uses their styles (headings.py), so chunks
carry heading paths ("Seite › Abschnitt") as Markdown pages do. Body elements (blocks.py),
explicit markup (directives.py), grid and simple tables (tables.py) and inline markup (inline.py)
become plain Markdown; titles of other pages and labels, includes and substitutions come from
project.py. No directive, option or role syntax is left in the text; what a reader of the built
page does not see (comments, targets, raw HTML, authors) is dropped.

Standard library only. Does not handle: Sphinx's conf.py, extensions' own directives and roles
(their body or text is shown), docutils' error recovery (malformed markup is read as text).
"""
from rag.ingest.rst import blocks
from rag.ingest.rst.project import Project  # noqa: F401  (what callers build once per run)

SUFFIX = ".rst"


def is_rst(name):
    """Is this a reStructuredText page? Example: "a/INDEX.RST" -> True, "a.md" -> False"""
    return name.lower().endswith(SUFFIX)


def to_markdown(rel, text, project):
    """(Markdown of the reST page `rel` with `text`, [German problem lines]); see above."""
    page = project.page(rel, text)
    lines = blocks.convert(page.lines, page)
    return "\n".join(lines) + "\n" if lines else "", page.problems
