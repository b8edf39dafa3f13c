"""The pages --serve sends: their text with the scripts they name put in, and the
Content-Security-Policy that allows exactly their own inline script and style.

    text = page_text(PAGE)   # page.html with dom.js and markdown.js inside, one file
    csp(text)   # "default-src 'none'; script-src 'sha256-…'; style-src 'sha256-…'; …"

rag/doors/web.py serves them (GET / and /bericht); nothing external is loaded.

Does not handle: a page's external files (there are none), scripts other than <!-- name.js -->.
"""
import base64
import hashlib
import re
from pathlib import Path

PAGE = Path(__file__).with_name("page.html")
REPORT_PAGE = Path(__file__).with_name("bericht.html")  # /bericht: the report for the authors


def csp(page):
    """The page's Content-Security-Policy: only its own inline <script> and <style>, by sha256."""
    def hashes(tag):
        return " ".join("'sha256-%s'"
                        % base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                        for body in re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S))
    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
            f"connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
            f"frame-ancestors 'none'")


def page_text(page=PAGE):
    """A page with the scripts it names put in, one file each, nothing else: where page.html says
    "<!-- dom.js -->", "<script>" + dom.js + "</script>" (the DOM helpers both pages share), and
    markdown.js (the answer's Markdown as DOM nodes) the same way.
    """
    text = page.read_text(encoding="utf-8")
    for name in re.findall(r"<!-- ([a-z]+\.js) -->", text):
        script = f"<script>\n{page.with_name(name).read_text(encoding='utf-8')}</script>"
        text = text.replace(f"<!-- {name} -->", script, 1)
    return text
