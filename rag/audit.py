"""The audit trail: one JSON line per answer, so an answer can be traced to the exact text it used.

    append("knowledge.audit.jsonl", {"question": …, "chunks": [{"path", "heading", "sha256"}], …})
    show("knowledge.audit.jsonl", -1)   # the newest entry, readable

Each entry holds the chunks' content hashes and the prompt's hash: even after the wiki changed,
`sha256(content)` of a chunk tells whether the answer rested on today's text.

Does not handle: rotation, locking between several writers (lines are appended in one write).
"""
import hashlib
import json
import os


def default_path(db_path):
    """knowledge.db -> knowledge.audit.jsonl, next to the index."""
    root, _ = os.path.splitext(db_path)
    return root + ".audit.jsonl"


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def append(path, entry):
    line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


def read(path):
    if not os.path.exists(path):
        raise SystemExit(f"Fehler: Audit-Log {path} gibt es noch nicht – erst eine Frage stellen (ohne --no-audit).")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def show(path, number):
    """Entry `number` (1 = oldest, -1 = newest) as readable German text."""
    entries = read(path)
    if not entries or number == 0 or abs(number) > len(entries):
        raise SystemExit(f"Fehler: Eintrag {number} gibt es nicht – das Audit-Log hat {len(entries)} Einträge.")
    e = entries[number - 1 if number > 0 else number]
    lines = [f"Zeit:      {e.get('time')}",
             f"Frage:     {e.get('question')}",
             f"Server:    {e.get('server')} (Modell {e.get('model')})",
             f"Suche:     {e.get('mode')}, Stufe {e.get('strategy')}",
             f"Prompt:    sha256 {e.get('prompt_sha256')}",
             "Quellen:"]
    for n, chunk in enumerate(e.get("chunks", []), start=1):
        lines.append(f"  [{n}] {chunk['path']} › {chunk['heading']} (Chunk {chunk['chunk_index']}, "
                     f"sha256 {chunk['sha256'][:12]}…)")
    lines += [f"Antwort:   {e.get('answer')}",
              f"Zitate:    {json.dumps(e.get('citations'), ensure_ascii=False)}",
              f"Zeiten:    {json.dumps(e.get('timings'), ensure_ascii=False)}"]
    return "\n".join(lines)
