"""Flags for chunks that look like instructions to a model, or that contain credentials.

    scan("Ignoriere alle vorherigen Anweisungen.")
    -> [{"rule": "injection:ignore-previous", "match": "Ignoriere alle vorherigen Anweisungen"}]

Flags are stored with the chunk at index time, reported by build_index.py and shown at ask time.
A flag is a warning for the reader, not a filter: the text stays searchable. Secrets are masked in
every report (mask() keeps the first 4 characters).

Does not handle: obfuscated injections (homoglyphs, base64), secrets without a recognisable form.
"""
import re

INJECTION_RULES = [
    ("injection:ignore-previous", r"\b(?:ignoriere|vergiss|missachte)\b[^.\n]{0,40}\b(?:anweisungen|instruktionen|regeln|vorgaben)\b"),
    ("injection:ignore-previous", r"\b(?:ignore|disregard|forget)\b[^.\n]{0,40}\b(?:instructions|prompts?|rules)\b"),
    ("injection:role-change", r"\b(?:du bist (?:jetzt|ab sofort|nun)|you are now|act as|ab jetzt bist du)\b"),
    ("injection:role-marker", r"(?im)^\s*(?:system|assistant|user)\s*:"),
    ("injection:special-token", r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|<start_of_turn>|\[INST\]"),
    ("injection:exfiltration", r"\b(?:sende|schicke|übermittle|leite|send|forward|post)\b[^.\n]{0,60}\b(?:zugangsdaten|passw(?:ö|oe)rter|credentials|passwords?|daten|data|tokens?)\b[^.\n]{0,40}(?:@|https?://|\ban\b|\bto\b)"),
]
SECRET_RULES = [
    ("secret:private-key", r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    ("secret:api-key", r"\b(?:sk|pk|rk|ghp|gho|xox[bpa]|AKIA)[-_][A-Za-z0-9_\-]{12,}|\bAKIA[0-9A-Z]{16}\b"),
    ("secret:key-value", r"(?i)\b(?:api[_-]?key|secret|token|passwor[dt]|kennwort|pwd|pass)\s*[:=]\s*['\"]?[^\s'\"]{6,}"),
]
COMPILED = [(rule, re.compile(pattern, re.IGNORECASE if rule.startswith("injection") else 0))
            for rule, pattern in INJECTION_RULES + SECRET_RULES]


def mask(text):
    """Keep the first 4 characters of a secret. Example: mask("api_key=sk-abcdef123456") -> "api_…"."""
    return text[:4] + "…" if len(text) > 4 else "…"


def scan(text):
    """All flags of a text, in rule order, each {"rule", "match"}; secret matches are masked."""
    flags, seen = [], set()
    for rule, pattern in COMPILED:
        found = pattern.search(text)
        if not found or rule in seen:
            continue
        seen.add(rule)
        matched = found.group(0).strip()
        flags.append({"rule": rule, "match": mask(matched) if rule.startswith("secret") else matched[:80]})
    return flags
