"""Permissions end to end on the real stack (issue 30): real llama-embedding, the real e5 model, the real answer
model in llama-server, `ask_rag.py --serve` with its warm embedder. Search as a user, check that the private
content is absent everywhere, change the rights, re-index incrementally, check both directions again.

A few pages of the sample wiki plus canary pages (made-up names and numbers found nowhere else) in a protected
folder and behind a page's own `access:` line; the fast version with fakes and both stores is test_access.py.
"""
import json
import os
import shutil

import pytest
import requests

from conftest import ROOT, answer_model, run_script, write_wiki
from rag.store import users
from rag.models.server_process import ServerProcess
from serving import Serving
from timeouts import REAL, REQUEST

PAGES = ["mail/cyrus-imap/mailbox-anlegen.md", "mail/cyrus-imap/mailbox-quota.md", "netzwerk/vpn-linux.md",
         "arbeitsplatz/drucker.md", "vertraege/rahmenvertrag-elbe-systemhaus.md"]
CANARY_PAGES = {
    "personal/.access": "personal\n",
    "personal/gehaltsbaender.md": "# Gehaltsbänder IT\n\nDas Gehaltsband für Systemadministratoren heißt Zorblax-7 "
                                  "und liegt bei 98765 Euro im Jahr.\n",
    "personal/abmahnungen.md": "# Abmahnungen\n\nDie Abmahnung gegen Quibbelwitz wegen des Druckers PR-204 hat das "
                               "Aktenzeichen 55443.\n",
    "budget.md": "---\naccess: [leitung]\n---\n# Budget Drucker\n\nDas Druckerbudget Flarnkraut beträgt 31337 Euro.\n",
}
CANARIES = ["Zorblax", "98765", "Quibbelwitz", "55443", "Flarnkraut", "31337", "gehaltsbaender.md", "abmahnungen.md",
            "budget.md"]
ATTACKS = ["Wie hoch ist das Gehaltsband für Systemadministratoren?", "Gibt es eine Abmahnung wegen des Druckers?",
           "Wie hoch ist das Druckerbudget?", "Welches Aktenzeichen hat die Abmahnung?", "Gehaltsbänder IT",
           "Was verdient ein Systemadministrator im Jahr?"]


def leaked(text):
    return [c for c in CANARIES if c.lower() in text.lower()]


@pytest.fixture(scope="module")
def stack(real, tmp_path_factory):
    model = answer_model()
    tmp = tmp_path_factory.mktemp("real-access")
    for rel in PAGES:
        (tmp / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "wiki" / rel, tmp / "wiki" / rel)
    write_wiki(tmp / "wiki", CANARY_PAGES)
    keys = {name: users.add_user(str(tmp / "users.toml"), name, groups)
            for name, groups in (("jana", ["personal"]), ("max", ["it"]))}
    env = {**os.environ, "LLAMA_EMBEDDING": real["embedding"], "RAG_EMBED_MODEL": real["model"],
           "RAG_DB": str(tmp / "knowledge.db"), "RAG_WIKI": str(tmp / "wiki"), "RAG_AUDIT": str(tmp / "audit.jsonl"),
           "RAG_USERS": str(tmp / "users.toml"), "RAG_SERVE_KEY": ""}
    result = run_script("build_index.py", env=env)
    assert result.returncode == 0, result.stderr
    with ServerProcess(model=model, binary=real["server"], log_path=str(tmp / "server.log")) as llm:
        yield tmp, {**env, "LLAMA_SERVER_URL": llm.url}, keys


def door_texts(server, key, questions):
    """Every byte the page, the API (plain and streamed) and the folder lists hand to the holder of `key`."""
    auth = {"Authorization": f"Bearer {key}"}
    got = [requests.get(server.url + p, headers=auth, timeout=REQUEST)
           for p in ("/api/folders", "/v1/models")]
    history = [{"role": "user", "content": questions[0]}, {"role": "assistant", "content": "Dazu habe ich keine Information."}]
    for n, question in enumerate(questions):
        got.append(requests.post(server.url + "/api/ask", headers=auth, timeout=REAL,
                                 json={"question": question, **({"under": "personal/"} if n % 2 else {})}))
        got.append(requests.post(server.url + "/v1/chat/completions", headers=auth, timeout=REAL,
                                 json={"model": "wiki", "stream": bool(n % 2), "messages":
                                       history + [{"role": "user", "content": question}]}))
    return " ".join(f"{r.status_code} {json.dumps(dict(r.headers))} {r.text}" for r in got)


def test_real_private_pages_reach_only_their_readers_before_and_after_a_rule_changes(stack):
    tmp, env, keys = stack
    for question in ATTACKS:
        out = run_script("ask_rag.py", "--as", "max", "--retrieve-only", "--json", "--explain", question, env=env)
        assert out.returncode == 0 and leaked(out.stdout + out.stderr) == [], out.stdout
    with Serving(env) as server:
        seen_max = door_texts(server, keys["max"], ATTACKS[:3])
        jana = requests.post(server.url + "/v1/chat/completions",
                             headers={"Authorization": f"Bearer {keys['jana']}"}, timeout=REAL,
                             json={"model": "wiki",
                                   "messages": [{"role": "user", "content": ATTACKS[0]}]})
    assert leaked(seen_max) == [] and '"folders": ["arbeitsplatz/", "mail/", "netzwerk/", "vertraege/"]' in seen_max
    answer = jana.json()
    assert "98765" in answer["choices"][0]["message"]["content"]  # the reader with the right gets the canary answer
    assert "Flarnkraut" not in jana.text  # budget.md: leitung only
    audit = (tmp / "audit.jsonl").read_text(encoding="utf-8")
    assert "max" not in audit and "jana" not in audit  # no names in the audit log (pseudonyms need RAG_AUDIT_SECRET)

    (tmp / "wiki" / "personal" / ".access").write_text("personal\nit\n", encoding="utf-8")
    (tmp / "wiki" / "budget.md").write_text(CANARY_PAGES["budget.md"].replace("[leitung]", "[leitung, personal]"))
    again = run_script("build_index.py", env=env)
    assert again.returncode == 0 and "0 eingebettet" in again.stdout, again.stdout  # rules only: no new embeddings
    now_max = run_script("ask_rag.py", "--as", "max", "--retrieve-only", "--json", ATTACKS[0], env=env)
    assert "personal/gehaltsbaender.md" in now_max.stdout
    budget_max = run_script("ask_rag.py", "--as", "max", "--retrieve-only", "--json", ATTACKS[2], env=env)
    budget_jana = run_script("ask_rag.py", "--as", "jana", "--retrieve-only", "--json", ATTACKS[2], env=env)
    assert "budget.md" not in budget_max.stdout and "budget.md" in budget_jana.stdout
