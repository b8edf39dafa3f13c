"""ask_rag.py --audit-show N: one line of the audit log (rag/audit/log.py) as readable German text.

    show("knowledge.audit.jsonl", -1)
    -> "Zeit:      2025-…\nFrage:     Wie lege ich eine Mailbox an?\n…\nZitate:    [2]
       gültig\n…"

Reading the log is a door's job: the lines name the checks in the words the terminal uses for them.
Does not handle: several entries at once, filtering by user or time.
"""
from rag.check.citations import describe_citations
from rag.audit.log import read


def describe_timings(t):
    """The timings of an entry in one line.

    Example: {"embed_s": 0.1, "first_token_s": 0.4, "predicted_n": 42, "predicted_ms": 2100}
    -> "Einbetten 0.1 s · erstes Token 0.4 s · 42 Tokens in 2.1 s"
    """
    parts = [f"{label} {t[key]} s" for key, label in (
        ("rewrite_s", "Umschreiben"), ("expand_s", "Erweitern"), ("embed_s", "Einbetten"),
        ("retrieve_s", "Suche"), ("choose_s", "Auswahl"), ("first_token_s", "erstes Token"))
        if key in t]
    if "predicted_n" in t:
        parts.append(f"{t['predicted_n']} Tokens in {t.get('predicted_ms', 0) / 1000:.1f} s")
    return " · ".join(parts) or "-"


def unsupported_line(unsupported):
    """Example: ["14 Tage"] -> "nicht in den Quellen: 14 Tage"; [] -> "alle in den Quellen";
    None -> "–" """
    if unsupported is None:
        return "–"
    return ("nicht in den Quellen: " + ", ".join(unsupported) if unsupported
            else "alle in den Quellen")


def guard_line(report):
    """Example: {"removed": [{…}], "flagged": [], "withheld": [], "replaced": None}
    -> "1 Stelle(n) im Prompt entfernt" """
    if not report:
        return "–"
    parts = [f"{len(report.get(key) or [])} {label}" for key, label in (
        ("removed", "Stelle(n) im Prompt entfernt"), ("flagged", "Angabe(n) nicht in den Quellen"),
        ("withheld", "zurückgehalten")) if report.get(key)]
    if report.get("replaced"):
        parts.append(f"Antwort ersetzt ({report['replaced']})")
    return ", ".join(parts) or "nichts gefunden"


def searched_lines(searched):
    """What rag/search/expand.py changed about the search, as lines of show().

    Example: {"original": "Und wie lösche ich sie?", "rewritten": True, "expansions": ["Mailbox
    löschen"], …}
             -> ["Gestellt:  Und wie lösche ich sie?", "Erweitert: Mailbox löschen"]
    """
    if not searched:
        return []
    lines = [f"Gestellt:  {searched['original']}"] if searched.get("rewritten") else []
    if searched.get("previous"):
        lines.append(f"Davor:     {searched['previous']}")
    for key, label in (("expansions", "Erweitert"), ("chosen", "Gewählt"),
                       ("feedback", "Rückkopplung")):
        if searched.get(key):
            lines.append(f"{label}: {' · '.join(searched[key])}")
    if searched.get("warning"):
        lines.append(f"Warnung:   {searched['warning']}")
    return lines


def show(path, number):
    """Entry `number` (1 = oldest, -1 = newest) as readable German text."""
    entries = read(path)
    if not entries or number == 0 or abs(number) > len(entries):
        raise SystemExit(f"Fehler: Eintrag {number} gibt es nicht – das Audit-Log "
                         f"hat {len(entries)} Einträge.")
    e = entries[number - 1 if number > 0 else number]
    lines = [f"Zeit:      {e.get('time')}",
             f"Frage:     "
             f"{e.get('question') if e.get('question') is not None else 'nicht gespeichert'}"]
    lines += searched_lines(e.get("searched"))
    lines += [f"Wer:       {e['user']} (Pseudonym)"] if e.get("user") else []
    lines += [f"Server:    {e.get('server')} (Modell {e.get('model')})",
              f"Suche:     {e.get('mode')}, Stufe {e.get('strategy')}",
              f"Prompt:    sha256 {e.get('prompt_sha256')}",
              "Quellen:"]
    for n, chunk in enumerate(e.get("chunks", []), start=1):
        # forgotten: none
        where = f"{chunk['path']} › {chunk['heading']}" if chunk.get("heading") else chunk["path"]
        flags = f", ⚠ {', '.join(chunk['flags'])}" if chunk.get("flags") else ""
        lines.append(f"  [{n}] {where} (Chunk {chunk.get('chunk_index')}, "
                     f"sha256 {chunk['sha256'][:12]}…{flags})")
    lines += [f"Antwort:   {e.get('answer')}",
              f"Zitate:    "
              f"{describe_citations(e['citations']) if e.get('citations') else 'kein LLM-Aufruf'}"]
    if e.get("support") is not None:  # evidence and supported citations (rag/check/support.py)
        from rag.check.support import describe
        lines += ["Prüfung:   " + line for line in describe({"evidence": e.get("evidence") or [],
                                                            "statements": e["support"]})]
    if e.get("answerable"):
        a = e["answerable"]
        judged = ", ".join(f"[{j['n']}] {j['p_yes']}" for j in a.get("judged") or [])
        lines.append(f"Prüfung:   beantwortbar? P(ja) {judged or a['p_yes']} "
                     f"(Schwelle {a['threshold']}"
                     + (", je Abschnitt)" if judged else ")")
                     + (" – abgelehnt" if a["refused"] else ""))
    g = e.get("grounding")
    if g and (g.get("echo") or g.get("declined")):  # rag/check/echo.py, declined.py
        lines.append(f"Prüfung:   {g['why']}"
                     + (f": „{g['answer']}“" if g.get("answer") else "")
                     + (f" – ersetzt durch die Zeile aus [{g['line']}]" if g.get("line")
                        else " – zurückgezogen"))
    elif g:
        lines.append(f"Prüfung:   Fakten {', '.join(g['facts'])} in Stellen zur Frage? "
                     f"Anteil {g['coverage']} (nötig {g['needed']})"
                     + (f" – zurückgezogen ({g.get('why') or 'zu wenig'}): „{g['answer']}“"
                                                  if g["refused"] else ""))
    lines += [f"Fakten:    {unsupported_line(e.get('unsupported'))}",
              f"Schutz:    {guard_line(e.get('guard'))}",
              f"Zeiten:    {describe_timings(e.get('timings') or {})}"]
    return "\n".join(lines)
