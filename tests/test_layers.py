"""The rooms of rag/ and their order, as a contract: every import inside rag/ points to the same room or a
lower one, and no module imports itself back through others (no cycles).

    LAYERS: a room may import rooms listed before it, never after it.

Read with `ast`, so lazy imports inside functions count too. Does not handle: `importlib` by name.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAG = ROOT / "rag"

LAYERS = [  # lowest first; a module imports only from its own room or the rooms above it in this list
    "config",   # paths, URLs, environment variables
    "tuned",    # every number that tunes the search and the answer, with where it comes from
    "text",     # German folding, the sentence splitter, instruction and credential flags
    "privacy",  # personal data: check digits, names, addresses, masking
    "store",    # SQLite and PostgreSQL behind one interface, the packed vectors
    "models",   # HTTP client, embeddings, the answer server, starting llama.cpp
    "audit",    # the audit log (one JSON line per answer) and the votes on answers
    "ingest",   # files to pages to chunks, the formats, the indexing run
    "search",   # ranking, expansion, follow-ups
    "answer",   # before the model: context, the chooser, prompt, answerability, the guard
    "check",    # after the model: citations, support, facts, echo, see-also, the guard's answer
    "records",  # what a door hands the core (Settings) and gets back (Events, the Answer)
    "core",     # the question pipeline
    "report",   # the report for the wiki's authors: gaps, down-voted answers, sections hard to find
    "doors",    # terminal, flags, web page, OpenAI API, MCP
]


def module_name(path):
    """rag/store/sqlite.py -> "rag.store.sqlite"; rag/store/__init__.py -> "rag.store"."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(name):
    """"rag.store.sqlite" -> "store"; "rag.core" -> "core"; "rag" -> None."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def imports(path):
    """The rag modules a file imports: `from rag.text import german` -> {"rag.text.german"}."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("rag"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("rag"):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return found


MODULES = {module_name(p): p for p in RAG.rglob("*.py")}
GRAPH = {name: imports(path) for name, path in MODULES.items()}


def test_every_room_is_in_the_contract():
    rooms = {room(name) for name in MODULES} - {None}
    assert rooms <= set(LAYERS), f"rooms not in LAYERS: {sorted(rooms - set(LAYERS))}"


def test_imports_point_down():
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        if room(name) is None:
            continue
        for target in sorted(targets):
            if room(target) is None:
                wrong.append(f"{name} -> {target} (rag/__init__ is the map and imports nothing)")
            elif LAYERS.index(room(target)) > LAYERS.index(room(name)):
                wrong.append(f"{name} ({room(name)}) -> {target} ({room(target)})")
    assert wrong == []


def test_no_import_cycles():
    cycles = []
    state = {}

    def visit(name, path):
        state[name] = "open"
        for target in sorted(GRAPH.get(name, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_map_names_every_room():
    text = (RAG / "__init__.py").read_text(encoding="utf-8")
    assert [r for r in LAYERS if f"{r}" not in text] == []


def test_scripts_bench_and_eval_import_rag_never_a_script():
    scripts = {"build_index", "ask_rag", "evaluate"}
    wrong = []
    for folder in ("bench", "eval", "tests", "scripts", "rag"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                wrong += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in scripts]
    assert wrong == []


MAX_MODULE_LINES = 400  # issue 28: a module a reader can hold in mind
MAX_FUNCTION_LINES = 60


def code_files():
    """Every Python file outside tests/: rag/, the scripts, bench/, eval/, scripts/."""
    return sorted(p for p in ROOT.rglob("*.py")
                  if not {"tests", ".git"} & set(p.relative_to(ROOT).parts) and "site-packages" not in p.parts)


def test_no_module_over_400_lines_and_no_function_over_60():
    too_long = []
    for path in code_files():
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT)
        if source.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{name}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert too_long == []


MAX_LINE = 100  # characters a reader reads without scrolling (DEVELOPERS.md)
MAX_LONG_SHARE = 0.01  # issue 43: at most 1 % of the lines in rag/ longer than MAX_LINE


def long_lines(paths, root=ROOT):
    """[(path, line number, length)] of the lines over MAX_LINE characters (not bytes: an umlaut
    is one)."""
    found = []
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if len(line) > MAX_LINE:
                found.append((path.relative_to(root), n, len(line)))
    return found


def test_long_lines_count_characters_not_bytes(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("ä" * MAX_LINE + "\n" + "x" * (MAX_LINE + 1) + "\n", encoding="utf-8")
    assert [n for _, n, _ in long_lines([sample], root=tmp_path)] == [2]


def test_at_most_one_percent_of_the_lines_in_rag_are_long():
    paths = sorted(RAG.rglob("*.py"))
    total = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)
    found = long_lines(paths)
    shown = "\n".join(f"{p}:{n} ({length})" for p, n, length in found[:20])
    assert len(found) <= MAX_LONG_SHARE * total, f"{len(found)} of {total} lines:\n{shown}"
