"""Who may read a page, as the wiki says it: a page's front matter `access: [...]`, else the nearest
`.access` file in its folder or a folder above it (one group a line, `#` starts a comment).

    wiki/personal/.access          "personal\nleitung\n"
    wiki/personal/gehalt.md        no access line          -> ("leitung", "personal")
    wiki/personal/offen.md         "access: [alle-leser]"  -> ("alle-leser",)
                                                               (the page's own line wins)
    wiki/vpn.md                    no rule anywhere        -> None              (open to everyone)

An empty `.access` file (or `access: []`) means: nobody but a reader of everything. The rules go
into the index with the pages (rag/store/access.py); a changed rule is written by the next run
without new embeddings. A malformed rule stops the run with one German line naming file and line; a
group no user has (known_groups) is a warning.

Does not handle: deny rules, rules per section, wildcards, YAML beyond `access:` as a list.
"""
import re
from pathlib import Path

from rag.ingest.pages import FRONT_MATTER, LEADING, warn, yaml_list
from rag.store.access import GROUP

ACCESS_LINE = re.compile(r"^access:", re.M)
HEAD_BYTES = 20000  # the front matter is read from the first bytes of a page


class RuleError(Exception):
    """A rule file or line that cannot be read; the message is German and names file and line."""


def folder_rule(path):
    """The groups of one `.access` file, sorted. Example: "# HR\\npersonal\\n\\nleitung\\n"
    -> ("leitung", "personal")"""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"Rechte-Datei {path} nicht lesbar ({exc}) – als UTF-8-Text speichern")
    groups = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line and not GROUP.fullmatch(line):
            raise RuleError(f"Rechte-Datei {path}, Zeile {number}: „{line[:40]}“ ist kein "
                            f"Gruppenname – eine Gruppe pro Zeile, nur Buchstaben, Ziffern, "
                            f"_ . -")
        if line:
            groups.add(line)
    return tuple(sorted(groups))


def head_yaml(path):
    """The YAML text of a page's front matter ("" without one; only .md and .txt pages have one)."""
    if path.suffix.lower() not in (".md", ".txt"):
        return ""
    try:
        if not path.is_file():  # a FIFO or a device: pages.py skips it, and reading it would block
            return ""
        with open(path, "rb") as page:
            raw = page.read(HEAD_BYTES)
    except OSError:
        return ""
    # as pages.py reads it: UTF-16 with a byte order mark
    utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
    head = raw.decode("utf-16" if utf16 else "utf-8", errors="replace").lstrip("\ufeff")
    head = head.replace("\r\n", "\n")
    # also after blank or image lines, as pages.py
    match = FRONT_MATTER.match(head[LEADING.match(head).end():])
    return (match.group(1) or "") if match else ""


def page_rule(path, rel):
    """The groups of a page's own `access:` front matter line, or None without one."""
    yaml = head_yaml(path)
    found = ACCESS_LINE.search(yaml)
    if not found:
        return None
    groups = yaml_list(yaml, "access")
    for name in groups:
        if not GROUP.fullmatch(name):
            number = yaml[:found.start()].count("\n") + 2  # the front matter starts after "---"
            raise RuleError(f"Seite {rel}, Zeile {number}: „{name[:40]}“ in access: ist kein "
                            f"Gruppenname – z. B. access: [personal, leitung]")
    return tuple(sorted(set(groups)))


def read_rules(wiki, rels, known_groups=None):
    """{path: groups or None} for these pages of the wiki (see the module docstring); RuleError when
    malformed.

    known_groups: the groups of the users file; a rule naming another group is warned about, once
    each.
    """
    wiki, folders, out = Path(wiki), {}, {}

    def inherited(folder):
        if folder not in folders:
            own = wiki / folder / ".access"
            if own.is_file():
                folders[folder] = folder_rule(own)
            else:
                folders[folder] = None if folder == Path(".") else inherited(folder.parent)
        return folders[folder]

    for rel in sorted(rels):
        own = page_rule(wiki / rel, rel)
        out[rel] = own if own is not None else inherited(Path(rel).parent)
    if known_groups is not None:
        unknown = sorted({g for groups in out.values() if groups
                          for g in groups} - set(known_groups))
        for group in unknown:
            warn(f"Gruppe „{group}“ steht in einer Rechte-Regel, aber bei keinem Benutzer der "
                 "Benutzerdatei")
    return out
