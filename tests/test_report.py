"""The report for the wiki's authors (rag/report/): clustering, owners, hard-to-find, privacy,
rights, both stores, and the walk of a new user through --serve (4 users, 3 topics, a vote down,
--report --json).

Fakes: conftest's keyword-count llama-embedding (axes mailbox, vpn, drucker, passwort: two
questions of one topic have cosine 1.0, of two topics 0.5) and fake_server.py, which answers
"Dazu habe ich keine Information.".
"""
import contextlib
import json
import os
from datetime import datetime, timedelta, timezone

import pytest
import requests

from conftest import SMALL_WIKI, run_script, write_wiki
from fake_server import FakeLlamaServer
from rag import core
from rag import store
from rag.audit import log as audit
from rag.answer.prompt import NO_INFO
from rag.audit import feedback
from rag.doors import ratings
from rag.store import users
from rag.report import build, clusters, gaps, hard
from rag.report.markdown import markdown
from rag.report.owners import Owners
from serving import Serving

WIKI = {
    **SMALL_WIKI,
    "netzwerk/.owner": "# Netz\nteam-netz\n",
    "drucker.md": "---\nowner: hausdienst\n---\n# Drucker\n\nDer Drucker im 2. Stock heißt "
                  "PR-204.\n",
    "personal/passwort-tresor.md": "---\naccess: [personal]\nowner: [personalabteilung]\n---\n"
                                   "# Passwort-Tresor\n\nDas Passwort des Tresors der "
                                   "Personalabteilung liegt im Umschlag.\n",
}
USERS = {"jana": ["it", "personal"], "tom": ["it"], "lea": ["it"], "ole": ["it"]}
WALK = [  # 10 questions the wiki cannot answer, on 3 topics, by 4 users; then 2 more, by 2 users
    ("jana", "Wie richte ich das VPN auf dem Mac ein?"),
    ("tom", "Gibt es einen VPN-Client für macOS?"),
    ("lea", "Das VPN verbindet sich unter macOS nicht"),
    ("tom", "Wie bekomme ich VPN auf das iPad?"),
    ("jana", "Wie bestelle ich Toner für den Drucker?"), ("lea", "Welcher Drucker druckt A0?"),
    ("ole", "Kann ich einen Drucker im Homeoffice anschließen?"),
    ("jana", "Wo steht das Passwort des Tresors?"), ("ole", "Passwort für den Kopierer-Account?"),
    ("lea", "Wie lautet das Passwort für das Gäste-WLAN?"),
    ("tom", "Wie groß darf eine Mailbox für Azubis sein?"),
    ("ole", "Bekommen Praktikanten eine Mailbox?"),
]
SECRET = "audit-geheimnis-4711"
QUOTA_PAGES = {f"mail/quota-{w.lower()}.md": f"# Quota {w}\n\nDie Mailbox-Quota für {w} regelt "
                                             f"die IT.\n"
               for w in ("Praktikanten", "Azubis", "Vorstand", "Archiv", "Vertrieb", "Technik")}


def ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result


# -- units ------------------------------------------------------------------------------------
def test_groups_join_questions_of_one_topic_by_average_cosine():
    vpn, vpn2, between, printer = [1, 0], [0.99, 0.14], [0.8, 0.6], [0, 1]  # cosines: vpn·vpn2
    #  0.990, between·vpn 0.800, between·vpn2 0.876 (average 0.838), between·printer 0.600
    assert clusters.groups([printer, vpn, vpn2], 0.9) == [[1, 2], [0]]
    assert clusters.groups([vpn, vpn2, between, printer], 0.8) == [[0, 1, 2], [3]]  # 0.838 ≥ 0.8
    assert clusters.groups([vpn, vpn2, between, printer], 0.85) == [[0, 1], [2], [3]]  # not 0.876
    assert clusters.groups([vpn, printer], -1) == [[0, 1]] and clusters.groups([], 0.9) == []
    e5 = "multilingual-e5-small-q4_0.gguf"
    assert clusters.threshold_for(e5) == clusters.THRESHOLDS[e5]
    assert clusters.threshold_for("x.gguf") == clusters.THRESHOLD


def test_owners_come_from_the_page_else_the_nearest_owner_file(tmp_path):
    more = {".owner": "it-leitung\n", "netzwerk/tief/wlan.md": "# WLAN\n",
            "netzwerk/eigen.md": "---\nowner: jana, tom\n---\n# Eigen\n"}
    wiki = write_wiki(tmp_path / "wiki", {**WIKI, **more})
    owners = Owners(wiki)
    assert owners("drucker.md") == ("hausdienst",)
    assert owners("personal/passwort-tresor.md") == ("personalabteilung",)
    assert owners("netzwerk/vpn.md") == ("team-netz",) == owners("netzwerk/tief/wlan.md")
    assert owners("netzwerk/eigen.md") == ("jana", "tom")
    assert owners("mail/mailbox-anlegen.md") == ("it-leitung",)
    assert Owners(tmp_path / "fehlt")("drucker.md") == () and Owners(None)("drucker.md") == ()


@pytest.mark.parametrize("text, default, days", [
    ("30d", None, 30), ("7", 90, 7), (None, 90, 90), ("", None, None), ("alle", 30, None),
    (" 12d ", None, 12)])
def test_since_is_days(text, default, days):
    assert ratings.since_days(text, default) == days


@pytest.mark.parametrize("text", ["30 Tage", "-3d", "0d", "1w"])
def test_a_wrong_since_is_one_german_line(text):
    with pytest.raises(feedback.FeedbackError, match="Zeitraum"):
        ratings.since_days(text, None)


# -- in process, on an index built with the fake embedder ---------------------------------------
def line(question, user, days_ago=1, answer=NO_INFO, chunks=(), **more):
    when = (datetime.now(timezone.utc) - timedelta(days=days_ago)).isoformat(timespec="seconds")
    return {"id": audit.new_id(), "time": when, "question": question, "answer": answer,
            "user": user, "citations": None, **more,
            "chunks": [{"path": p, "heading": h, "sha256": "00"} for p, h in chunks]}


def write_log(path, lines):
    text = "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)
    path.write_text(text, encoding="utf-8")


def settings_for(env, audit_path, reader=None):
    return core.Settings(db=env["RAG_DB"], model=env["RAG_EMBED_MODEL"],
                         embedding_bin=env["LLAMA_EMBEDDING"], audit=str(audit_path), reader=reader)


@pytest.fixture
def indexed(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    ok(run_script("build_index.py", "--wiki", wiki, env=fake_embedding))
    return wiki, fake_embedding


def test_a_group_needs_three_askers_and_names_nobody(indexed, tmp_path):
    wiki, env = indexed
    log = tmp_path / "audit.jsonl"
    write_log(log, [line("VPN am Mac?", "p-1"), line("VPN am Mac?", "p-1"),
                    line("VPN auf macOS?", "p-2"), line("VPN für Linux-Mint?", "p-3"),  # 3 askers
                    line("Drucker A0?", "p-1"), line("Drucker A0?", "p-1"),
                    line("Drucker A3?", "p-2"),
                    line("Drucker im Lager?", None), line("Drucker zuhause?", None),  # no pseudonym
                    line("Passwort vom Tresor?", "p-1", answer="[vergessen]"),
                    line("VPN alt?", "p-4", days_ago=40), {"kaputt": True}])
    report = build.build(settings_for(env, log), wiki, days=30)
    assert (report["answers"], report["refused"], report["withheld"]) == (10, 9, 1)
    [group] = report["gaps"]
    assert (group["questions"], group["askers"]) == (4, 3) and group["examples"][0] == "VPN am Mac?"
    assert group["pages"][0] == "netzwerk/vpn.md" and group["folders"][0] == "netzwerk/"
    assert group["owners"]["netzwerk/vpn.md"] == ["team-netz"]
    text = json.dumps(report) + markdown(report)
    assert "p-1" not in text and "p-2" not in text  # no pseudonym
    assert "VPN alt" not in text  # not in the period
    everything = build.build(settings_for(env, log), wiki, days=None)
    assert everything["gaps"][0]["askers"] == 4 and everything["answers"] == 12


def test_examples_are_masked_again_and_no_text_means_no_group(indexed, tmp_path):
    wiki, env = indexed
    log = tmp_path / "audit.jsonl"
    asked = [line(f"VPN-Zugang für IBAN DE89 3704 0044 0532 0130 00 Nr. {n}?", f"p-{n}")
             for n in range(3)]
    write_log(log, asked)
    [group] = build.build(settings_for(env, log), wiki)["gaps"]
    assert all("[IBAN 1]" in q and "DE89" not in q for q in group["examples"])
    write_log(log, [audit.without_text(x) for x in asked])  # --audit-no-text: hashes only
    report = build.build(settings_for(env, log), wiki)
    assert (report["refused"], report["gaps"], report["withheld"]) == (3, [], 0)


def test_a_second_report_embeds_no_question_again_and_keeps_only_the_periods(indexed, tmp_path,
                                                                             monkeypatch):
    wiki, env = indexed
    log, prompts = tmp_path / "audit.jsonl", tmp_path / "prompts.jsonl"
    monkeypatch.setenv("FAKE_EMBED_PROMPTS", str(prompts))
    write_log(log, [line(q, f"p-{u}") for u, q in WALK])
    warmed = []

    @contextlib.contextmanager
    def warm(settings):  # as rag/doors/common.py warm_embedder: started only when something is new
        warmed.append(settings.db)
        yield
    first = build.build(settings_for(env, log), wiki, warm=warm)
    asked = prompts.read_text(encoding="utf-8").count("\n")
    gaps.cache.clear(), hard.kept.clear()  # as a new process: only what is kept beside the votes
    assert build.build(settings_for(env, log), wiki, warm=warm) == first
    assert prompts.read_text(encoding="utf-8").count("\n") == asked  # nothing embedded again
    assert warmed == [env["RAG_DB"]]  # the embedder started once, for the first report
    vectors = ("SELECT key FROM kept WHERE key LIKE ?", ("vectors:%",))
    kept = feedback.Table(env["RAG_DB"]).rows(*vectors)
    assert len(kept) == len(WALK)
    write_log(log, [line(q, f"p-{u}") for u, q in WALK[:4]])  # the others are gone (--audit-days)
    build.build(settings_for(env, log), wiki)
    kept = feedback.Table(env["RAG_DB"]).rows(*vectors)
    assert len(kept) == 4 and not any(q in json.dumps(kept) for _, q in WALK)  # hashes, no text


def test_hard_to_find_takes_any_questions_and_sees_the_readers_pages(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", {**WIKI, **QUOTA_PAGES})
    ok(run_script("build_index.py", "--wiki", wiki, env=fake_embedding))
    settings = settings_for(fake_embedding, tmp_path / "audit.jsonl")

    def printer_asked_badly(path, heading):
        return ["Mailbox Quota"] if path == "drucker.md" else hard.heading_questions(path, heading)
    index, meta, _ = core.open_index(settings)
    try:
        missed, checked = hard.hard_to_find(index, settings, meta)
        wrong, _ = hard.hard_to_find(index, settings, meta, printer_asked_badly)
    finally:
        index.close()
    assert missed == [] and checked == 11  # every heading finds its own section
    assert wrong == [{"path": "drucker.md", "heading": "Drucker", "questions": ["Mailbox Quota"]}]
    assert hard.heading_questions("a.md", "Mail › Quota › Sonderwerte") == ["Mail Sonderwerte"]
    assert hard.heading_questions("a.md", "Drucker") == ["Drucker"]
    assert hard.heading_questions("a.md", "") == []
    assert hard.heading_questions("t.xlsx", "t.xlsx › Telefon › Zeile 17") == []  # a row, no heading
    assert hard.heading_questions("t.md", "T › Zeile 17") == ["T Zeile 17"]
    reader = store.access.Reader("tom", ("it",))
    report = build.build(settings_for(fake_embedding, tmp_path / "audit.jsonl", reader), wiki,
                         reader=reader)
    assert report["sections"] == 10  # the personal page is not looked at for tom


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_build_embeds_each_sections_question_and_the_report_none(tmp_path, fake_embedding,
                                                                     pg_server, kind):
    from stores import Stores
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    env = {**fake_embedding, "RAG_DB": Stores(kind, tmp_path, pg_server).new(f"fragen_{kind}")}
    ok(run_script("build_index.py", "--wiki", wiki, env=env))
    settings = settings_for(env, tmp_path / "audit.jsonl")
    kept = ("SELECT key, value FROM kept WHERE key LIKE ?", ("headings:%",))

    def refused(*args):
        raise AssertionError("the report embedded a section's question")
    index, meta, _ = core.open_index(settings)
    try:
        asked = {q for s in hard.sections(index) for q in hard.heading_questions(*s)}
        found = hard.measure(index, settings, meta, hard.heading_questions, embed=refused)
        rows = feedback.Table(env["RAG_DB"]).rows(*kept)
        feedback.Table(env["RAG_DB"]).write(("DELETE FROM kept", ()))
        assert hard.measure(index, settings, meta, hard.heading_questions) == found  # embedded
    finally:
        index.close()
    assert len(rows) == len(asked) == 5 and found[0] == [] and found[1] >= 5
    assert not any(q in json.dumps(rows, ensure_ascii=False) for q in asked)  # hashes, no text
    (wiki / "drucker.md").write_text("# Drucker im Flur\n\nDer Drucker heißt PR-204.\n",
                                     encoding="utf-8")
    ok(run_script("build_index.py", "--wiki", wiki, env=env))
    keys = {k for k, _ in feedback.Table(env["RAG_DB"]).rows(*kept)}
    model = meta.get("embed_model")
    assert len(keys) == 5 and hard.headings.key(model, "Drucker im Flur") in keys
    assert hard.headings.key(model, "Drucker") not in keys  # the old heading's question went


def test_both_stores_give_the_same_report(tmp_path, fake_embedding, pg_server):
    from stores import Stores
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    log = tmp_path / "audit.jsonl"
    lines = [line(q, f"p-{u}", chunks=[("netzwerk/vpn.md", "VPN")]) for u, q in WALK]
    cited = [("mail/mailbox-anlegen.md", "Mailbox anlegen › Quota"), ("drucker.md", "Drucker")]
    lines.append(line("Wie groß ist die Quota?", "p-jana", answer="2 GB [1].",
                      citations={"valid": [1]}, chunks=cited))
    write_log(log, lines)
    reports = []
    for kind in ("sqlite", "postgres"):
        env = {**fake_embedding, "RAG_DB": Stores(kind, tmp_path, pg_server).new(f"gleich_{kind}")}
        ok(run_script("build_index.py", "--wiki", wiki, env=env))
        feedback.rate(env["RAG_DB"], lines[-1], -1, "Die Quota ist seit März 5 GB", voter="p-jana")
        feedback.rate(env["RAG_DB"], lines[0], 1, voter="p-jana")
        report = build.build(settings_for(env, log), wiki, days=30)
        reports.append(json.loads(json.dumps(report).replace(report["since"], "S")))
        for vote in reports[-1]["downvoted"]:
            vote["time"] = "T"
    assert reports[0] == reports[1]
    assert [g["questions"] for g in reports[0]["gaps"]] == [4, 3, 3] and reports[0]["withheld"] == 1
    assert reports[0]["downvoted"][0]["cited"] == [{"path": "mail/mailbox-anlegen.md",
                                                    "heading": "Mailbox anlegen › Quota"}]
    assert reports[0]["upvotes"] == 1


def test_a_refused_question_keeps_its_vector_and_the_report_embeds_it_no_more(indexed, tmp_path):
    """The question's vector is made when it is asked; the first report reuses it (a masked or a
    rewritten question keeps none: the log has another text than the one embedded)."""
    wiki, env = indexed
    log, prompts = tmp_path / "audit.jsonl", tmp_path / "prompts.jsonl"
    env = {**env, "RAG_AUDIT": str(log)}
    plain = [q for _, q in WALK[:4]]
    masked = "VPN-Zugang für IBAN DE89 3704 0044 0532 0130 00?"
    with FakeLlamaServer(answer=[NO_INFO]) as fake:
        for question in plain + [masked]:
            ok(run_script("ask_rag.py", question, env={**env, "LLAMA_SERVER_URL": fake.url}))
    kept = feedback.recall(env["RAG_DB"], [feedback.vector_key("fake-model.gguf", q)
                                           for q in plain + [masked]])
    assert len(kept) == len(plain)  # the masked question's text in the log is not what was embedded
    with_prompts = {**env, "FAKE_EMBED_PROMPTS": str(prompts)}
    report = json.loads(ok(run_script("ask_rag.py", "--report", "--json", "--wiki", wiki,
                                      env=with_prompts)).stdout)
    assert report["refused"] == 5
    embedded = prompts.read_text(encoding="utf-8")
    assert not any(q in embedded for q in plain) and "[IBAN 1]" in embedded


# -- the walk of a new user, through --serve, on both stores ---------------------------------------
def users_file(tmp_path):
    """users.toml with the four users; returns (path, {name: key})."""
    path = tmp_path / "users.toml"
    return path, {name: users.add_user(str(path), name, groups) for name, groups in USERS.items()}


def walk(server, keys):
    """Ask WALK, each as its user, through the API; then jana votes her first answer down (tom may
    not). Returns (the answers' ids, tom's vote reply, jana's vote reply)."""
    ids = []
    for name, question in WALK:
        body = {"messages": [{"role": "user", "content": question}]}
        reply = requests.post(server.url + "/v1/chat/completions", headers=bearer(keys[name]),
                              json=body, timeout=60)
        assert reply.status_code == 200 and reply.json()["rag"]["answer"] == NO_INFO
        ids.append(reply.json()["rag"]["id"])
    vote = {"id": ids[0], "vote": -1, "comment": "Für den Mac fehlt die Anleitung"}
    others, voted = (requests.post(server.url + "/v1/feedback", json=vote, timeout=30,
                                   headers=bearer(keys[name])) for name in ("tom", "jana"))
    return ids, others, voted


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def test_the_walk_of_a_new_user(stores, store_env, tmp_path):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    env = {**os.environ, **store_env, "RAG_AUDIT_SECRET": SECRET, "RAG_SERVE_KEY": ""}
    ok(run_script("build_index.py", "--wiki", wiki, env=env))
    path, keys = users_file(tmp_path)
    serve = ("--users", path, "--wiki", wiki)
    with FakeLlamaServer(answer=[NO_INFO]) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}, *serve) as server:
        ids, others, voted = walk(server, keys)
        for_tom = requests.get(server.url + "/api/bericht?since=30d", headers=bearer(keys["tom"]),
                               timeout=60).json()
        for_jana = requests.get(server.url + "/api/bericht", headers=bearer(keys["jana"]),
                                timeout=60).json()
        page = requests.get(server.url + "/bericht", headers=bearer(keys["tom"]), timeout=30)
        anonymous = requests.get(server.url + "/api/bericht", timeout=30)
    assert others.status_code == 403 and voted.status_code == 200
    result = ok(run_script("ask_rag.py", "--report", "--json", "--wiki", wiki, env=env))
    report = json.loads(result.stdout)
    check_walk(report, ids[0], keys)
    assert for_jana["gaps"] == report["gaps"] and for_jana["downvoted"] == report["downvoted"]
    check_rights(for_tom, keys)
    as_tom = ok(run_script("ask_rag.py", "--report", "--json", "--users", path, "--as", "tom",
                           "--wiki", wiki, env=env))
    assert json.loads(as_tom.stdout)["gaps"] == for_tom["gaps"]
    assert page.status_code == 200 and "Bericht für die Autorinnen und Autoren" in page.text
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    assert anonymous.status_code == 401


def check_walk(report, voted_id, keys):
    """Three groups with the right counts and folders, the withheld fourth, the vote, no name."""
    groups = {g["pages"][0]: g for g in report["gaps"]}
    assert sorted((g["questions"], g["askers"]) for g in report["gaps"]) == [(3, 3), (3, 3), (4, 3)]
    assert set(groups) == {"netzwerk/vpn.md", "drucker.md", "personal/passwort-tresor.md"}
    assert groups["netzwerk/vpn.md"]["questions"] == 4
    assert groups["netzwerk/vpn.md"]["folders"][0] == "netzwerk/"
    assert groups["drucker.md"]["owners"]["drucker.md"] == ["hausdienst"]
    assert report["withheld"] == 1
    [down] = report["downvoted"]
    assert down["id"] == voted_id and down["comment"] == "Für den Mac fehlt die Anleitung"
    assert {"path": "netzwerk/vpn.md", "heading": "VPN"} in down["cited"]
    text = json.dumps(report, ensure_ascii=False)
    names = list(USERS) + list(keys.values()) + [audit.pseudonym(n, SECRET) for n in USERS]
    assert [n for n in names + [SECRET] if n in text] == []


def check_rights(report, keys):
    """tom may not read personal/: no line names it, the password group is gone."""
    text = json.dumps(report, ensure_ascii=False)
    assert "personal/" not in text and "Tresor" not in text
    assert sorted(g["pages"][0] for g in report["gaps"]) == ["drucker.md", "netzwerk/vpn.md"]
    assert report["days"] == 30
    assert not any(n in text for n in list(USERS) + list(keys.values()))


def test_a_reader_without_the_right_gets_no_line_about_the_page_in_the_terminal(indexed, tmp_path):
    wiki, env = indexed
    path, _ = users_file(tmp_path)
    log = tmp_path / "audit.jsonl"
    tresor = [("personal/passwort-tresor.md", "Passwort-Tresor")]
    write_log(log, [line(q, f"p-{u}", chunks=tresor) for u, q in WALK])
    answered = line("Tresor?", None, answer="Im Umschlag [1].", citations={"valid": [1]},
                    chunks=tresor)
    feedback.rate(env["RAG_DB"], answered, -1, "veraltet")
    env = {**env, "RAG_AUDIT": str(log)}
    admin = ok(run_script("ask_rag.py", "--report", "--wiki", wiki, env=env)).stdout
    tom = ok(run_script("ask_rag.py", "--report", "--users", path, "--as", "tom", "--wiki", wiki,
                        env=env)).stdout
    assert admin.startswith("# Bericht für die Autorinnen und Autoren des Wikis\n")
    assert "personal/passwort-tresor.md" in admin and "„veraltet“" in admin
    assert "Owner: personalabteilung" in admin
    assert "personal/" not in tom and "veraltet" not in tom and "Wissenslücken" in tom
    assert "Mit 👎 bewertet: 0" in tom


def test_report_without_an_index_is_one_german_line(tmp_path, fake_embedding):
    result = run_script("ask_rag.py", "--report", env=fake_embedding)
    assert result.returncode == 1 and result.stderr.startswith("Fehler: Index ")
    assert result.stderr.count("\n") == 1
    wrong = run_script("ask_rag.py", "--report", "--since", "einmal", env=fake_embedding)
    assert wrong.returncode == 1 and "Zeitraum" in wrong.stderr and "Traceback" not in wrong.stderr
