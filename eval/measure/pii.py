"""Precision and recall of the personal-data recogniser (rag/privacy/detect.py) per kind: evaluate.py --pii.

    {"text": "IBAN DE89 3704 0044 0532 0130 00", "entities": [{"kind": "IBAN", "value": "DE89…"}]}
    -> | IBAN | 1 | 1 | 1 | 100.0% | 100.0% |

Does not handle: masking (only what find() finds is measured, not the placeholders).
"""
import collections
import json

from rag.privacy import detect

from eval.measure.common import read_jsonl


def evaluate_pii(path):
    """Precision and recall of rag/privacy/detect.py per kind (and "gesamt") over {"text", "entities"} lines.

    A found value counts as right when kind and normalised value match an expected entity. A line
    may carry "off": [kinds] – kinds switched off for that text, as RAG_PII_KINDS does: they are not
    looked for there, so their values are near misses (eval/pii.jsonl switches off the kinds it does
    not label).
    Example row: {"IBAN": {"expected": 9, "found": 9, "right": 9, "precision": 1.0, "recall": 1.0}}
    """
    items = read_jsonl(path, "PII-Datei", 'JSON Lines mit "text", "entities" und optional "off"')
    for item in items:
        unknown = set(item.get("off", [])) - set(detect.KINDS)
        if unknown or not isinstance(item.get("text"), str) or not isinstance(item.get("entities"), list):
            raise SystemExit(f"Fehler: PII-Datei {path} nicht lesbar ("
                             + (f"unbekannte Art in \"off\": {sorted(unknown)[0]}" if unknown else "text oder entities fehlt")
                             + ") – JSON Lines mit \"text\", \"entities\" und optional \"off\" erwartet.")
    tally, misses = {k: collections.Counter() for k in (*detect.KINDS, "gesamt")}, []
    for item in items:
        kinds = frozenset(detect.KINDS) - set(item.get("off", []))
        expected = collections.Counter((e["kind"], detect.normalise(e["kind"], e["value"])) for e in item["entities"])
        found = collections.Counter((m.kind, detect.normalise(m.kind, m.value))
                                    for m in detect.find(item["text"], kinds=kinds))
        for key in sorted(expected | found):
            right = min(expected[key], found[key])
            for kind in (key[0], "gesamt"):
                tally[kind].update(expected=expected[key], found=found[key], right=right)
            if expected[key] != found[key]:
                misses.append({"text": item["text"], "kind": key[0], "value": key[1],
                               "expected": expected[key], "found": found[key]})
    rows = {kind: {**{k: t[k] for k in ("expected", "found", "right")},
                   "precision": t["right"] / t["found"] if t["found"] else None,
                   "recall": t["right"] / t["expected"] if t["expected"] else None}
            for kind, t in tally.items()}
    return rows, misses, sum(1 for i in items if not i["entities"])


def print_pii_table(rows, n_negative):
    """The German table of evaluate_pii(): one row per kind, "gesamt" last."""
    def pct(x):
        return "–" if x is None else f"{x:.1%}"
    print(f"| Art | erwartet | gefunden | richtig | Präzision | Recall |  ({n_negative} Texte ohne Werte)")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, r in rows.items():
        print(f"| {kind} | {r['expected']} | {r['found']} | {r['right']} | {pct(r['precision'])} | {pct(r['recall'])} |")


def run_pii(args):
    """evaluate.py --pii [DATEI]: the table (or --json); with --misses every value found or missed wrongly."""
    rows, pii_misses, n_negative = evaluate_pii(args.pii)
    if args.json:
        print(json.dumps({"pii": rows, "misses": pii_misses if args.misses else None}, ensure_ascii=False))
        return
    print_pii_table(rows, n_negative)
    for m in pii_misses if args.misses else []:
        print(f"  {m['kind']} {m['value']}: erwartet {m['expected']}, gefunden {m['found']} – {m['text']}")
