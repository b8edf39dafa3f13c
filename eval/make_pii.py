#!/usr/bin/env python3
"""Write eval/pii.jsonl: German sentences with fictional personal data, and near misses without.

    python3 eval/make_pii.py            # -> eval/pii.jsonl (the same file on every run: seeded)

Positives get values with valid check digits (made with rag/privacy/mask.py's own check functions);
near misses are what a careless pattern would take for personal data: order and ticket numbers,
wrong check digits, postcodes, dates that are no birth dates, version numbers, phone-like serials.
Names and e-mail domains are fictional (example.de/.com/.org), phone numbers come from the ranges
the Bundesnetzagentur keeps for films (030 23125…, 040 66969…, 069 90009…, 089 99998…, 0221 4710…).

This set labels the first nine kinds only (IBAN … TELEFON); every line switches the others off
("off": UNLABELLED), so the names and addresses in its sentences are not counted. Those kinds are
measured on a set written by someone else (eval/pii_blind.jsonl). A company's switchboard number
("Die Zentrale … ist unter … zu erreichen"), a fax and an on-call phone are near misses since
rag/privacy/mask.py keeps business contacts readable.

Does not handle: checking that find() gets them right (that is evaluate.py --pii).
"""
import json
import random
import string
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.privacy import checks, detect  # noqa: E402

SEED = 2026  # same file on every run
OUT = ROOT / "eval" / "pii.jsonl"
UNLABELLED = [k for k in detect.KINDS if k not in ("IBAN", "E-MAIL", "SVNR", "AUSWEIS", "PASS", "KREDITKARTE",
                                                     "STEUER-ID", "GEBURTSDATUM", "TELEFON")]  # not labelled here
rng = random.Random(SEED)


def digits(n):
    return "".join(rng.choice(string.digits) for _ in range(n))


def groups(value, size=4):
    """Example: groups("DE89370400440532013000") -> "DE89 3704 0044 0532 0130 00" """
    return " ".join(value[i:i + size] for i in range(0, len(value), size))


# -- valid values ----------------------------------------------------------------------------------
BBANS = {"DE": lambda: digits(18), "AT": lambda: digits(16), "CH": lambda: digits(17),
         "NL": lambda: "TEST" + digits(10), "FR": lambda: digits(23), "BE": lambda: digits(12),
         "IT": lambda: "X" + digits(22), "ES": lambda: digits(20), "LU": lambda: digits(16),
         "PL": lambda: digits(24)}


def iban(country="DE"):
    bban = BBANS[country]()
    return country + checks.iban_check(country, bban) + bban


def steuer_id():
    while True:
        first = digits(10)
        if first[0] != "0" and sorted(Counter(first).values())[-2:] in ([1, 2], [1, 3]):
            value = first + str(checks.steuer_id_check(first))
            if checks.steuer_id_ok(value):
                return value


def svnr():
    area = rng.choice(["12", "15", "23", "38", "42", "53", "65", "81"])
    birth = f"{rng.randint(1, 28):02d}{rng.randint(1, 12):02d}{rng.randint(50, 99):02d}"
    head = area + birth + rng.choice("ABDEFGHKLMNPRSTW") + f"{rng.randint(0, 99):02d}"
    return head + str(checks.svnr_check(head))


def document(first):
    number = first + "".join(rng.choice(checks.ICAO_ALPHABET) for _ in range(8))
    return number + str(checks.icao_check(number))


def card(prefix, length):
    while True:
        value = prefix + digits(length - len(prefix))
        if checks.card_ok(value):
            return value


def phone():
    area, block = rng.choice([("030", "23125"), ("040", "66969"), ("069", "90009"), ("089", "99998"), ("0221", "4710")])
    return area, block + digits(3)


def mobile():
    return rng.choice(["0151", "0152", "0160", "0162", "0171", "0176"]), digits(rng.choice([7, 8]))


# -- sentences -------------------------------------------------------------------------------------
def add(p, template, *entities):
    """Append one labelled sentence to p. Example: (p, "IBAN {}.", ("IBAN", "DE89…")) -> p[-1]["entities"][0]["kind"] == "IBAN" """
    p.append({"text": template.format(*[v for _, v in entities]),
              "entities": [{"kind": k, "value": v} for k, v in entities]})


def add_ibans(p):
    add(p, "Die Erstattung geht an das Konto mit der IBAN {}.", ("IBAN", groups(iban())))
    add(p, "Bitte überweisen Sie den Betrag auf {} (Kontoinhaberin Erika Beispiel).", ("IBAN", iban()))
    add(p, "Für die Gehaltsabrechnung hat Herr Muster seine neue Bankverbindung {} gemeldet.", ("IBAN", groups(iban())))
    add(p, "Der österreichische Lieferant nennt die IBAN {} für Vorauszahlungen.", ("IBAN", groups(iban("AT"))))
    add(p, "Kontoverbindung in der Schweiz: {}, bitte in CHF überweisen.", ("IBAN", groups(iban("CH"))))
    add(p, "Die Spedition in Rotterdam hat die IBAN {} angegeben.", ("IBAN", iban("NL")))
    add(p, "Rückbuchungen laufen über {} bei der Partnerbank in Lyon.", ("IBAN", groups(iban("FR"))))
    add(p, "Die Reisekosten werden auf {} erstattet, nicht auf das alte Konto.", ("IBAN", groups(iban("IT"))))
    add(p, "Die Kaution von Frau Probe liegt auf dem Konto {}.", ("IBAN", groups(iban("ES"))))


def add_emails(p):
    add(p, "Anna Beispiel erreichen Sie per E-Mail unter anna.beispiel@example.de.", ("E-MAIL", "anna.beispiel@example.de"))
    add(p, "Die Bewerbung kam von {} und wurde weitergeleitet.", ("E-MAIL", "max.mustermann1985@example.com"))
    add(p, "Antworten bitte direkt an {}, nicht an die Funktionsadresse.", ("E-MAIL", "j.probe@beispiel.example.org"))
    add(p, "Herr Test hat sich mit seiner privaten Adresse {} angemeldet.", ("E-MAIL", "kalle_test+wiki@example.org"))
    add(p, "Kontakt: Erika Muster <{}>", ("E-MAIL", "Erika.Muster@Example.DE"))
    add(p, "Die Kündigung schickte er von {} aus.", ("E-MAIL", "hans-peter.fiktiv@example.net"))
    add(p, "In CC stand {} mit der Bitte um Rückruf.", ("E-MAIL", "lea.nachname@mail.example.com"))


LANDLINE_SENTENCES = (  # (sentence, how the number (area code, rest) is written)
    ("Frau Beispiel ist unter {} erreichbar.", lambda a, b: f"{a} {b}"),
    ("Rückfragen bitte an Herrn Muster, Telefon {}.", lambda a, b: f"{a}/{b}"),
    ("Die Nummer der Vertretung lautet {}, vormittags.", lambda a, b: f"{a}-{b}"),
    ("Die Partnerfirma hat für Herrn Probe die Durchwahl {} eingerichtet.", lambda a, b: f"({a}) {b[:3]} {b[3:]}"),
    ("Aus dem Ausland wählen Sie {}.", lambda a, b: f"+49 {a[1:]} {b}"),
    ("Privat, nur im Notfall: {} (Durchwahl von Herrn Muster).", lambda a, b: f"+49 (0){a[1:]} {b[:-3]}-{b[-3:]}"),
    ("Die alte Schreibweise {} steht noch im Briefkopf.", lambda a, b: f"0049 {a[1:]} {b}"),
    ("Sekretariat: Tel {}, Fax bitte nicht mehr benutzen.", lambda a, b: f"{a} / {b[:3]} {b[3:5]} {b[5:]}"),
)
MOBILE_SENTENCES = (
    ("Das Diensthandy von Frau Probe hat die Nummer {}.", lambda a, b: f"{a} {b}"),
    ("Mobil: {}", lambda a, b: f"{a}/{b}"),
    ("Herr Fiktiv ist im Urlaub nur per SMS an {} erreichbar.", lambda a, b: f"+49 {a[1:]} {b}"),
    ("Handynummer von Frau Beispiel: {}", lambda a, b: f"{a}-{b[:3]} {b[3:]}"),
)


def add_phones(p):
    """Landline and mobile numbers in the usual German spellings; the last sentence holds two numbers."""
    for make, sentences in ((phone, LANDLINE_SENTENCES), (mobile, MOBILE_SENTENCES)):
        for template, written in sentences:
            add(p, template, ("TELEFON", written(*make())))
    a, b = mobile()
    add(p, "Bitte rufen Sie mich unter {} zurück, Tel. {} geht nicht.", ("TELEFON", f"{a}{b}"),
        ("TELEFON", "030 23125" + digits(3)))


TAX_ID_SENTENCES = ("Die steuerliche Identifikationsnummer von Frau Beispiel ist {}.",
                    "Steuer-ID: {} (laut Lohnsteuerbescheinigung)",
                    "Für die Lohnabrechnung fehlt nur noch die Steuer-ID {}.",
                    "Herr Muster hat seine Identifikationsnummer {} per Post nachgereicht.",
                    "IdNr. {} wurde im Personalsystem hinterlegt.",
                    "Laut Brief des Finanzamts lautet die Nummer {}.",
                    "Die Identifikationsnummer {} gehört zu Erika Probe.")
SVNR_SENTENCES = ("Die Sozialversicherungsnummer von Herrn Beispiel ist {}.",
                  "Rentenversicherungsnummer: {}",
                  "Bitte die SV-Nummer {} in die Meldung an die Krankenkasse übernehmen.",
                  "Frau Muster hat ihren Sozialversicherungsausweis mit der Nummer {} vorgelegt.",
                  "Versicherungsnummer {} (neu vergeben nach Heirat).",
                  "Im Personalbogen steht die RV-Nummer {}.",
                  "Für die Anmeldung wird {} verwendet.")
ID_CARD_SENTENCES = ("Die Personalausweisnummer von Frau Beispiel lautet {}.",
                     "Personalausweis Nr. {}, gültig bis 2031.",
                     "Bei der Identitätsprüfung wurde die Ausweisnummer {} notiert.",
                     "Herr Muster hat sich mit dem Ausweis {} ausgewiesen.",
                     "Ausweis-Nr.: {}",
                     "Kopie des Personalausweises ({}) liegt der Akte bei.")
PASSPORT_SENTENCES = ("Die Reisepassnummer von Herrn Fiktiv ist {}.",
                      "Reisepass {} für die Dienstreise nach Shanghai hinterlegt.",
                      "Passnummer: {}",
                      "Für das Visum braucht die Botschaft die Pass-Nr. {}.",
                      "Frau Probe reist mit dem Reisepass Nr. {} aus.",
                      "Im Visumantrag steht der Pass {}.")


def tax_id_shown(p):
    """A new Steuer-ID, grouped "12 345 678 901" after an odd number of sentences, else in one piece."""
    value = steuer_id()
    return f"{value[:2]} {value[2:5]} {value[5:8]} {value[8:]}" if len(p) % 2 else value


def svnr_shown(p):
    """A new SVNR, grouped "12 010150 A 12 3" after an odd number of sentences, else in one piece."""
    value = svnr()
    return f"{value[:2]} {value[2:8]} {value[8]} {value[9:]}" if len(p) % 2 else value


def add_numbers(p):
    """Steuer-IDs, SVNRs, ID cards and passports: one value per sentence, made just before it is added."""
    for kind, sentences, shown in (("STEUER-ID", TAX_ID_SENTENCES, tax_id_shown), ("SVNR", SVNR_SENTENCES, svnr_shown),
                                   ("AUSWEIS", ID_CARD_SENTENCES, lambda p: document(rng.choice("LMNPRTVWXY"))),
                                   ("PASS", PASSPORT_SENTENCES, lambda p: document("C"))):
        for template in sentences:
            add(p, template, (kind, shown(p)))


def add_cards(p):
    for template, prefix, length in (("Die Firmenkreditkarte von Herrn Muster hat die Nummer {}.", "4", 16),
                                     ("Kreditkarte: {}, Ablauf 12/28", "52", 16),
                                     ("Die Hotelbuchung lief über die Karte {}.", "37", 15),
                                     ("Frau Beispiel hat die Karte {} als gestohlen gemeldet.", "4", 16),
                                     ("Belastet wurde die Mastercard {}.", "2221", 16),
                                     ("Visa {} (Reisekostenkarte) bitte sperren.", "4", 16),
                                     ("Kartennummer {} aus dem Beleg.", "6011", 16)):
        value = card(prefix, length)
        shown = (f"{value[:4]} {value[4:10]} {value[10:]}" if length == 15 else
                 groups(value) if len(p) % 3 == 0 else "-".join(groups(value).split()) if len(p) % 3 == 1 else value)
        add(p, template, ("KREDITKARTE", shown))


def add_birth_dates(p):
    for template, value in (("Erika Beispiel, geb. 12.03.1985, wohnt in Kiel.", "12.03.1985"),
                            ("Herr Muster (geboren am 3. Mai 1979) tritt zum 1. April 2025 ein.", "3. Mai 1979"),
                            ("Geburtsdatum: 1990-07-21", "1990-07-21"),
                            ("Geb.-Datum 07.11.1968, Eintritt am 01.01.2020", "07.11.1968"),
                            ("Frau Probe, geboren 24.12.1972 in Hamburg, ist Ansprechpartnerin.", "24.12.1972"),
                            ("Das Geburtsdatum 5.6.2001 wurde im HR-System korrigiert.", "5.6.2001"),
                            ("Hans Fiktiv, geb. Test, geboren am 29.02.1984, seit 2010 im Haus.", "29.02.1984")):
        add(p, template, ("GEBURTSDATUM", value))


def positives():
    """Every labelled sentence, kind by kind (the order matters: the values come from one seeded rng)."""
    p = []
    for add_kind in (add_ibans, add_emails, add_phones, add_numbers, add_cards, add_birth_dates):
        add_kind(p)
    return p


def wrong_check_digits():
    """Sentences with values one check digit off: an IBAN, a Steuer-ID, a card, an SVNR, an ID card, a passport."""
    wrong_iban = iban()
    wrong_iban = wrong_iban[:2] + f"{(int(wrong_iban[2:4]) + 1) % 100:02d}" + wrong_iban[4:]
    wrong_id = steuer_id()
    wrong_id = wrong_id[:10] + str((int(wrong_id[10]) + 1) % 10)
    wrong_card = card("4", 16)
    wrong_card = wrong_card[:15] + str((int(wrong_card[15]) + 3) % 10)
    wrong_svnr = svnr()
    wrong_svnr = wrong_svnr[:11] + str((int(wrong_svnr[11]) + 1) % 10)
    wrong_doc = document("T")
    wrong_doc = wrong_doc[:9] + str((int(wrong_doc[9]) + 1) % 10)
    wrong_pass = document("C")
    wrong_pass = wrong_pass[:9] + str((int(wrong_pass[9]) + 4) % 10)
    assert not checks.iban_ok(wrong_iban) and not checks.steuer_id_ok(wrong_id)
    assert not checks.card_ok(wrong_card) and not checks.svnr_ok(wrong_svnr)
    return [
        f"Die IBAN {groups(wrong_iban)} ist falsch abgetippt, die Prüfziffer stimmt nicht.",
        f"Das Formular meldet für {wrong_iban} einen Prüfziffernfehler.",
        "Die Beispiel-IBAN DE00 1234 5678 9012 3456 78 aus der Schulung ist ungültig.",
        f"Die Steuer-ID {wrong_id} wurde vom Finanzamt als ungültig zurückgewiesen.",
        "Die Nummer 01234567890 beginnt mit einer Null und ist keine Steuer-ID.",
        "Im Feld stand 12345678901, das ist ein Platzhalter.",
        f"Die Kartennummer {groups(wrong_card)} besteht die Luhn-Prüfung nicht.",
        "Testkarte 1234 5678 9012 3456 aus der Dokumentation.",
        f"Die SV-Nummer {wrong_svnr} hat eine falsche Prüfziffer.",
        f"Personalausweis {wrong_doc} – Prüfziffer falsch, bitte nachfragen.",
        f"Reisepass {wrong_pass} wurde falsch übertragen.",
    ]


# -- near misses without a value of a labelled kind ------------------------------------------------
NEAR_CODES = [  # storage places and article numbers that look like ID documents
    "Die Lagerposition T220001293 ist für Paletten reserviert.",
    "Der Artikel C01X00T478 ist ausverkauft.",
]
NEAR_ADDRESSES = [  # company addresses and postcodes
    "Die Zentrale sitzt in der Hafenrandstraße 17, 20457 Hamburg.",
    "Die Niederlassung Dresden hat die Postleitzahl 01067.",
    "Lieferadresse: Industriestraße 4, 04109 Leipzig.",
    "Das Lager in 01159 Dresden ist samstags geschlossen.",
]
NEAR_DATES = [  # dates that are no birth dates
    "Die Schulung findet am 12.03.2024 statt.",
    "Der Vertrag ist gültig bis 31.12.2026.",
    "Eintrittsdatum: 01.04.2019, Probezeit sechs Monate.",
    "Die Lieferung kommt am 2024-03-12 an.",
    "Der Server wurde am 3. Mai 2023 neu gestartet.",
    "Geburtstagsfeier im Team am 14.06., bitte eintragen.",
    "Die Rechnung vom 05.11.2024 ist noch offen.",
]
NEAR_VERSIONS = [  # version numbers
    "Installieren Sie Version 2.14.3 des Clients.",
    "llama-cpp-python 0.3.36 bringt llama.cpp mit.",
    "Die Firmware 01.02.03 behebt den Fehler.",
    "Das Update auf 10.0.19045 ist Pflicht.",
    "Build 0.12.1-rc2 ist nur für Tests.",
]
NEAR_REFERENCES = [  # tickets, orders, serials and other phone-like numbers
    "Die Störung läuft unter Ticket INC0012345.",
    "Bitte das Ticket #0815-4711 referenzieren.",
    "Der Änderungsantrag hat die Nummer REQ-2024-000123.",
    "Vorgang 2024-0815-17 ist abgeschlossen.",
    "Die Bestellnummer 4500012345 steht auf dem Lieferschein.",
    "Auftrag 0171-234567 wurde storniert.",
    "Rechnungsnr. 2024-08153 bitte prüfen.",
    "Seriennummer 0123-456-789 steht auf dem Typenschild.",
    "Inventarnummer 040/123456 klebt unter dem Gerät.",
    "Die Sendungsnummer 00340434161234567890 gehört zur Palette.",
    "Kundennummer 0815 4711 für alle Bestellungen verwenden.",
    "Artikelnummer 0176 5555 1234 ist nachbestellt.",
    "Lieferschein 0351 2345 678 liegt im Wareneingang.",
    "Charge 0221-4710-99 ist gesperrt.",
    "Kostenstelle 0471-1234 trägt die Schulungskosten.",
    "Das Projekt 0815-2024 läuft bis Jahresende.",
    "Zimmer 0351 1234 im Neubau ist das Archiv.",
]
NEAR_FIGURES = [  # networks, amounts, opening hours
    "Das VLAN 40 hat das Netz 10.20.40.0/24 und das Gateway 10.20.40.1.",
    "Die MAC-Adresse lautet 00:1A:2B:3C:4D:5E.",
    "Der Betrag von 1.234,56 EUR wurde verbucht.",
    "Das Budget beträgt 12 345 678 EUR für drei Jahre.",
    "Öffnungszeiten: 08:00-12:00 und 13:00-16:30 Uhr.",
]
NEAR_BUSINESS_CONTACTS = [  # switchboards, hotlines, on-call phones, shared mailboxes (kept readable)
    "Die Sprachmailbox erreichen Sie unter der Kurzwahl 8000.",
    "Der Helpdesk hat die Durchwahl 4711.",
    "Die Zentrale der Partnerfirma ist unter (0221) 4710 100 zu erreichen.",
    "Unsere Hotline erreichen Sie unter 040 66969 000 oder +49 40 66969100.",
    "Das Handy der Rufbereitschaft hat die Nummer 0171 2264686.",
    "Zentrale: 030 23125-0, Fax 030 23125-99",
    "Anfragen bitte an helpdesk@example.de, das erzeugt ein Ticket.",
    "Datenschutzfragen an datenschutz@example.de richten.",
    "Neue Adressen folgen dem Schema vorname.nachname@example.de.",
    "Warnungen der Sicherung gehen an it-monitoring@example.de.",
]
NEAR_OTHERS = [  # everything else that has digits or an @
    "Das Postfach heißt user/vorname.nachname ohne Domain.",
    "Auf dem Server: ssh admin@mail01.example.intern ausführen.",
    "Die Telefonanlage hat 250 Nebenstellen und 30 Amtsleitungen.",
    "Die Norm DIN 5008 regelt die Schreibweise von Telefonnummern.",
    "Das Konto 0532013000 bei der alten Bank ist aufgelöst.",
    "Die Quota beträgt 2048 MB, Warnung ab 1843 MB.",
    "Der Drucker PR-204 steht im 2. Stock.",
    "Raum 0.12 im Erdgeschoss ist der Serverraum.",
    "Die Zeitspanne 2019-2024 ist archiviert.",
    "Das Passwort muss 12 bis 64 Zeichen lang sein.",
    "Die Lizenz hat den Schlüssel 4F2A-9C1B-77D0-0E3F.",
    "Geboren wurde die Idee im Jahr 2015 auf einem Workshop.",
]
NEAR_FIXED = (NEAR_CODES + NEAR_ADDRESSES + NEAR_DATES + NEAR_VERSIONS + NEAR_REFERENCES + NEAR_FIGURES
              + NEAR_BUSINESS_CONTACTS + NEAR_OTHERS)


def near_misses():
    """What a careless pattern would take for personal data: wrong check digits first, then NEAR_FIXED."""
    return [{"text": t, "entities": []} for t in wrong_check_digits() + NEAR_FIXED]


def main():
    items = positives() + near_misses()
    with open(OUT, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps({**item, "off": UNLABELLED}, ensure_ascii=False) + "\n")
    kinds = Counter(e["kind"] for item in items for e in item["entities"])
    print(f"{len(items)} Texte → {OUT.relative_to(ROOT)}: {sum(kinds.values())} Werte "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
          f"{sum(1 for i in items if not i['entities'])} Beinahe-Treffer")


if __name__ == "__main__":
    main()
