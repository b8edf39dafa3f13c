#!/usr/bin/env python3
"""Leak test for the permissions (docs/rechte.md): do private pages reach anyone without the right, through any door?

    python3 scripts/leak_test.py                                    # wiki/, a copy with canary pages added
    python3 scripts/leak_test.py --wiki mein-wiki --users users.toml # your wiki and your users, before going live

It copies the wiki into a temporary folder and adds canary pages (made-up names and numbers, the same for the
same --seed) below leak-test-geheim/ (a .access file) and one page with its own `access:` line; builds an index
there; starts `ask_rag.py --serve` with --trust-proxy-header, so it can ask as every user of the users file
(X-Forwarded-User from 127.0.0.1; groups from the file) plus three of its own; then asks questions aimed at the
canaries through every door: the page (plain, folder filter, follow-up), the OpenAI API (plain and streamed),
the folder lists, the terminal with --as and MCP (search_wiki, ask_wiki). No byte of a canary may reach a user
without the right; the user with the right must find the canary pages. Then it gives one more group the right,
re-indexes incrementally and checks both directions again. Exit code 1 on any leak.

Needs: the embedder of build_index.py (RAG_EMBED_MODEL, LLAMA_EMBEDDING …) and an answer server (LLAMA_SERVER_URL).
Does not handle: an index in PostgreSQL (it builds a SQLite copy), rules of groups no user has.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rag.store import users  # noqa: E402

FOLDER = "leak-test-geheim"
OWN = {"leak-mit": [FOLDER], "leak-ohne": ["leak-b"], "leak-andere": ["leak-c"]}  # right, later right, never
TOPICS = [("Geheimprojekt", "Das Geheimprojekt {word} hat ein Budget von {number} Euro."),
          ("Gehaltsband", "Das Gehaltsband {word} liegt bei {number} Euro im Jahr."),
          ("Abmahnung", "Die Abmahnung gegen {word} hat das Aktenzeichen {number}.")]
QUESTIONS = ["Wie hoch ist das Budget des Geheimprojekts?", "Wie heißt das Geheimprojekt?",
             "Wo liegt das Gehaltsband im Jahr?", "Welches Aktenzeichen hat die Abmahnung?", "Gegen wen gibt es eine Abmahnung?",
             "Geheimprojekt Budget Euro", "Gehaltsband", "Abmahnung Aktenzeichen"]
AIMED = [QUESTIONS[0], QUESTIONS[2], QUESTIONS[3]]  # one straight at each canary page: the reader with the right

def canaries(seed):
    """[(rel, text, secrets)]: pages with made-up words and numbers. Example: seed 30 -> word "Wexquorl", …"""
    rng = random.Random(seed)
    out = []
    for n, (topic, sentence) in enumerate(TOPICS):
        word = "".join(rng.choice("bdfgklmnprstvwxz") + rng.choice("aeiou") for _ in range(4)).capitalize()
        number = str(rng.randint(100000, 999999))
        rel = f"{FOLDER}/seite-{n}.md" if n < 2 else "leak-test-eigene-regel.md"
        head = f"---\naccess: [{FOLDER}]\n---\n" if n == 2 else ""
        out.append((rel, f"{head}# {topic}\n\n{sentence.format(word=word, number=number)}\n", [word, number, rel]))
    return out


def prepare(args, tmp):
    """The wiki copy with canaries, the users file (yours + three of our own); returns (wiki, users file, secrets)."""
    wiki = tmp / "wiki"
    shutil.copytree(args.wiki, wiki)
    pages = canaries(args.seed)
    (wiki / FOLDER).mkdir()
    (wiki / FOLDER / ".access").write_text(f"{FOLDER}\n", encoding="utf-8")
    for rel, text, _ in pages:
        (wiki / rel).write_text(text, encoding="utf-8")
    path = tmp / "users.toml"
    if args.users:
        shutil.copy(args.users, path)
    for name, groups in OWN.items():
        users.add_user(str(path), name, groups)
    return wiki, path, [s for _, _, found in pages for s in found]


def run(args, *argv, env=None, stdin=None):
    return subprocess.run([sys.executable, *map(str, argv)], cwd=ROOT, capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})}, timeout=args.timeout)


class Server:
    """`ask_rag.py --serve` on a free port that trusts X-Forwarded-User from 127.0.0.1."""

    def __init__(self, db, path):
        self.process = subprocess.Popen([sys.executable, str(ROOT / "ask_rag.py"), "--serve", "--port", "0", "--db", db,
                                         "--users", str(path), "--trust-proxy-header", "--no-audit"], cwd=ROOT,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.process.stdout:
            if line.startswith("Web-Seite: "):
                self.url = line.split()[1].rstrip("/")
            if line.startswith("Antwort-Server: "):  # the rest of its output is read away, so it never blocks
                threading.Thread(target=self.process.stdout.read, daemon=True).start()
                return
        raise SystemExit("Fehler: ask_rag.py --serve startet nicht – erst python3 ask_rag.py --serve allein prüfen")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def doors(args, server, db, path, name, questions):
    """Every text that the page, the API, the folder lists, the terminal and MCP hand to `name`: [(door, text)]."""
    head = {"X-Forwarded-User": name}
    got = [("Ordnerliste", requests.get(server.url + "/api/folders", headers=head, timeout=30).text),
           ("/v1/models", requests.get(server.url + "/v1/models", headers=head, timeout=30).text)]
    history = [{"role": "user", "content": questions[0]}, {"role": "assistant", "content": "Dazu?"}]
    for question in questions:
        for door, body in (("Seite", {"question": question}), ("Seite, Ordner", {"question": question, "under": FOLDER}),
                           ("Seite, Folgefrage", {"question": "Und wie genau?", "history": history})):
            reply = requests.post(server.url + "/api/ask", json=body, headers=head, timeout=args.timeout)
            got.append((door, f"{reply.status_code} {dict(reply.headers)} {reply.text}"))
        for stream in (False, True):
            reply = requests.post(server.url + "/v1/chat/completions", headers=head, timeout=args.timeout, json={
                "model": f"wiki/{FOLDER}", "stream": stream, "messages": [{"role": "user", "content": question}]})
            got.append(("API" + (", Stream" if stream else ""), f"{reply.status_code} {dict(reply.headers)} {reply.text}"))
        terminal = run(args, "ask_rag.py", "--db", db, "--users", path, "--as", name, "--no-audit", "--json", question)
        got.append(("Terminal --as", terminal.stdout + terminal.stderr))
    calls = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}] + [
        {"jsonrpc": "2.0", "id": n + 2, "method": "tools/call", "params": {"name": tool, "arguments": {key: q}}}
        for n, (tool, key, q) in enumerate((t, k, q) for q in questions for t, k in (("search_wiki", "query"),
                                                                                   ("ask_wiki", "question")))]
    mcp = run(args, "ask_rag.py", "--mcp", "--db", db, "--users", path, "--as", name, "--no-audit",
              stdin="".join(json.dumps(c) + "\n" for c in calls))
    return got + [("MCP", mcp.stdout + mcp.stderr)]


def check(args, server, db, path, secrets, allowed, denied):
    """(leaks [(user, door, secret)], answers counted for the users without the right, found by those with it)."""
    leaks, asked, found = [], 0, 0
    for name in denied:
        for door, text in doors(args, server, db, path, name, QUESTIONS):
            asked += 1
            leaks += [(name, door, s) for s in secrets if s.lower() in text.lower()]
    for name in allowed:
        texts = " ".join(text for _, text in doors(args, server, db, path, name, AIMED))
        found += sum(s in texts for s in secrets[1::3])  # the numbers
    return leaks, asked, found


def round_of(args, wiki, db, path, secrets, allowed, denied, label):
    build = run(args, "build_index.py", "--wiki", wiki, "--db", db, "--users", path, "--quiet")
    if build.returncode != 0:
        raise SystemExit(build.stderr.strip() or build.stdout.strip())
    server = Server(db, path)
    try:
        leaks, asked, found = check(args, server, db, path, secrets, allowed, denied)
    finally:
        server.stop()
    print(f"{label}: {asked} Antworten an {len(denied)} Benutzer ohne Recht, {len(leaks)} mit Kanarien-Bytes; "
          f"Benutzer mit Recht ({', '.join(allowed)}): {found} von {3 * len(allowed)} Kanarien-Zahlen gefunden")
    for name, door, secret in leaks[:20]:
        print(f"  LECK: {name} · {door} · {secret}")
    return not leaks and found == 3 * len(allowed)


def main():
    parser = argparse.ArgumentParser(description="Leck-Test der Rechte: Kanarienseiten, jede Tür, jeder Benutzer.")
    parser.add_argument("--wiki", default=os.environ.get("RAG_WIKI", "wiki"), help="das Wiki (RAG_WIKI; wird kopiert)")
    parser.add_argument("--users", default=os.environ.get("RAG_USERS"), help="eure Benutzerdatei (RAG_USERS; optional)")
    parser.add_argument("--seed", type=int, default=30, help="erzeugt die erfundenen Kanarienwörter (Standard: 30)")
    parser.add_argument("--timeout", type=int, default=300, help="Sekunden je Frage (Standard: 300)")
    args = parser.parse_args()
    if not Path(args.wiki).is_dir():
        raise SystemExit(f"Fehler: Wiki-Ordner {args.wiki} nicht gefunden – --wiki angeben")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rag-leak-") as folder:
        tmp = Path(folder)
        try:
            wiki, path, secrets = prepare(args, tmp)
        except users.UsersError as exc:
            raise SystemExit(f"Fehler: {exc}")
        theirs = [n for n, u in users.load(str(path)).items() if FOLDER not in u.groups]
        db = str(tmp / "knowledge.db")
        ok = round_of(args, wiki, db, path, secrets, ["leak-mit"], theirs, "Vorher")
        (wiki / FOLDER / ".access").write_text(f"{FOLDER}\nleak-b\n", encoding="utf-8")  # leak-ohne gets the right
        (wiki / "leak-test-eigene-regel.md").write_text(canaries(args.seed)[2][1].replace(
            f"access: [{FOLDER}]", f"access: [{FOLDER}, leak-b]"), encoding="utf-8")
        ok = round_of(args, wiki, db, path, secrets, ["leak-mit", "leak-ohne"],
                      [n for n in theirs if n != "leak-ohne"], "Nach Regeländerung") and ok
    print(f"Leck-Test {'bestanden' if ok else 'NICHT bestanden'} ({time.monotonic() - started:.0f} s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
