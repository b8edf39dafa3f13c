"""Steps 3 and 4 together: embed the chunks that are new, store each page in one transaction.

    index = open_index(args)                    # the store behind --db, checked against the model
    embed_and_store(index, [Page("a.md", "5e1f…", [("A", "Text")], ["c0ff…"])], args, stats)
    -> [("a.md", 1, 0.4)]                       # (path, chunks embedded for it, seconds)

Incremental: a chunk whose text (heading path + content) is already in the index reuses its
vector, so a renamed page needs no new embeddings. A page's old chunks are replaced only after all
of its new vectors exist, in one transaction, so a crash leaves every page entirely old or entirely
new; the next run finishes the job. The search text (rag/text/german.py) is derived here, once.

Does not handle: two writers at once (the second waits for the first, rag/store/), mixing models
(a different model or pooling stops the run and names --rebuild).
"""
import collections
import json
import os
import time
from pathlib import Path

from rag import store
from rag.ingest import access_rules, embed_chunks
from rag.ingest.chunking import embedded_text
from rag.ingest.pages import warn
from rag.models import embed_binary
from rag.models.embedding import EmbeddingError, model_mismatch
from rag.store import access
from rag.text import german
from rag.text import safety


def check_setup(args):
    """Wiki, pages, embedder and model must be there before anything is opened (one German line
    each).

    Sets args.via (the transport, rag/ingest/embed_chunks.py) and args.identity (the model as the
    index names it).
    """
    wiki = Path(args.wiki)
    if not wiki.is_dir():
        raise SystemExit(f"Fehler: Wiki-Ordner {wiki} nicht gefunden – Pfad mit --wiki oder "
                         "RAG_WIKI angeben.")
    args.via = embed_chunks.transport(args)
    if args.via == "server" and not args.embed_url:
        raise SystemExit("Fehler: --embed-via server braucht die URL des Embedding-Servers – "
                         "--embed-url / RAG_EMBED_URL angeben, z. B. http://127.0.0.1:8080")
    if args.via != "server" and not os.path.isfile(args.model):
        raise SystemExit(f"Fehler: Embedding-Modell {args.model} nicht gefunden – einrichten "
                         f"mit: python3 scripts/setup_llama.py (oder --model / RAG_EMBED_MODEL)")
    if args.via == "spawn" and not os.path.isfile(embed_chunks.server_bin(args)):
        raise SystemExit("Fehler: llama-server nicht neben llama-embedding gefunden "
                         f"({embed_chunks.server_bin(args)}) – einrichten mit: python3 "
                         "scripts/setup_llama.py oder --embed-via binary verwenden")
    try:
        args.identity = embed_chunks.model_identity(args)
    except EmbeddingError as exc:
        raise SystemExit(f"Fehler: {exc}")
    return wiki


def check_model(meta, args):
    """Refuse to mix models: names must match, and sizes where both are known
    (rag/models/embedding.py)."""
    mismatch = model_mismatch(meta, *args.identity)
    if mismatch:
        raise SystemExit(f"Fehler: {args.db} wurde mit Modell {mismatch[0]} (Dimension "
                         f"{meta.get('dim')}) gebaut, jetzt ist {mismatch[1]} eingestellt – neu "
                         f"bauen mit: python3 build_index.py --rebuild")
    if args.via != "server" and meta.get("pooling") and meta["pooling"] != embed_binary.POOLING:
        raise SystemExit(f"Fehler: {args.db} wurde mit Pooling {meta['pooling']} gebaut, jetzt "
                         f"{embed_binary.POOLING} – neu bauen mit: python3 build_index.py "
                         "--rebuild")


def open_index(args):
    """The store behind --db, checked against the model (SQLite file or PostgreSQL, rag/store/)."""
    try:
        index = store.open_store(args.db, create=True, rebuild=args.rebuild)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    if not args.rebuild:
        check_model(index.meta(), args)
    if not index.has_lexical():
        warn("dieses Python-SQLite hat kein FTS5 – nur Vektorsuche (--mode vector) möglich; "
             "ein Python mit FTS5-fähigem SQLite verwenden")
    return index


def remember_model(index, args, dim):
    """On the first vector of a new index: model, dimension and prefixes go into meta; later vectors
    must match."""
    meta = index.meta()
    if not meta.get("dim"):
        name, size = args.identity
        query_prefix, passage_prefix = embed_binary.prefixes_for(name)
        index.write_meta(embed_model=name, embed_model_size=size, dim=dim,
                         query_prefix=query_prefix, passage_prefix=passage_prefix,
                         **({} if args.via == "server" else {"pooling": embed_binary.POOLING}))
    elif str(dim) != meta["dim"]:
        raise SystemExit(f"Fehler: {args.identity[0]} liefert Dimension {dim}, {args.db} wurde mit "
                         f"{meta.get('embed_model')} in Dimension {meta['dim']} gebaut – neu "
                         f"bauen mit: python3 build_index.py --rebuild")


def embed_and_store(index, todo, args, stats):
    """Embed the chunk texts that have no vector in the index yet (vectors are reused by text hash,
    across pages), and write each page, in path order, as soon as all its vectors exist, one
    transaction each. Returns [(path, chunks embedded for it, seconds since the start)]."""
    needed = {}  # text hash -> embedded text
    for page in todo:
        for (heading, content), key in zip(page.chunks, page.keys):
            needed.setdefault(key, embedded_text(heading, content))
    vectors = index.reusable(needed)
    missing = [h for h in needed if h not in vectors]
    stats["reused"] = sum(len(page.keys) for page in todo) - len(missing)
    _, passage_prefix = embed_binary.prefixes_for(args.identity[0])  # e5: "passage: "
    # an index keeps the prefix it was built with
    passage_prefix = index.meta().get("passage_prefix", passage_prefix)
    pending, written, fresh, started = collections.deque(todo), [], set(missing), time.monotonic()
    progress = embed_chunks.Progress(len(todo), not args.quiet)

    def flush_ready():
        while pending and all(k in vectors for k in pending[0].keys):
            page = pending.popleft()
            chunks = [store.Chunk(h, c, vectors[k], k, safety.scan(c), None)
                      for (h, c), k in zip(page.chunks, page.keys)]
            # first: a crash before the page leaves a rerun to write it
            remember_words(index, {page.path: page.words})
            asked = by_heading(index.questions(page.path))  # of changed sections: dropped in step 5
            chunks = with_search_text(chunks, index.vocab(), page.words, asked)
            index.write_page(page.path, page.hash, chunks)
            written.append((page.path, sum(k in fresh for k in page.keys),
                            time.monotonic() - started))

    try:
        flush_ready()  # pages whose chunks are all reused
        for start, batch in embed_chunks.embed_all([passage_prefix + needed[h] for h in missing],
                                                   args):
            remember_model(index, args, len(batch[0]))
            vectors.update(zip(missing[start:start + len(batch)], batch))
            stats["embedded"] += len(batch)
            flush_ready()
            progress.show(len(written), stats["embedded"], len(missing))
    except EmbeddingError as exc:
        progress.done()
        raise SystemExit(f"Fehler: {exc} ({len(written)} Seiten dieses Laufs gespeichert; erneut "
                         "starten setzt fort)")
    progress.done()
    return written


def with_search_text(chunks, vocab, words="", asked=None):
    """The chunks with their search text (search_text); asked: {heading: [question, …]}."""
    asked = asked or {}
    return [c._replace(search=search_text(c.heading, c.content, vocab, words,
                                          asked.get(c.heading, ()))) for c in chunks]


def search_text(heading, content, vocab, words="", asked=()):
    """One chunk's folded search text (heading, body) from rag/text/german.py, composed only here:
    `words` (the page's front matter title and tags, rag/ingest/chunking.py page_words) count as
    heading words, `asked` (its section's questions, rag/ingest/questions.py) as body words.

    Example: ("Quota", "Die Quota ist 2 GB.", vocab, "", ["Postfach voll?"])
             -> ("quota", "die quota … postfach voll")
    """
    heading, body = search_parts(heading, content, words, asked)
    return german.index_text(heading, vocab), german.index_text(body, vocab)


def search_parts(heading, content, words="", asked=()):
    """The two texts search_text folds.

    Example: ("Quota", "2 GB.", "Mail", ["Voll?"]) -> ("Quota\nMail", "2 GB.\nVoll?")
    """
    return (f"{heading}\n{words}" if words else heading), "\n".join([content, *asked])


def by_heading(rows):
    """{heading: [question, …]} of one page's questions [(path, heading, section_hash, question)].

    Example: [("a.md", "A", "9f…", "Wie …?"), ("a.md", "A", "9f…", "Was …?")]
             -> {"A": ["Wie …?", "Was …?"]}
    """
    found = {}
    for _, heading, _, question in rows:
        found.setdefault(heading, []).append(question)
    return found


def remember_words(index, words):
    """Keep each page's search words in meta "page_words" ({path: words}, only pages that have
    some), so refresh_search rewrites them too. Example: {"a.md": "Adapter"} adds a.md;
    {"a.md": ""} removes it."""
    known = json.loads(index.meta().get("page_words") or "{}")
    new = {**known, **{path: w for path, w in words.items() if w}}
    new = {path: w for path, w in new.items() if words.get(path, w)}
    if new != known:
        index.write_meta(page_words=json.dumps(new, ensure_ascii=False, sort_keys=True))


def forget_gone(index, known, present):
    """Delete the pages of the index that are no longer pages of the wiki; returns their paths,
    sorted.

    Called after the adds, so a moved page could reuse its vectors. Example: known {"a.md", "b.md"},
    present {"a.md"} -> ["b.md"]
    """
    gone = sorted(set(known) - present)
    for rel in gone:
        index.delete_page(rel)
    remember_words(index, dict.fromkeys(gone, ""))
    return gone


def sync_access(index, wiki, rels, known_groups=None):
    """Write the rules of the wiki's pages (rag/ingest/access_rules.py) where they differ from the
    index's, before any page is written (a new page is never open for a moment); returns the paths
    changed."""
    try:
        rules = access_rules.read_rules(wiki, rels, known_groups)
    except access_rules.RuleError as exc:
        raise SystemExit(f"Fehler: {exc}")
    changes = access.changed(index.access(), rules)
    if changes:
        index.write_access(changes)
    return sorted(changes)


def refresh_search(index):
    """Relearn the compound vocabulary from the indexed text of the open pages (a word of a page
    with a rule never shows in another reader's compound splits); where it changed, rewrite the
    search text of the chunks that hold a word it splits differently now (all of them when
    rag/text/german.py changed). Returns how many chunks were rewritten.

    Example: a page with "Frist" forgotten, another chunk says "Kündigungsfrist"
             -> only that chunk (1)
    """
    meta = index.meta()
    if meta.get("vocab_dirty") != "1" and meta.get("search_version") == german.SEARCH_VERSION:
        return 0
    rows, restricted, old = index.texts(), index.restricted_ids(), index.vocab()
    vocab = german.learn_vocabulary(h + "\n" + c for i, h, c in rows if i not in restricted)
    if vocab == old and meta.get("search_version") == german.SEARCH_VERSION:
        index.write_meta(vocab_dirty=0)
        return 0
    words = json.loads(meta.get("page_words") or "{}")  # front matter title and tags (search_text)
    asked = {}  # (path, heading) -> the section's questions (rag/ingest/questions.py)
    for path, heading, _, question in index.questions():
        asked.setdefault((path, heading), []).append(question)
    ids = [i for i, _, _ in rows] if words or asked else []
    paths = {i: row.path for n in range(0, len(ids), 10000)
             for i, row in index.sources(ids[n:n + 10000]).items()}
    rows = [(i, *search_parts(h, c, words.get(paths.get(i), ""), asked.get((paths.get(i), h), ())))
            for i, h, c in rows]
    # stored text = index_text(…, old): keep what stays
    if meta.get("search_version") == german.SEARCH_VERSION:
        folded = [{w for _, w in german.index_words(h + "\n" + c)} for _, h, c in rows]
        changed = german.changed_words(set().union(*folded), old, vocab)
        rows = [row for row, seen in zip(rows, folded) if not seen.isdisjoint(changed)]
    index.replace_search(vocab, [(i, german.index_text(h, vocab), german.index_text(c, vocab))
                                 for i, h, c in rows],
                         vocab_dirty=0, search_version=german.SEARCH_VERSION)
    return len(rows)
