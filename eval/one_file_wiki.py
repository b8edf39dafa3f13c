#!/usr/bin/env python3
"""Make a one-big-file test wiki from wiki/: every Markdown page becomes one H1 section of
`handbuch.md`, and eval/questions.jsonl is rewritten to expect that file.

    python3 eval/one_file_wiki.py OUT            # OUT/wiki/handbuch.md, OUT/questions.jsonl
    python3 build_index.py --wiki OUT/wiki --db OUT/knowledge.db
    python3 evaluate.py --db OUT/knowledge.db --questions OUT/questions.jsonl --comparable 0

A law book or a manual exported as one PDF looks like this: most answers sit in one file, so a hard
per-file cap (rag/search/ranking.py MAX_PER_FILE) would push right answers out of the top k. The headings
keep their parts, so a question's expected heading still names its section.

Does not handle: pages other than Markdown (PDF/HTML/Word pages are left out).
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*\n", re.S)


def section(text, name):
    """One page as an H1 section of the big file: its own H1, else its front matter title (else
    its file name) as H1 with the page's headings one level down.

    Example: section("---\\ntitle: VPN\\n---\\n## Linux\\nText", "vpn") -> "# VPN\\n\\n### Linux\\nText\\n"
    """
    match = FRONT_MATTER.match(text)
    title = name
    if match:
        found = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", match.group(1) or "", re.M)
        title = found.group(1) if found and found.group(1) else name
        text = text[match.end():]
    text = text.strip()
    if not text.startswith("# "):
        text = f"# {title}\n\n" + re.sub(r"^(#{1,5}) ", r"#\1 ", text, flags=re.M)
    return text + "\n"


def main():
    if len(sys.argv) != 2:
        raise SystemExit("Aufruf: python3 eval/one_file_wiki.py ZIELORDNER")
    out = Path(sys.argv[1])
    (out / "wiki").mkdir(parents=True, exist_ok=True)
    pages = sorted(p for p in (ROOT / "wiki").rglob("*.md"))
    kept = {p.relative_to(ROOT / "wiki").as_posix() for p in pages}
    (out / "wiki" / "handbuch.md").write_text("\n".join(section(p.read_text(encoding="utf-8"), p.stem) for p in pages),
                                            encoding="utf-8")
    lines = []
    for line in (ROOT / "eval" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        if any(e["file"] not in kept for e in item["expected"]):
            continue  # answered by a page that is not Markdown
        item["expected"] = [{**e, "file": "handbuch.md"} for e in item["expected"]]
        lines.append(json.dumps(item, ensure_ascii=False))
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(pages)} Seiten → {out / 'wiki' / 'handbuch.md'}; {len(lines)} Fragen → {out / 'questions.jsonl'}")


if __name__ == "__main__":
    main()
