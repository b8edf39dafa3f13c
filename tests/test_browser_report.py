"""The vote buttons under an answer and the page /bericht in a real browser: headless Chromium
through selenium and chromedriver, against `ask_rag.py --serve` with the fakes (conftest's
llama-embedding, fake_server.py).

A user asks and clicks 👎 with a comment; the vote is stored with its comment; /bericht then shows
the down-voted answer with that comment as text (a comment with <img onerror=…> must not run) and
the knowledge gap of three askers. Chromium, chromedriver or selenium missing: skipped with one
line; in CI (CI=true) that is a failure.
"""
import json
import os

import pytest

from conftest import run_script, write_wiki
from fake_server import FakeLlamaServer
from rag.audit import log as audit
from rag.answer.prompt import NO_INFO
from rag.audit import feedback
from serving import Serving
from test_browser import ask, browser_parts, driver  # noqa: F401  (fixtures: Chromium, its driver)
from test_report import WIKI

COMMENT = 'Für den Mac fehlt die Anleitung <img src=x onerror="window.__xss = 1">'
QUESTIONS = ["Wie richte ich das VPN auf dem Mac ein?", "Gibt es einen VPN-Client für macOS?",
             "Das VPN verbindet sich unter macOS nicht"]


@pytest.fixture
def served(browser_parts, fake_embedding, tmp_path):  # noqa: F811
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    log = [{"id": audit.new_id(), "time": feedback.now(), "question": q, "answer": NO_INFO,
            "user": f"p-{n}", "chunks": []} for n, q in enumerate(QUESTIONS)]  # a gap of 3 askers
    with open(fake_embedding["RAG_AUDIT"], "w", encoding="utf-8") as f:
        f.writelines(json.dumps(x, ensure_ascii=False) + "\n" for x in log)
    env = {**os.environ, **fake_embedding, "RAG_SERVE_KEY": ""}
    with FakeLlamaServer(answer=["Das VPN verbindet", " das Notebook [1]."]) as fake:
        with Serving({**env, "LLAMA_SERVER_URL": fake.url}, "--wiki", wiki) as server:
            yield server, fake_embedding


def test_the_buttons_store_a_vote_and_bericht_shows_it(served, driver):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    server, env = served
    driver.get(server.url + "/")
    assert not driver.find_element(By.ID, "bewertung").is_displayed()
    assert ask(driver, "Wie starte ich das VPN?").startswith("Fertig")
    assert driver.find_element(By.ID, "bewertung").is_displayed()
    driver.find_element(By.ID, "kommentar").send_keys(COMMENT)
    driver.find_element(By.ID, "daumen-runter").click()
    WebDriverWait(driver, 30).until(
        lambda d: d.find_element(By.ID, "bewertung-status").text.startswith("Danke"))
    assert driver.find_element(By.ID, "daumen-runter").get_attribute("aria-pressed") == "true"
    [vote] = feedback.votes(env["RAG_DB"])
    assert vote["vote"] == -1 and vote["comment"] == COMMENT
    driver.find_element(By.LINK_TEXT, "Bericht für die Autorinnen und Autoren").click()
    WebDriverWait(driver, 60).until(
        lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "fertig")
    [down] = driver.find_elements(By.CSS_SELECTOR, "#abgelehnt li.zeile")
    assert down.get_attribute("data-id") == vote["id"] and f"„{COMMENT}“" in down.text
    assert "netzwerk/vpn.md › VPN" in down.text
    assert driver.execute_script("return window.__xss") is None
    [gap] = driver.find_elements(By.CSS_SELECTOR, "#luecken li.zeile")
    assert gap.get_attribute("data-fragen") == "3"
    assert "netzwerk/vpn.md – Owner: team-netz" in gap.text
    assert "3 Fragen von 3 Personen" in gap.text
    driver.save_screenshot(str(os.path.join(os.path.dirname(env["RAG_DB"]), "bericht.png")))
