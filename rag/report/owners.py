"""Who looks after a page, as the wiki says: front matter `owner:`, else the nearest `.owner` file.

    wiki/mail/.owner           "team-mail\n"
    wiki/mail/quota.md         no owner line             -> ("team-mail",)
    wiki/mail/archiv.md        "owner: [jana, team-it]"  -> ("jana", "team-it")   (the page's wins)
    wiki/drucker.md            no owner anywhere         -> ()   (the report: "kein Owner gesetzt")

A `.owner` file holds one owner a line (`#` starts a comment) and counts for its folder and every
folder below, unless one there has its own; an owner is whatever the wiki writes (a person, a
team, an address). Read at report time from the wiki folder (ask_rag.py --wiki), not from the
index: a changed owner needs no index run.

Does not handle: owners of PDF, HTML or Office pages other than by their folder's `.owner` (they
have no front matter), owners per section.
"""
from pathlib import Path

from rag.ingest.access_rules import head_yaml
from rag.ingest.pages import yaml_list

NONE = "kein Owner gesetzt"  # what the report says for a page without an owner


def folder_owners(path):
    """The owners of one `.owner` file.

    Example: "# Mail\\nteam-mail\\n\\njana\\n" -> ("jana", "team-mail")
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(sorted({line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}))


class Owners:
    """owners(path) for the pages of one wiki folder, each `.owner` file read once."""

    def __init__(self, wiki):
        self.wiki = Path(wiki) if wiki else None
        self.folders = {}

    def inherited(self, folder):
        if folder not in self.folders:
            own = self.wiki / folder / ".owner"
            if own.is_file():
                self.folders[folder] = folder_owners(own)
            else:
                self.folders[folder] = () if folder == Path(".") else self.inherited(folder.parent)
        return self.folders[folder]

    def __call__(self, path):
        """The owners of a page (index path, relative to the wiki), sorted; () when none is set."""
        if self.wiki is None or not self.wiki.is_dir():
            return ()
        own = yaml_list(head_yaml(self.wiki / path), "owner")
        return tuple(sorted(set(own))) if own else self.inherited(Path(path).parent)


def describe(owners):
    """Example: ("jana", "team-it") -> "jana, team-it"; () -> "kein Owner gesetzt" """
    return ", ".join(owners) if owners else NONE
