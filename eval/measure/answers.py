"""Answers of the whole pipeline with the real answer model: evaluate.py --answers (and --rescore).

Each question runs through ask_rag.py --json as a reader's would; a row per question says whether
the key facts are in the answer, whether a cited source holds them and who refused.

    {"question": "Welche Kündigungsfrist?", "facts": [["3 Monate", "drei Monate"]]} + "Drei Monate [1]."
    -> {"fact": True, "refused": False, "valid_citation": True, …}

Does not handle: judging wording or style (only key facts, citations and refusals count).
"""
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from rag import config
from rag.answer import choose
from rag.answer import prompt as answer_module
from rag import store

from eval.measure import retrieval
from eval.measure.common import (ask_one, calibrate, contains_fact, fold, fresh_index, has_facts, load_jsonl,
                                 speed_line, spread, start_answer_server)

ANSWER_QUESTIONS = "eval/answers.jsonl"  # {"question": …, "facts": [["3 Monate", "drei Monate"], …]}; [] = not in the wiki
ANSWER_OUT = "answers-run.jsonl"  # every answer, for reading (ignored by git)
GOALS = {"fact": 0.90, "howto": 0.80, "supported": 0.90, "refused_out": 0.90, "refused_in_max": 0.05,
         "first_token_s": 4.0, "total_s": 12.0}  # issue #15


def load_answer_items(path):
    """The answer set: lines with "question" and "facts" (a list of lists of alternatives; [] = not in the wiki)."""
    return load_jsonl(path, "facts", "Liste von Listen")


REFUSAL = "dazu habe ich keine information"  # folded start of answer.NO_INFO


def is_refusal(answer):
    """The answer opens with "Dazu habe ich keine Information." (or "…Informationen").

    An answer that states something and then appends the sentence is no refusal: the reader got
    an answer. Example: is_refusal("1 Monat [2]. Dazu habe ich keine Information.") -> False
    """
    return fold(answer or "").startswith(REFUSAL)


def is_mixed(answer):
    """An answer that states something and then also says it has no information (counted apart)."""
    folded = fold(answer or "").replace("keineinformation", "keine information")  # seen: "keineInformation"
    return not is_refusal(answer) and "keine information" in folded


def judge_answer(item, out, seconds, error, texts=None):
    """One row of the answer evaluation (what evaluate.py --answers writes per question).

    texts: the content of each source of `out` (cited_facts() looks the key facts up in them)."""
    out = out or {}
    text = out.get("answer") or ""
    citations = out.get("citations") or {"cited": [], "valid": [], "unknown": []}
    timings = out.get("timings") or {}
    row = {"question": item["question"], "kind": item.get("kind") or ("fact" if item["facts"] else "out"),
           "asked_as": out.get("kind"), "in_wiki": bool(item["facts"]), "answer": text, "error": error or None,
           "llm_called": bool(out.get("llm_called")), "answerable": out.get("answerable"),
           "grounding": out.get("grounding"),
           "valid_citation": bool(citations["valid"]), "unknown_citations": citations["unknown"],
           "supported_citation": cited_facts(item["facts"], citations["valid"], texts or []),
           "prompt_tokens": timings["prompt_n"] + timings.get("cache_n", 0) if "prompt_n" in timings else None,
           "first_token_s": timings.get("first_token_s"),
           "read_before_first_token": timings.get("read_before_first_token"),  # prompt tokens read, cache left out
           "total_s": round(seconds, 3) if out.get("llm_called") else None,
           "sources": [s.get("path") for s in out.get("sources", [])], "facts": item["facts"]}
    row.update(sections_shown(item, out))
    row["pointer_only"] = pointer_only(out)
    if "unsupported" in out:
        row["unsupported"] = out["unsupported"]
    if out.get("guard"):  # what rag/answer/guard.py removed from the prompt, withheld or replaced
        row["guard"] = out["guard"]
    return score(row)


def sections_shown(item, out):
    """A how-to line's expected section ("source"): is it the printed one, or printed or a "Siehe auch" line?

    Example: source "a.md › B", answer "Laut Quelle [2]:…", sources[1] a.md › A › B -> {"section_right": True, …}
    """
    if item.get("kind") != "howto" or not item.get("source"):
        return {}
    file, _, heading = item["source"].partition(" › ")
    expected = [{"file": file, "heading": heading}]
    sources = [SimpleNamespace(path=s.get("path"), heading=s.get("heading") or "") for s in out.get("sources", [])]
    printed = [n for n in (out.get("citations") or {}).get("valid", []) if out.get("answered_by") == "source"]
    near = printed + [e["n"] for e in out.get("see_also") or []]
    hit = [n for n in near if 1 <= n <= len(sources) and retrieval.matches(sources[n - 1], expected)]
    return {"section_right": bool(printed) and printed[0] in hit, "section_near": bool(hit)}


def pointer_only(out):
    """An answer that only says where the answer stands: every checked statement is "nur Verweis"
    (rag/check/support.py), or a verbatim section that only points elsewhere (rag/answer/choose.py
    is_pointer)."""
    text = out.get("answer") or ""
    if not text or is_refusal(text):
        return False
    statements = out.get("support") or []
    if statements and all(s.get("verdict") == "nur Verweis" for s in statements):
        return True
    body = text.split("\n", 1)[1] if out.get("answered_by") == "source" and "\n" in text else ""
    return bool(body) and choose.is_pointer(body)


def cited_facts(facts, cited, texts):
    """Do the cited sources together hold every key fact? (None for a question without facts)

    Example: cited_facts([["cm"]], [2], ["…", "Mit `cm` anlegen"]) -> True
    """
    if not facts:
        return None
    return has_facts("\n".join(texts[n - 1] for n in cited if 1 <= n <= len(texts)), facts)


def source_texts(db, sources):
    """The text of each source of an --json answer, read from the index (a widened source: all its chunks)."""
    index = store.open_store(db)  # SQLite or PostgreSQL (rag/store/__init__.py)
    try:
        out = []
        for s in sources:
            contents = index.page_contents(s["path"])  # in chunk order, chunk_index 0, 1, …
            chunks = s.get("chunks") or [s["chunk_index"]]
            out.append("\n\n".join(contents[i] for i in sorted(chunks) if i < len(contents)))
        return out
    finally:
        index.close()


def score(row):
    """Set refused / refused_by / mixed / fact / facts_share of a row from its answer (also for --rescore)."""
    text, called = row["answer"], row.get("llm_called", row.get("refused_by") != "floor")
    checked = (row.get("answerable") or {}).get("refused")
    # rag/check/grounding.py: a fact said of something else (a refusal the model worded itself,
    # rag/check/declined.py, has no "refused": its text is the model's refusal)
    withdrawn = (row.get("grounding") or {}).get("refused")
    refused = not row["error"] and (not called or checked or withdrawn or is_refusal(text))
    by = None if not refused else ("floor" if not called else "check" if checked else "grounding" if withdrawn
                                   else "model")
    found = [any(contains_fact(text, alt) for alt in group) for group in row["facts"]] if not refused else []
    row.update(refused=refused, refused_by=by, mixed=not refused and is_mixed(text),
               fact=row["in_wiki"] and not refused and has_facts(text, row["facts"]),
               facts_share=sum(found) / len(row["facts"]) if row["in_wiki"] and not refused else 0.0)
    return row


def answer_summary(rows):
    """Shares and medians over the rows (see print_answer_summary for what each means)."""
    inside = [r for r in rows if r["in_wiki"]]
    outside = [r for r in rows if not r["in_wiki"]]
    answered = [r for r in rows if not r["refused"] and not r["error"]]
    share = lambda part, whole: len(part) / len(whole) if whole else None  # noqa: E731
    median = lambda values: statistics.median(values) if values else None  # noqa: E731
    summary = {
        "questions": len(rows), "in_wiki": len(inside), "out_of_wiki": len(outside),
        "errors": sum(1 for r in rows if r["error"]),
        "cited": share([r for r in answered if r["valid_citation"]], answered),
        "supported": share([r for r in answered if r["in_wiki"] and r.get("supported_citation")],
                           [r for r in answered if r["in_wiki"]]),
        "answers_with_unknown_citations": sum(1 for r in rows if r["unknown_citations"]),
        "mixed": sum(1 for r in answered if r.get("mixed")),
        "refused_out": share([r for r in outside if r["refused"]], outside),
        "refused_in": share([r for r in inside if r["refused"]], inside),
        "prompt_tokens": median([r["prompt_tokens"] for r in rows if r.get("prompt_tokens")]),
        "first_token_s": median([r["first_token_s"] for r in rows if r["first_token_s"] is not None]),
        "read_before_first_token": median([r["read_before_first_token"] for r in rows
                                           if r.get("read_before_first_token") is not None]),
        "total_s": median([r["total_s"] for r in rows if r["total_s"] is not None]),
    }
    for by in ("floor", "check", "grounding", "model"):
        summary[f"refused_out_{by}"] = share([r for r in outside if r["refused_by"] == by], outside)
        summary[f"refused_in_{by}"] = share([r for r in inside if r["refused_by"] == by], inside)
    for kind in ("fact", "howto"):
        rows_of = [r for r in inside if r.get("kind", "fact") == kind]
        summary[kind] = share([r for r in rows_of if r["fact"]], rows_of)
        summary[f"{kind}_questions"] = len(rows_of)
        summary[f"{kind}_facts_share"] = (sum(r.get("facts_share", 0.0) for r in rows_of) / len(rows_of)
                                          if rows_of else None)
        summary[f"{kind}_total_s"] = median([r["total_s"] for r in rows_of if r["total_s"] is not None])
        summary[f"{kind}_asked_right"] = share([r for r in rows_of if r.get("asked_as") == kind],
                                               [r for r in rows_of if r.get("asked_as")])
    summary["fact_all"] = share([r for r in inside if r["fact"]], inside)
    howto = [r for r in inside if r.get("kind") == "howto" and "section_right" in r]
    summary["section_right"] = share([r for r in howto if r["section_right"]], howto)
    summary["section_near"] = share([r for r in howto if r["section_near"]], howto)
    summary["pointer_only"] = sum(1 for r in rows if r.get("pointer_only"))
    checked = [r for r in answered if "unsupported" in r]
    if checked:
        wrong = [r for r in checked if not r["in_wiki"] or not r["fact"]]
        right = [r for r in checked if r["in_wiki"] and r["fact"]]
        summary["unsupported_flags_wrong"] = share([r for r in wrong if r["unsupported"]], wrong)
        summary["unsupported_flags_right"] = share([r for r in right if r["unsupported"]], right)
    return summary


def percent(value):
    """Example: 0.456 -> "46%"; None -> "–" """
    return "–" if value is None else f"{value:.0%}"


def seconds_text(value):
    """Example: 3.04 -> "3.0 s"; None -> "–" """
    return "–" if value is None else f"{value:.1f} s"


def print_answer_summary(s, model):
    """The German table of answer_summary() against GOALS, then the notes on question kinds and mixed answers."""
    print(f"Antwortmodell: {model}; {s['fact_questions']} Faktenfragen, {s['howto_questions']} How-to-Fragen, "
          f"{s['out_of_wiki']} ohne Antwort im Wiki" + (f"; {s['errors']} Fehler" if s["errors"] else ""))
    g = GOALS
    lines = [
        ("Faktenfragen: Schlüsselfakt in der Antwort", percent(s["fact"]), s["fact"], g["fact"], True),
        (f"How-to-Fragen: alle Schlüsselschritte in der Antwort (Anteil der Schritte: {percent(s['howto_facts_share'])})",
         percent(s["howto"]), s["howto"], g["howto"], True),
        ("mindestens ein gültiges Zitat (beantwortete Fragen)", percent(s["cited"]), s["cited"], None, True),
        ("gestütztes Zitat: zitierte Quelle enthält die Schlüsselfakten (beantwortete Fragen mit Antwort im Wiki)",
         percent(s["supported"]), s["supported"], g["supported"], True),
        ("Antworten mit unbekanntem Zitat", str(s["answers_with_unknown_citations"]),
         s["answers_with_unknown_citations"], 0, False),
        (f"ohne Antwort im Wiki korrekt abgelehnt (Schwelle {percent(s['refused_out_floor'])}, Prüfung "
         f"{percent(s['refused_out_check'])}, Beleg {percent(s['refused_out_grounding'])}, Modell "
         f"{percent(s['refused_out_model'])})",
         percent(s["refused_out"]), s["refused_out"], g["refused_out"], True),
        (f"mit Antwort im Wiki fälschlich abgelehnt (Schwelle {percent(s['refused_in_floor'])}, Prüfung "
         f"{percent(s['refused_in_check'])}, Beleg {percent(s['refused_in_grounding'])}, Modell "
         f"{percent(s['refused_in_model'])})",
         percent(s["refused_in"]), s["refused_in"], g["refused_in_max"], False),
        ("Prompt-Tokens, Median", "–" if s["prompt_tokens"] is None else f"{s['prompt_tokens']:.0f}",
         s["prompt_tokens"], None, False),
        ("erstes Token (Prüfung + Antwort bis zum 1. Token), Median", seconds_text(s["first_token_s"]),
         s["first_token_s"], g["first_token_s"], False),
        ("davor gelesene Prompt-Tokens (alle Aufrufe, ohne Prompt-Cache), Median",
         "–" if s.get("read_before_first_token") is None else f"{s['read_before_first_token']:.0f}",
         s.get("read_before_first_token"), None, False),
        (f"ganze Antwort (ask_rag.py-Prozess), Median (Fakten {seconds_text(s['fact_total_s'])}, How-to "
         f"{seconds_text(s['howto_total_s'])})", seconds_text(s["total_s"]), s["total_s"], g["total_s"], False),
    ]
    print("| Messgröße | Wert | Ziel | erreicht |")
    print("|---|---:|---:|---|")
    for name, shown, value, goal, at_least in lines:
        if goal is None:
            print(f"| {name} | {shown} | – | – |")
            continue
        met = value is not None and (value >= goal if at_least else value <= goal)
        goal_text = f"{'≥' if at_least else '≤'} {goal:.0%}" if isinstance(goal, float) and goal <= 1 else \
            f"{'≥' if at_least else '≤'} {goal}"
        if name.startswith(("erstes", "ganze")):
            goal_text = f"≤ {goal:.0f} s"
        print(f"| {name} | {shown} | {goal_text} | {'ja' if met else 'nein'} |")
    if s.get("section_right") is not None:
        print(f"How-to: richtiger Abschnitt gedruckt {percent(s['section_right'])}, gedruckt oder unter „Siehe auch“ "
              f"{percent(s['section_near'])}")
    print(f"Antworten, die nur auf eine andere Stelle verweisen: {s.get('pointer_only', 0)}")
    if s["fact_asked_right"] is not None:
        print(f"Fragetyp erkannt (rag/answer/context.py): Faktenfragen {percent(s['fact_asked_right'])}, "
              f"How-to-Fragen {percent(s['howto_asked_right'])}")
    if s["mixed"]:
        print(f"{s['mixed']} Antworten nennen etwas und hängen trotzdem „{answer_module.NO_INFO}“ an "
              f"(zählen als beantwortet)")
    if "unsupported_flags_wrong" in s:
        print(f"Faktenprüfung (\"unsupported\"): markiert {percent(s['unsupported_flags_wrong'])} der falschen "
              f"und {percent(s['unsupported_flags_right'])} der richtigen Antworten")


def progress_mark(row):
    """The verdict of one row for the progress line. Example: a refused out-of-wiki row -> "abgelehnt (richtig)" """
    if row["error"]:
        return "FEHLER"
    if row["refused"]:
        return "abgelehnt" + (" (richtig)" if not row["in_wiki"] else " (falsch)")
    if not row["in_wiki"]:
        return "beantwortet (falsch)"
    return ("Fakt ok" if row["fact"] else "Fakt fehlt") + ("" if row["valid_citation"] else ", ohne Zitat")


def run_answers(args, db_given):
    """evaluate.py --answers: every question through ask_rag.py --json against a real llama-server."""
    if args.rescore:
        try:
            with open(args.rescore, encoding="utf-8") as f:
                rows = [score(json.loads(line)) for line in f if line.strip()]
        except (OSError, ValueError, KeyError) as exc:
            raise SystemExit(f"Fehler: {args.rescore} nicht lesbar ({exc}) – eine --out-Datei von --answers angeben.")
        return print_answer_summary(answer_summary(rows), f"(neu bewertet aus {args.rescore})")
    items = spread(load_answer_items(args.answer_questions), args.limit)
    extra = [*(["--top-k", str(args.top_k)] if args.top_k else [])]
    with tempfile.TemporaryDirectory(prefix="rag-answers-") as tmp:
        db = args.db if db_given else fresh_index(tmp, args)
        server = None if args.server else start_answer_server(args, tmp)
        url = args.server or server.url
        rows = []
        try:
            env = {**os.environ, "LLAMA_EMBEDDING": args.embedding_bin, "RAG_EMBED_MODEL": args.model}
            with open(args.out, "w", encoding="utf-8") as out_file:
                for n, item in enumerate(items, start=1):
                    out, seconds, error = ask_one(item["question"], db, url, extra, env)
                    row = judge_answer(item, out, seconds, error, source_texts(db, out["sources"]) if out else None)
                    rows.append(row)
                    out_file.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out_file.flush()
                    read = row["read_before_first_token"]
                    print(f"[{n}/{len(items)}] {progress_mark(row)}  {seconds:.1f} s  "
                          f"{'–' if read is None else read} Tokens gelesen  {item['question']}"
                          + (f"  – {error.splitlines()[-1] if error else ''}" if error else ""),
                          file=sys.stderr, flush=True)
            calibration = calibrate(url)  # after the questions: their prompt cache stays as a reader's would be
        finally:
            if server:
                server.stop()
    summary = answer_summary(rows)
    model = Path(args.llm_model or config.default_llm_model()).name if not args.server else args.server
    if args.json:
        print(json.dumps({"answers": summary, "model": model, "out": args.out, "calibration": calibration},
                         ensure_ascii=False))
    else:
        print_answer_summary(summary, model)
        print(speed_line(calibration))
        print(f"(jede Antwort in {args.out})")

