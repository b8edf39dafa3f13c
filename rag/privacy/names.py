"""Person names in German text, found by their context: rules, no model (rag/privacy/mask.py masks
them).

    find("Bitte an Herrn Dr. Thomas Müller wenden.")  -> [Match("NAME", 22, 35, "Thomas Müller")]
    find("Ansprechpartnerin: Frau Weber")               -> [Match("NAME", 24, 29, "Weber")]
    find("Mit freundlichen Grüßen\\nKatrin Focke")       -> [Match("NAME", 24, 36,
    "Katrin Focke")]
    find("Die Hauptstraße ist gesperrt.")              -> []

The value is the name as written, without salutation, title or role word. Contexts:
  salutation  Herr/Herrn/Frau/Hr./Fr. and titles (Dr., Prof., Dipl.-Ing. …), also after "Hallo",
              "Liebe"
  first name  a first name from data/vornamen.txt (Faker, MIT) followed by a surname: "Frank
              Jessen"; alone before a verb ("Sandra meldet sich") or sharing a surname ("Paul und
              Lisa Brandt")
  role word   Ansprechpartner(in), zuständig, Mitarbeiter(in), Kontakt, Vertretung, IT-Leiter,
              …beauftragte, also with a department before the colon ("Ansprechpartnerin Einkauf:
              …")
  signature   "Mit freundlichen Grüßen", "Viele Grüße", "i. A.", "gez." and the name after it
  field       "Name:", "Vorname:", "Von:", "Cc:", "Teilnehmer:" (a list too), "Name, Vorname:
              Mustermann, Max"
  table       cells of a column titled Name, Ansprechpartner(in), Mitarbeiter(in), Kontakt,
              Vertretung … ("Kruse, Jana" as one)
  capitals    "MÜLLER, THOMAS", "THOMAS MÜLLER" with a listed first name; in a paragraph written
              all in lower case, the word after "herr"/"frau"
  repeat      a surname or first name found by one of the above, again elsewhere in the text
A name is one to three capitalised words (hyphens, apostrophes and accents allowed, particles
such as "von der" before the surname); a second word is taken only after a listed first name or
in a strong context (salutation, field, table, signature, role word with a colon). Words that are
German nouns by their ending (-ung, -heit, -schaft …) or by STOP_WORDS never count as a name, nor
do names followed by a legal form or an institution ("Robert Bosch GmbH", "Max-Planck-Institut").

Here: find() and the rules led by a cue word (salutation, role word, greeting, field, table column);
rag/privacy/name_forms.py: the rules led by a name's form (first names, capitals, reversed, mentions
…); rag/privacy/name_words.py: the word lists and the name phrase that both use.

Does not handle: names without any of these contexts and without a listed first name ("Jolanda
schreibt …"), other names in lower case or capitals, surnames that are nouns after a dative
("Herrn Müller Zugang geben" is cut right only for the nouns in STOP_WORDS), genitives ("Müllers
Laptop" is missed), nicknames, names split over two lines, names inside e-mail addresses (that
is E-MAIL), and two persons with the same surname (a bare "Weber" then takes the first one's
placeholder).
"""
import re

from rag.privacy import name_forms
from rag.privacy.checks import Match
from rag.privacy.name_words import (AFTER_ARTICLE, AFTER_NOT_PERSON, BEFORE_NOT_PERSON, CLAUSE_END,
                                    PARTICLES, ROLE_WORDS, SALUTATIONS, TITLES, at, initial,
                                    is_first_name, is_noun, looks_like_name, opens_line, phrase,
                                    skip_titles, tokens)
from rag.privacy.tables import column_cells

OPENERS = {"hallo", "hi", "hey", "liebe", "lieber", "moin", "servus", "sehr geehrte",
           "sehr geehrter"}
GREETINGS = re.compile(r"""(?ix)(?<![\w-])(?:
    (?:mit\ )?(?:freundlichen|besten|herzlichen|lieben|schönen|sonnigen|kollegialen|vielen)
    \ grüßen
  | (?:freundliche|beste|herzliche|liebe|schöne|viele|sonnige)\ grüße | viele\ grüsse
  | mit\ freundlichen\ gr(?:ü|ue)ssen
  | mfg | lg | vg | gruß | grüße | best\ regards | kind\ regards | regards | cheers)(?![\w-])""")
# also e-mail headers
FIELD_LABELS = re.compile(r"""(?x)(?<![\w-])(?:
    (?:Vor|Nach|Familien|Geburts|Anzeige|Kontakt|Mitarbeiter)?[Nn]ame
    (?:\ (?:des|der|von)\ [\wäöüÄÖÜß]+)? (?P<reverse>\s*,\s*Vorname)?
    | Mitarbeiter(?:in|innen|ende)? | Teilnehm(?:er|erin|ende)
    | Antragsteller(?:in)? | Teilnehmerliste(?:\ [^:\n]{1,30})? | Anwesend | Verteiler | Von | An
    | Cc | CC | Bcc | Gemeldet\ von | Zugewiesen\ an
    | Erstellt\ von | Geändert\ von | Bearbeitet\ von | Protokoll | Unterschrift)\s*:[ \t]*""")
NAME_COLUMNS = re.compile(r"""^(?:
      name | vorname | nachname | vor-\ und\ nachname | name,\ vorname    # the name itself
    | ansprechpartner(?:in)? | ansprechperson | kontakt(?:person)?         # whom to ask
    | mitarbeiter(?:in)? | mitarbeitende | person                           # who works there
    | verantwortlich | verantwortliche[r]? | zuständig | zuständige[r]?    # who is in charge
    | vertretung | bearbeiter(?:in)? | sachbearbeiter(?:in)?               # who does the work
    | teilnehmer(?:in)? | teilnehmende | empfänger(?:in)? | inhaber(?:in)?  # who takes part, gets
    | displayname | anzeigename | cn | full\ ?name                         # directory fields
    | rufname | familienname                                               # more of the name
    )$""", re.I | re.X)
# a cell of one word is a name
SINGLE_WORD_COLUMNS = re.compile(r"""
      ^(?: vor | nach | familien | ruf | geburts                # "Vorname", "Geburtsname"
         | given\ ? | sur | last\ ? | first\ ? )name            # "given name", "Surname"
    | sn$                                                       # a directory's surname: "sn"
    """, re.I | re.X)
ROLE_PHRASES = re.compile(r"""
    (?<![\w-])
    (?: erstellt\ von | geändert\ von | vertreten\ durch         # "erstellt von"
      | i\.\s?a\. | i\.\s?v\. | c/o | geb\. | geborene?          # "i. A.", "c/o", "geb."
      | (?: gemeldet | angelegt | beantragt | bestellt | freigegeben | genehmigt  # done
          | unterschrieben | abgeholt | geprüft | übergeben                     # by someone
          | protokolliert | notiert | protokoll | notiz | gesprächsnotiz | rückruf  # noted
          ) \s+ (?:von|durch|mit|an) )                           # "… von", "… mit"
    (?![\w-])
    """, re.I | re.X)
# "… Vertrieb:"
ROLE_QUALIFIED = re.compile(r"""
    [ \t]+ (?: (?:für|im|in\ der|bei|vor) [ \t]+ )?              # " für ", " in der "
    [\w-]+ [ \t]* (?P<colon>:) [ \t]*                            # "Vertrieb: "
    """, re.X)
ROLE_REST = re.compile(r"""
    [ \t]* (?P<colon>[:–-])? [ \t]* ,? [ \t]*                    # ": ", " – ", ", "
    (?: (?:ist|sind|war|wird|bleibt|bleiben) [ \t]+ )?           # "ist "
    """, re.X)
# the name after these may be one word
SIGNED = ("i.a.", "i.v.", "ppa.", "gez.", "c/o", "geb.", "geboren", "geborene")


# -- the cue words (the rules led by a name's form: rag/privacy/name_forms.py) ---------------------
def after_salutations(text, toks):
    """Names after Herr/Frau/Dr./Prof. and after openers ("Hallo Anna")."""
    for i, (s, e, raw) in enumerate(toks):
        low = raw.lower()
        if low in SALUTATIONS or low in ("dr.", "prof.", "dipl.-ing.", "mag."):
            if i and toks[i - 1][2].lower() in SALUTATIONS | TITLES:
                continue  # inside a run of titles: the first one already looked
            j = skip_titles(toks, i)
            if (j < len(toks) and ("\n" not in text[e:toks[j][0]]
                                   or alone_on_line(text, s, toks[j - 1][1], toks[j][0]))):
                span = phrase(text, toks, j, strong=True)
                if span:
                    yield span
        elif low in OPENERS or (low == "geehrte" or low == "geehrter"):
            j = skip_titles(toks, i + 1)
            if j < len(toks) and j == i + 1 and is_first_name(toks[j][2].rstrip(".")):
                span = phrase(text, toks, j, strong=True)
                if span:
                    yield span


def alone_on_line(text, start, end, following):
    """True when text[start:end] fills its line and `following` starts the next one ("Frau\\nAnna
    Weber")."""
    return opens_line(text, start) and text[end:following].strip(" \t") == "\n"


def after_roles(text, toks):
    """Names after role words: "Ansprechpartnerin: Jolanda Krüger", "IT-Leiter Jens Hollander"."""
    roles = [(e, raw) for s, e, raw in toks if raw[:1].isalpha() and ROLE_WORDS.fullmatch(raw)]
    roles += [(m.end(), m.group()) for m in ROLE_PHRASES.finditer(text)]
    for role_end, role in roles:
        # "Ansprechpartnerin ist …"
        rest = ROLE_QUALIFIED.match(text, role_end) or ROLE_REST.match(text, role_end)
        i = at(toks, rest.end())
        j = skip_titles(toks, i)
        if j >= len(toks) or "\n" in text[role_end:toks[j][0]]:
            continue
        strong = bool(rest.group("colon")) or j > i or role.lower().replace(" ", "") in SIGNED
        span = phrase(text, toks, j, strong=strong)
        if not strong and not (span and " " in text[span[0]:span[1]]):
            # two name words ending the phrase: "Bewerberin Ioana Popescu,"
            wide = phrase(text, toks, j, strong=True)
            span = (wide if wide and " " in text[wide[0]:wide[1]]
                    and CLAUSE_END.match(text, wide[1]) else None)
        if span:
            yield span


def after_greetings(text, toks):
    """The name under or after a closing: "Mit freundlichen Grüßen\\nKatrin Focke", "Viele
    Grüße, Anna".

    A short closing ("LG", "Gruß") needs a comma or a line break before the name ("LG Monitor" is a
    screen).
    """
    for m in GREETINGS.finditer(text):
        rest = re.match(r"[ \t]*(?P<sep>[,!.]?)[ \t]*(?:aus[ \t]+\w+[ \t]*)?(?P<nl>\n?)[ \t]*\n?[ "
                        r"\t]*(?:(?:i\.[ \t]?A\.|i\.[ \t]?V\.|ppa\.|gez\.|Ihr|Ihre|Dein|Deine|Euer|"
                        r"Eure)[ \t]+)?", text[m.end():])
        line_start = opens_line(text, m.start())
        if (" " not in m.group() and not (rest.group("sep") == "," or rest.group("nl")
                                          or line_start)):
            continue
        i = at(toks, m.end() + rest.end())
        j = skip_titles(toks, i)
        span = phrase(text, toks, j, strong=True) if j < len(toks) else None
        own_line = (span and re.match(r"[ \t]*(?:\n|$)", text[span[1]:])
                    and ("\n" in text[m.end():span[0]] or line_start))
        # "LG Monitor UltraFine", "LG Monitor" on its line: a screen;
        # "Gruß Piotrek", "LG Anna": names
        if " " not in m.group() and not (
                rest.group("sep") == "," or rest.group("nl") or own_line and (
                    not m.group().isupper() or span and is_first_name(text[span[0]:span[1]]))):
            continue
        if (span and (" " in text[span[0]:span[1]] or is_first_name(text[span[0]:span[1]])
                      or own_line)):
            if not re.match(r"[ \t]*(?:GmbH|AG\b|KG\b|Team\b)", text[span[1]:]):
                yield span


def in_fields(text, toks):
    """Values of "Name:", "Vorname:", "Von:", "Teilnehmer:" fields, a list ("Anna Weber, Jolanda
    Krüger und Tobias Lange") included; "Name, Vorname: Mustermann, Max" is one name."""
    for m in FIELD_LABELS.finditer(text):
        start = m.end()
        while True:
            i = at(toks, start)
            j = skip_titles(toks, i)
            if j >= len(toks) or "\n" in text[start:toks[j][0]]:
                break
            span = phrase(text, toks, j, strong=True)
            if not span or re.match(r"[ \t]*:", text[span[1]:]):
                break  # ("…; Protokoll: Wanda": the next field's label)
            comma = re.match(r",[ \t]*", text[span[1]:])  # "Mustermann, Max"
            if comma and " " not in text[span[0]:span[1]]:
                k = at(toks, span[1] + comma.end())
                second = phrase(text, toks, k, strong=True) if k < len(toks) else None
                if second and " " not in text[second[0]:second[1]] and (
                        m.group("reverse") or is_first_name(text[second[0]:second[1]])
                        or re.match(r"[ \t]*;", text[second[1]:]) or start == m.end() and re.match(
                            r"[ \t]*$", text[second[1]:], re.M)):  # "Mbeki, Thandiwe; Wagner, Till"
                    span = (span[0], second[1])
            yield span
            # the next name
            more = re.match(r"[ \t]*(?:\([^)\n]*\)[ \t]*)?(?:,|;|\bund\b|&)[ \t]*", text[span[1]:])
            if not more:
                break
            start = span[1] + more.end()


def in_tables(text, toks):
    """Cells of table columns titled Name, Ansprechpartner(in), Kontakt, … (Markdown, "a | b" or
    CSV rows)."""
    for title, (start, end, cell) in column_cells(text, NAME_COLUMNS.match):
        cell_toks = [(s + start, e + start, t) for s, e, t in tokens(cell)]
        j = skip_titles(cell_toks, 0)
        span = phrase(text, cell_toks, j, strong=True) if j < len(cell_toks) else None
        # "Kruse, Jana" as an export writes it
        comma = span and re.match(r",[ \t]*", text[span[1]:end])
        if comma:
            k = at(cell_toks, span[1] + comma.end())
            second = phrase(text, cell_toks, k, strong=True) if k < len(cell_toks) else None
            if second and " " not in text[second[0]:second[1]] and not text[second[1]:end].strip():
                span = (span[0], second[1])
        if span and re.fullmatch(r"(?:[\s,;(–-].*)?", text[span[1]:end], re.S) and (
                j > 0 or " " in text[span[0]:span[1]] or is_first_name(text[span[0]:span[1]]) or
                SINGLE_WORD_COLUMNS.match(title)):
            # one word alone only with a salutation, as a listed first name or in a column
            # titled Nachname or Vorname ("Clients" in a column "Name" is a VLAN)
            yield span


CONTEXTS = (after_salutations, name_forms.after_first_names, after_roles, after_greetings,
            in_fields, in_tables, name_forms.alone, name_forms.in_capitals, name_forms.lower_case,
            name_forms.before_addresses, name_forms.reversed_names, name_forms.mentions,
            name_forms.after_prepositions, name_forms.initials, name_forms.vietnamese,
            name_forms.unlisted, name_forms.vocative)


def with_surname(text, start, end, kept):
    """The end of a name found again, taking a surname right after it: "Deepak" again as "Deepak
    Venkataraman" (not into a firm: "Malhotra Freight Forwarding Ltd", nor into another name already
    kept)."""
    surname = re.match(r"[ \t]+([A-ZÄÖÜ][\w'’-]+)", text[end:])
    if not surname or not looks_like_name(surname.group(1)) or is_noun(surname.group(1)):
        return end
    longer = end + surname.end()
    if (AFTER_NOT_PERSON.match(text, longer)
            or not all(longer <= ks or start >= ke for ks, ke in kept)):
        return end
    return longer


def find(text):
    """All person names in `text`: [Match("NAME", start, end, value)], sorted, never overlapping.

    Longer spans win over shorter ones inside them; then every surname or listed first name found
    is looked for again as a whole word ("Frau Weber … Weber bestätigte"), except after an
    article or preposition ("im Keller" is no Frau Keller).
    """
    toks = tokens(text)
    spans = {span for context in CONTEXTS for span in context(text, toks)}
    kept = []
    for s, e in sorted(spans, key=lambda se: (-(se[1] - se[0]), se[0])):
        if all(e <= ks or s >= ke for ks, ke in kept):
            kept.append((s, e))
    words = {w for s, e in kept for w in re.split(r"[\s,]+", text[s:e])
             if len(w) > 2 and not initial(w) and w.lower() not in PARTICLES}
    for w in sorted(words):
        for m in re.finditer(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", text):
            before = text[max(0, m.start() - 12):m.start()]
            if all(m.end() <= ks or m.start() >= ke for ks, ke in kept) \
                    and not AFTER_ARTICLE.search(before) and not BEFORE_NOT_PERSON.search(before) \
                    and not AFTER_NOT_PERSON.match(text, m.end()):
                kept.append((m.start(), with_surname(text, m.start(), m.end(), kept)))
                # (not "Spedition Claußen e.K." after "Dieter Claußen")
    return [Match("NAME", s, e, text[s:e]) for s, e in sorted(kept)]
