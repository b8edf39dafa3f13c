"""The page in a real browser: `ask_rag.py --serve` on a real index with the real models (e5 with a
warm llama-server --embeddings, the setup's answer model in llama-server), opened in headless
Chromium through selenium and chromedriver (Debian's `chromium` and `chromium-driver`).

It asks the demo question, waits for the streamed answer and the sources, then asks about a wiki
page whose text holds `<script>` and `<img onerror=…>`: both must show as text, nothing may run.
A screenshot lands in the test's folder, and where RAG_SCREENSHOT names a file, there too (the
README's pictures: `RAG_SCREENSHOT=docs/web-seite.png python3 -m pytest tests/test_browser.py` writes
docs/web-seite.png and docs/web-seite-belege.png).

Chromium, chromedriver or selenium missing: skipped with one line that names the install command;
in CI (CI=true) that is a failure.
"""
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, missing_part, needs_tool, run_script, write_wiki
from rag import config
from rag.models.server_process import ServerProcess
from serving import Serving
from timeouts import REAL

PAGES = ["mail/cyrus-imap/mailbox-anlegen.md", "mail/cyrus-imap/mailbox-quota.md", "mail/cyrus-imap/shared-folders.md",
         "netzwerk/vpn-linux.md", "arbeitsplatz/drucker.md", "hr-it/onboarding.md"]
XSS_PAGE = """\
    # Etikettendrucker Zebra <script>window.__xss = 1</script>

    Der Etikettendrucker Zebra im Lager druckt Versandetiketten. Treiber und Vorlagen liegen im
    Softwarecenter <img src=x onerror="window.__xss = 2"> unter „Lager“.
    """
QUESTION = "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
FOLLOW_UP = "Und wie viel Platz bekommt sie?"  # after QUESTION: the mailbox's quota (mailbox-quota.md is served)
XSS_QUESTION = "Wo finde ich den Treiber für den Etikettendrucker Zebra im Lager?"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1200,2000"]
ANSWER_TIMEOUT = REAL  # seconds for one answer of the real model on a busy 2-core machine
WATCH_STATUS = """window.__statuses = [];
new MutationObserver((records) => { for (const r of records) for (const node of r.addedNodes)
  window.__statuses.push(node.textContent); }).observe(document.getElementById("status"), {childList: true});"""
WAITING = r"\d+ Quellen gefunden · (prüfe, ob sie die Frage beantworten|prüfe, ob der beste Abschnitt die Frage beantwortet|warte auf die Antwort des Modells) …( \d+ s)?"


@pytest.fixture(scope="module")
def browser_parts():
    """(chromium, chromedriver) and selenium: each missing one skips locally, a failure in CI."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing_part("selenium missing – install with: python3 -m pip install selenium")
    return needs_tool("chromium", "chromium-browser"), needs_tool("chromedriver")


@pytest.fixture(scope="module")
def served(real, browser_parts, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    for rel in PAGES:
        (tmp / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "wiki" / rel, tmp / "wiki" / rel)
    write_wiki(tmp / "wiki", {"arbeitsplatz/etikettendrucker.md": XSS_PAGE})
    env = {**os.environ, "LLAMA_EMBEDDING": real["embedding"], "RAG_EMBED_MODEL": real["model"],
           "RAG_DB": str(tmp / "knowledge.db"), "RAG_WIKI": str(tmp / "wiki"), "RAG_AUDIT": str(tmp / "audit.jsonl"),
           "RAG_SERVE_KEY": ""}
    result = run_script("build_index.py", env=env)
    assert result.returncode == 0, result.stderr
    with ServerProcess(model=config.default_llm_model(), binary=real["server"],
                       log_path=str(tmp / "llama-server.log")) as llm:
        with Serving({**env, "LLAMA_SERVER_URL": llm.url}) as server:
            yield server


@pytest.fixture(scope="module")
def driver(browser_parts, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium, chromedriver = browser_parts
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    try:
        yield browser
    finally:
        browser.quit()


def ask(driver, question):
    """Type the question, press the button, wait until the page says it is done; returns the status text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    box = driver.find_element(By.ID, "frage")
    box.clear()
    box.send_keys(question)
    driver.find_element(By.ID, "fragen").click()
    WebDriverWait(driver, ANSWER_TIMEOUT).until(
        lambda d: d.find_element(By.ID, "status").get_attribute("data-state") in ("fertig", "fehler"))
    return driver.find_element(By.ID, "status").text


def test_demo_question_streams_an_answer_with_sources(served, driver, tmp_path):
    from selenium.webdriver.common.by import By
    assert "Frage-Embedder: llama-server --embeddings (warm" in " ".join(served.lines)
    driver.get(served.url + "/")
    assert driver.title.startswith("Wiki fragen")
    folders = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#ordner option")]
    assert folders == ["", "arbeitsplatz/", "hr-it/", "mail/", "netzwerk/"]
    driver.execute_script(WATCH_STATUS)  # every text the status line shows, in order
    status = ask(driver, QUESTION)
    assert status.startswith("Fertig"), status
    shown = driver.execute_script("return window.__statuses")
    waiting = [i for i, text in enumerate(shown) if re.fullmatch(WAITING, text)]
    assert waiting and waiting[-1] < shown.index("Antwort kommt …"), shown  # what is awaited, then the answer
    answer = driver.find_element(By.ID, "antwort").text
    sources = driver.find_elements(By.CSS_SELECTOR, "#quellen > li")
    assert answer.strip() and sources
    assert "```" not in answer and "**" not in answer  # its Markdown is rendered (markdown.js)
    blocks = [b for b in driver.find_elements(By.CSS_SELECTOR, "#antwort .code")
              if "cyradm --user cyrus" in b.find_element(By.CSS_SELECTOR, "pre > code").text]
    assert blocks and blocks[0].find_element(By.TAG_NAME, "button").text == "Kopieren", answer
    assert "mail/cyrus-imap/mailbox-anlegen.md" in sources[0].find_element(By.CSS_SELECTOR, ".pfad").text
    marks = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#pruefungen li")]
    assert any(m.startswith(("✓ Zitate", "✗ Quelle", "Zitate: keine")) for m in marks), marks
    assert "erstes Wort nach" in driver.find_element(By.ID, "zeiten").text  # the answer came as a stream
    for source in sources:  # each opens to its chunk text; the cyradm steps are among them
        source.find_element(By.TAG_NAME, "summary").click()
    assert any("cyradm" in s.find_element(By.CSS_SELECTOR, ".text").text for s in sources)
    for line in driver.find_elements(By.CSS_SELECTOR, "#belege li"):  # each evidence line is marked in its source
        n = line.find_element(By.TAG_NAME, "a").text.strip("Beleg []")
        quote = line.text.split("„", 1)[1].rstrip("“")
        marked = [" ".join(m.text.split()) for m in driver.find_elements(By.CSS_SELECTOR, f"#quelle-{n} mark")]
        assert quote in marked, (quote, marked)
    driver.execute_script("document.querySelectorAll('#quellen details').forEach((d) => {"
                          " d.open = d.querySelector('mark') !== null; }); window.scrollTo(0, 0);")  # for the screenshot
    picture = tmp_path / "web-seite.png"
    assert driver.save_screenshot(str(picture)) and picture.stat().st_size > 10_000
    driver.execute_script("document.getElementById('belege').scrollIntoView();")  # the evidence, marked in its source
    evidence = tmp_path / "web-seite-belege.png"
    assert driver.save_screenshot(str(evidence)) and evidence.stat().st_size > 10_000
    if os.environ.get("RAG_SCREENSHOT"):  # docs/web-seite.png, and docs/web-seite-belege.png beside it
        target = Path(os.environ["RAG_SCREENSHOT"])
        shutil.copy(picture, target)
        shutil.copy(evidence, target.with_name(target.stem + "-belege" + target.suffix))


def test_wiki_text_with_script_and_onerror_shows_as_text(served, driver):
    from selenium.webdriver.common.by import By
    driver.get(served.url + "/")
    ask(driver, XSS_QUESTION)
    items = [li for li in driver.find_elements(By.CSS_SELECTOR, "#quellen > li")
             if "arbeitsplatz/etikettendrucker.md" in li.find_element(By.CSS_SELECTOR, ".pfad").text]
    assert items, "the XSS page was not among the sources"
    item = items[0]
    item.find_element(By.TAG_NAME, "summary").click()
    assert "<script>window.__xss = 1</script>" in item.find_element(By.CSS_SELECTOR, ".kopf").text
    assert '<img src=x onerror="window.__xss = 2">' in item.find_element(By.CSS_SELECTOR, ".text").text
    assert driver.find_elements(By.CSS_SELECTOR, "#ergebnis img, #ergebnis script") == []
    assert driver.execute_script("return window.__xss === undefined")


def test_a_follow_up_on_the_page_is_searched_with_the_question_before_it(served, driver):
    from selenium.webdriver.common.by import By
    driver.get(served.url + "/")
    assert ask(driver, QUESTION).startswith("Fertig")
    assert not driver.find_element(By.ID, "gesucht").is_displayed()  # the first question stands alone
    assert ask(driver, FOLLOW_UP).startswith("Fertig")
    searched = driver.find_element(By.ID, "gesucht")
    assert searched.is_displayed() and searched.text == f"→ Gesucht: {FOLLOW_UP} (mit der Frage davor: „{QUESTION}“)"
    driver.find_element(By.ID, "neu").click()  # a new conversation: the same words stand alone again
    ask(driver, FOLLOW_UP)
    assert not driver.find_element(By.ID, "gesucht").is_displayed()


def test_the_runners_up_under_the_answer_open_their_source(browser_parts, driver, fake_embedding, small_wiki):
    """With the fake embedder and answer server (no real model needed): "Siehe auch: [2] …, [3] …" under the
    answer, each entry a link that opens that source in the list; after the refusal "Vielleicht hilft: …"."""
    from fake_server import FakeLlamaServer
    from selenium.webdriver.common.by import By
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    with FakeLlamaServer(answer=["Mit cm", " [1]."]) as fake, \
            Serving({**os.environ, **fake_embedding, "LLAMA_SERVER_URL": fake.url, "RAG_SERVE_KEY": ""}) as server:
        driver.get(server.url + "/")
        assert ask(driver, "Wie lege ich eine Mailbox an?").startswith("Fertig")
        line = driver.find_element(By.ID, "siehe-auch")
        assert line.is_displayed() and line.text == ("Siehe auch: [2] mail/mailbox-anlegen.md › Mailbox anlegen, "
                                                     "[3] drucker.md › Drucker")
        links = line.find_elements(By.TAG_NAME, "a")
        assert [a.get_attribute("href").rsplit("#", 1)[1] for a in links] == ["quelle-2", "quelle-3"]
        assert not driver.find_element(By.CSS_SELECTOR, "#quelle-3 details").get_attribute("open")
        links[1].click()
        assert driver.find_element(By.CSS_SELECTOR, "#quelle-3 details").get_attribute("open")
        assert ask(driver, "Was gibt es heute in der Kantine?").startswith("Fertig")  # the floor: no model asked
        assert driver.find_element(By.ID, "siehe-auch").text.startswith("Vielleicht hilft: [1] ")


def test_a_corrected_citation_is_one_green_mark_not_a_warning(browser_parts, driver, fake_embedding, small_wiki):
    """The model cites [3] for a sentence that only [1] holds: the answer carries [1] and the page says it was
    corrected, instead of "✓ Zitate gültig: [1]" beside "⚠ zitiert die falsche Quelle"."""
    from fake_server import FakeLlamaServer
    from selenium.webdriver.common.by import By
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    with FakeLlamaServer(answer=["Die Mailbox bekommt eine Quota von 2 GB", " [3]."]) as fake, \
            Serving({**os.environ, **fake_embedding, "LLAMA_SERVER_URL": fake.url, "RAG_SERVE_KEY": ""}, "--no-floor") as server:
        driver.get(server.url + "/")
        assert ask(driver, "Wie groß ist die Quota einer Mailbox?").startswith("Fertig")
        sources = [s.find_element(By.CSS_SELECTOR, ".pfad").text for s in driver.find_elements(By.CSS_SELECTOR, "#quellen > li")]
        n = 1 + next(i for i, s in enumerate(sources) if "mail/mailbox-anlegen.md" in s)
        marks = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#pruefungen li")]
        answer = driver.find_element(By.ID, "antwort").text
    assert answer == f"Die Mailbox bekommt eine Quota von 2 GB [{n}].", answer
    assert f"✓ Zitat berichtigt: [3] durch [{n}] ersetzt, die Quelle, die es stützt" in marks, marks
    assert not any("falsche Quelle" in m for m in marks), marks


MARKDOWN_PAGE = """\
    # Postfach anlegen

    ## Postfach anlegen mit cyradm

    1. Per SSH auf dem Mailserver anmelden.<br>Dabei **NICHT** als root arbeiten.
    2. Das Werkzeug `cyradm` starten: <script>window.__xss = 3</script>
    3. Das Postfach anlegen und prüfen:

    ```bash
    cyradm --user cyrus localhost
    cm user/jana.kruse
    ```
    """


def test_a_verbatim_answer_renders_its_markdown_and_keeps_the_page_s_html_as_text(
        browser_parts, driver, fake_embedding, small_wiki):
    """The steps of a page, verbatim (fake embedder and answer server): the list as a list, **bold**
    as bold, the code block as code with a copy button that copies it; the page's <br> and <script>
    show as text, and nothing of them runs."""
    from fake_server import FakeLlamaServer
    from selenium.webdriver.common.by import By
    write_wiki(small_wiki, {"mail/postfach-anlegen.md": MARKDOWN_PAGE})
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    env = {**os.environ, **fake_embedding, "RAG_STEPS": "source", "RAG_SERVE_KEY": ""}
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        driver.get(server.url + "/")
        assert ask(driver, "Wie lege ich mit cyradm ein Postfach an?").startswith("Fertig")
        answer = driver.find_element(By.ID, "antwort")
        items = [li.text for li in answer.find_elements(By.CSS_SELECTOR, "ol > li")]
        bold = [b.text for b in answer.find_elements(By.TAG_NAME, "strong")]
        code = answer.find_element(By.CSS_SELECTOR, ".code pre code").text
        button = answer.find_element(By.CSS_SELECTOR, ".code button")
        driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": server.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        button.click()
        read = "navigator.clipboard.readText().then(arguments[0], arguments[0]);"  # the callback
        copied = driver.execute_async_script(read)
        shown, label = answer.text, button.text
        html = driver.find_elements(By.CSS_SELECTOR, "#antwort script, #antwort img, #antwort br")
        ran = driver.execute_script("return window.__xss !== undefined")
    assert items[0] == "Per SSH auf dem Mailserver anmelden.<br>Dabei NICHT als root arbeiten."
    assert items[1] == "Das Werkzeug cyradm starten: <script>window.__xss = 3</script>", items
    assert bold == ["NICHT"] and "```" not in shown and "**" not in shown
    assert code == "cyradm --user cyrus localhost\ncm user/jana.kruse" and copied == code
    assert label == "Kopiert" and not ran
    assert all(e.tag_name == "br" for e in html)  # only the renderer's own line breaks


def test_a_refusal_shows_only_the_refusal_its_reason_and_the_runners_up(
        browser_parts, driver, fake_embedding, small_wiki):
    """The model says the sources do not answer it: no citation, fact or evidence marks under it."""
    from fake_server import FakeLlamaServer
    from selenium.webdriver.common.by import By
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    env = {**os.environ, **fake_embedding, "RAG_SERVE_KEY": ""}
    with FakeLlamaServer(answer=["Dazu habe ich", " keine Information."]) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}, "--no-floor") as server:
        driver.get(server.url + "/")
        assert ask(driver, "Wie groß ist die Quota einer Mailbox?").startswith("Fertig")
        marks = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#pruefungen li")]
        evidence = driver.find_elements(By.CSS_SELECTOR, "#belege li")
        reason = driver.find_element(By.ID, "nicht-im-wiki")
        runners_up = driver.find_element(By.ID, "siehe-auch")
        answer = driver.find_element(By.ID, "antwort").text
        cited = driver.find_elements(By.CSS_SELECTOR, "#quellen .marke.ok")
    assert answer == "Dazu habe ich keine Information."
    assert marks == [] and evidence == [] and cited == [], marks
    # the core's one reason (rag/check/why.py), as the terminal shows it
    assert reason.is_displayed()
    assert "Modell fand die Antwort nicht in den Quellen; die Kandidaten:" in reason.text
    assert runners_up.is_displayed() and runners_up.text.startswith("Vielleicht hilft: [1] ")


def test_a_section_accepted_only_just_is_a_doubt_not_a_tick(
        browser_parts, driver, fake_embedding, small_wiki, tmp_path):
    """The model accepts the printed section with P(ja) 0.6, under the model's sure mark: the
    reason under the answer is a warning ("⚠ … knapp …"), not a green tick."""
    import json
    from fake_server import GEMMA_TEMPLATE, MODEL_PATH, FakeLlamaServer
    from selenium.webdriver.common.by import By
    write_wiki(small_wiki, {"mail/postfach-anlegen.md": MARKDOWN_PAGE})
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "answerable.json").write_text(json.dumps({Path(MODEL_PATH).name: {
        "threshold": 0.5, "section_threshold": 0.5, "section_sure": 0.7}}), encoding="utf-8")
    env = {**os.environ, **fake_embedding, "RAG_STEPS": "source", "RAG_SERVE_KEY": "",
           "RAG_CACHE": str(cache)}
    with FakeLlamaServer(template=GEMMA_TEMPLATE, p_yes=0.6) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        driver.get(server.url + "/")
        assert ask(driver, "Wie lege ich mit cyradm ein Postfach an?").startswith("Fertig")
        first = driver.find_elements(By.CSS_SELECTOR, "#pruefungen li")[0]
        shown, kind = first.text, first.get_attribute("class")
    assert shown.startswith("⚠ Schritte wörtlich aus der Quelle") and kind == "hinweis", shown
    assert shown.endswith("P(ja) 0.60 – knapp: der Abschnitt beantwortet die Frage vielleicht nicht")
