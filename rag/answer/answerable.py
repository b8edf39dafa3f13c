"""Do the sources answer the question? One token from the answer model, and how sure it was.

    p_yes("http://127.0.0.1:8080", prefix)   # prefix: system message, sources, "Frage: …"
    -> 0.97   (the model's probability of "ja" against "nein", read from the first token's logprobs)

The same model that answers is asked "Beantworten die Quellen diese Frage ausdrücklich?" over the
same context, right before the answer. The check and the answer share everything up to the
question, so llama-server keeps that prefix in its KV cache (cache_prompt): the check costs the
few tokens of CHECK and one generated token, and the answer starts from the cached prefix.
A question is refused when p_yes < the threshold measured for the answer model (`evaluate.py
--answerable --tune`; rag/tuned.py ANSWER_MODELS says on which sets, with which figures). The
request goes through the one client of the answer server (rag/models/llm.py send: timeouts, key,
error lines).

Does not handle: servers without logprobs (vLLM and Ollama may lack top_logprobs: then None and
only the relevance floor decides), base models without a chat template (same).
"""
import json
import math
import time
from pathlib import Path

from rag import config
from rag import tuned
from rag.answer import prompt as answer
from rag.models import http, llm

CHECK = "Beantworten die Quellen diese Frage ausdrücklich? Antworte nur mit ja oder nein."
TOP = 10  # alternatives of the first token looked at
# first-token spellings, folded (" Ja" -> "ja", "Ne"+"in" -> "ne")
YES, NO = ("ja", "yes"), ("nein", "ne", "no")
SHIPPED = {model: {**number.value, "command": number.command, "set": number.sets,
                    "measured_at": number.commit, "figures": number.figures}
           for model, number in tuned.ANSWER_MODELS.items()}  # per answer model (rag/tuned.toml)
# new measurements of `evaluate.py --answerable --tune --store`, in the cache dir (rag/config.py
# cache_dir) or a path given; the set, the command and the numbers stand next to the threshold
STORED = "answerable.json"
# no measured value for this model: no check (it would cost a prompt pass for nothing)
DEFAULT_THRESHOLD = None


def check_messages(prefix):
    """The chat messages of the check: the answer's prefix plus CHECK.

    Example: prefix SYSTEM + "\\n\\nQuellen … Frage: x"
             -> [system, user "Quellen … Frage: x\\nBeantworten …"]
    """
    return answer.split_chat(check_text(prefix), answer.SYSTEM)


def check_text(prefix):
    """The check's prompt as one text (what the audit log and --show-prompt show of it)."""
    return prefix + "\n" + CHECK


def share_yes(top_logprobs):
    """P(yes) / (P(yes) + P(no)) over the first token's alternatives; None if neither is among them.

    Example: [{"token": "Ja", "logprob": -0.05}, {"token": "Ne", "logprob": -5.1}] -> 0.994
    """
    yes = no = 0.0
    for alt in top_logprobs:
        token = alt.get("token", "").strip().lower()
        if token in YES:
            yes += math.exp(alt["logprob"])
        elif token in NO:
            no += math.exp(alt["logprob"])
    return yes / (yes + no) if yes + no > 0 else None


def p_yes(url, prefix, api_key=None, model_name=None, seed=0, read=None):
    """The model's share of "ja" for the check over `prefix`, or None when the server gives no
    logprobs. `read` (a list): gets {"call": "check", "prompt_n": …} (rag/models/llm.py
    read_entry), what the check read."""
    body = {"messages": check_messages(prefix), "max_tokens": 1, "temperature": 0.0, "seed": seed,
            "logprobs": True, "top_logprobs": TOP, "cache_prompt": True, "stream": False}
    if model_name:
        body["model"] = model_name
    timeout = http.read_timeout(llm.READ_TIMEOUT, check_text(prefix), 1)
    response = llm.send("POST", url, "/v1/chat/completions", timeout, api_key, json=body)
    if response.status_code != 200:
        raise llm.http_error(response, " bei der Prüfung")
    try:
        reply = response.json()
    except ValueError:
        reply = None
    if read is not None:
        read.append(llm.read_entry("check", reply if isinstance(reply, dict) else None))
    try:
        content = reply["choices"][0]["logprobs"]["content"]
        return share_yes(content[0]["top_logprobs"]) if content else None
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def refuses(prefix, settings, result, limit, read, started):
    """The core's check before a fact answer (rag/core.py stream): do the sources answer the
    question? Fills result.answerable {"p_yes", "threshold", "refused"} and the check's time;
    True (and the refusal as the answer) when the model's P(ja) is below `limit`."""
    p = p_yes(settings.server, prefix, settings.api_key, settings.llm_model_name, read=read)
    result.timings["check_s"] = round(time.monotonic() - started, 3)
    no = p is not None and limit is not None and p < limit
    result.answerable = {"p_yes": None if p is None else round(p, 4), "threshold": limit,
                         "refused": no}
    if no:
        (result.text,
         result.timings["read_before_first_token"]) = answer.NO_INFO, llm.total_read(read)
    return no


def stored_path(path=None):
    """Where new measurements go: `path`, else STORED in the cache dir (never into the package).

    Example: stored_path() -> ~/.cache/rag-ohne-magie/answerable.json (RAG_CACHE moves it)
    """
    return Path(path) if path else config.cache_dir() / STORED


def read_table(path):
    """Example: read_table(a missing file) -> {}"""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def measured(path=None):
    """{answer model name: {"threshold", "set", "command", …}}: the stored measurements
    (stored_path) first, then the shipped ones (SHIPPED, rag/tuned.py) for the models they do not
    name ({} if there is none)."""
    return {**SHIPPED, **read_table(stored_path(path))}


def threshold(model, path=None):
    """The refusal threshold measured for an answer model (its file or server name), else
    DEFAULT_THRESHOLD."""
    return measured(path).get(model or "", {}).get("threshold", DEFAULT_THRESHOLD)


def section_threshold(model, path=None):
    """The threshold of the how-to check over one section (rag/answer/judge.py), measured per answer
    model by `evaluate.py --judge --tune`; without one the check over the sources (threshold())
    decides as before."""
    return measured(path).get(model or "", {}).get("section_threshold")


def section_sure(model, path=None):
    """The P(ja) below which a section the check accepted is printed with a doubt ("knapp",
    rag/check/why.py), measured per answer model (rag/tuned.toml); None: no doubt is shown."""
    return measured(path).get(model or "", {}).get("section_sure")


def store(model, entry, path=None):
    """Write the measured entry of one answer model into stored_path(path) (its other models stay);
    the path.

    Example: store("qwen2.5-1.5b", {"threshold": 0.3}) -> ~/.cache/rag-ohne-magie/answerable.json
    """
    target = stored_path(path)
    table = read_table(target)
    table[model] = entry
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(table, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                      encoding="utf-8")
    return target
