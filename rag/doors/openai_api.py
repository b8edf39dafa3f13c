"""The wiki as an OpenAI-compatible "model": the core's events as chat completions.

    POST /v1/chat/completions
         {"model": "wiki", "messages": [{"role": "user", "content": "Wie …?"}]}
    -> {"object": "chat.completion", "choices": [{"message": {"role": "assistant", "content":
        "Mit cyradm … [1].\n\nQuellen:\n- [1] mail/… › Mailbox anlegen (zitiert)\n…"}}],
        "rag": {…}}

The last user message is the question; the messages before it go to the core as the history (with
--rewrite a follow-up is rewritten into a standalone question first, and the answer begins with
"→ Gesucht: …").
The answer ends with the sources as footnotes (and the citation check, the evidence and the fact
check, as the terminal shows them); `rag` holds the same result as `ask_rag.py --json` plus the
checks (rag/doors/common.py). Streaming (`"stream": true`) sends `chat.completion.chunk` events: the
role, one per answer piece, the footnotes, then a last chunk with finish_reason "stop" and `rag`,
then `data: [DONE]`.

GET /v1/models lists "wiki" and "wiki/FOLDER" for each top-level folder: choosing "wiki/mail"
searches only below mail/ (as --under mail/); a request field "under" does the same.

Does not handle: tools/function calls, n > 1, logprobs, images; temperature and max_tokens of the
request are ignored (the door's own settings answer).
"""
import time
import uuid

from rag.check import citations
from rag.check import factcheck
from rag.check import guard
from rag.check import see_also
from rag.check import support
from rag.search import expand

MODEL = "wiki"  # the model id; "wiki/mail" = only pages below mail/
CREATED = 0  # /v1/models "created": the wiki has no release date


def text_of(content):
    """A message's text: a string, or OpenAI's list of parts.
    Example: [{"type": "text", "text": "Hi"}] -> "Hi" """
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict)
                         and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def turns(messages):
    """The user and assistant messages of a list as {"role", "content": text}; anything else is
    dropped (the API's messages, the page's history).
    Example: [system "S", user "A", 3] -> [{"role": "user", "content": "A"}]"""
    if not isinstance(messages, list):
        return []
    return [{"role": m.get("role"), "content": text_of(m.get("content"))} for m in messages
            if isinstance(m, dict) and m.get("role") in ("user", "assistant")]


def question_and_history(messages):
    """(question, history): the last user message, and the user/assistant messages before it.

    Example: [system, user "A", assistant "B", user "C"]
             -> ("C", [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"}])
    """
    turns_ = turns(messages)
    last = max((i for i, m in enumerate(turns_) if m["role"] == "user"), default=None)
    if last is None:
        return "", []
    return turns_[last]["content"], turns_[:last]


def folder_of(model):
    """Example: folder_of("wiki/mail") -> "mail/"; folder_of("wiki") -> None;
    folder_of("gpt-4o") -> None"""
    prefix = MODEL + "/"
    return (model[len(prefix):].strip("/") + "/"
            if isinstance(model, str) and model.startswith(prefix) else None)


def models(folders):
    """The /v1/models list: "wiki", then "wiki/FOLDER" per top-level folder ("mail/"
    -> "wiki/mail")."""
    ids = [MODEL] + [f"{MODEL}/{f.rstrip('/')}" for f in folders]
    return {"object": "list",
            "data": [{"id": i, "object": "model", "created": CREATED, "owned_by": "rag-ohne-magie"}
                                       for i in ids]}


def footnotes(result):
    """The sources (and checks) as text after the answer, from the door's result JSON
    (rag/doors/common.py).

    Example: sources [mail/a.md › A], citations valid [1]
             -> "\n\nQuellen:\n- [1] mail/a.md › A (zitiert)\nZitate: [1] gültig"
    With runners-up (rag/check/see_also.py) the line "Siehe auch: [2] …" (after the refusal
    "Vielleicht hilft: …") comes first, as in the terminal; before it, why the answer is what it
    is (rag/check/why.py).
    """
    why = f"\n({result['why']})" if result.get("why") else ""  # as the terminal shows it
    if not result["sources"]:
        return why
    # the core's answer is the refusal (records.Answer.refused, --json's "no_info"): as in the
    # terminal, no citation, evidence or fact lines then, only the candidates and the guard's
    refused = bool(result.get("no_info"))
    cited = set() if refused else set((result.get("citations") or {}).get("valid") or [])
    others = see_also.line(result.get("see_also"), refused)
    lines = [why, ""] + ([others, ""] if others else []) + ["Quellen:"]
    for n, s in enumerate(result["sources"], start=1):
        where = f"{s['path']} › {s['heading']}" if s.get("heading") else s["path"]
        lines.append(f"- [{n}] {where}" + (" (zitiert)" if n in cited else ""))
    if not refused:
        lines += checks_lines(result)
    guarded = guard.describe(result.get("guard"))  # "" when the guard found nothing
    if guarded:
        lines.append(guarded)
    return "\n".join(lines)


def checks_lines(result):
    """The citation, evidence and fact lines of an answer that is not the refusal, as the terminal
    shows them. Example: citations valid [1] -> ["Zitate: [1] gültig"]"""
    lines = []
    if result.get("citations") is not None:
        lines.append("Zitate: " + citations.describe_citations(result["citations"]))
    if result.get("evidence") is not None and result.get("support") is not None:
        lines += support.describe({"evidence": result["evidence"], "statements": result["support"]})
    if result.get("unsupported"):
        lines.append(factcheck.describe(result["unsupported"]))
    return lines


def searched_line(searched):
    """The rewritten follow-up before the answer.
    Example: {"rewritten": True, "question": "Wie …?"} -> "→ Gesucht: Wie …?\n\n" """
    if not searched or not (searched.get("rewritten") or searched.get("previous")):
        return ""
    line = expand.searched_line(searched["question"], searched.get("rewritten"),
                                searched.get("previous"))
    return f"→ Gesucht: {line}\n\n"


def new_id():
    return "chatcmpl-rag-" + uuid.uuid4().hex[:16]


def completion(result, model, completion_id=None):
    """The whole answer (stream false): one chat.completion with the footnotes and `rag`."""
    content = searched_line(result.get("searched")) + (result["answer"] or "") + footnotes(result)
    return {"id": completion_id or new_id(), "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}], "rag": result}


def chunk(completion_id, model, delta=None, finish=None, result=None):
    """One streamed chunk.
    Example: chunk("id", "wiki", {"content": "Mit"}) -> {"object": "chat.completion.chunk", …}"""
    data = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if result is not None:
        data["rag"] = result
    return data


def error(message, kind="invalid_request_error"):
    """OpenAI's error body.
    Example: error("keine Frage") -> {"error": {"message": "keine Frage", "type": …}}"""
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}
