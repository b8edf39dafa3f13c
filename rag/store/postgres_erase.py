"""Forgetting in PostgreSQL: rewrite what held a deleted page, list the files to search, search the live rows.

    scrub(conn)                      # VACUUM FULL docs, pages, vocab, meta, pg_statistic; CHECKPOINT where allowed
    raw_files(conn, "rag")           -> ["/var/lib/postgresql/18/main/base/16384/16402", …]  ([] without the right)
    leftovers(conn, ["Quarkbrot"])   -> {"docs": 2}   (rows whose text holds a needle; {} after forgetting)

Measured on PostgreSQL 18 (docs/vergessen.md): after plain VACUUM the heap no longer held a deleted row's
text, but the GIN index still held its lexemes (GIN keeps an entry even when no row has it any more), and
the WAL held it too. VACUUM FULL writes every table, its
TOAST and all its indexes (GIN, HNSW) into new files and drops the old ones (docs/vergessen.md: the cost).

Does not handle: the WAL (pg_wal), WAL archives, replicas and base backups: they keep the bytes until the
admin's retention drops them (docs/vergessen.md says what to do).
"""
import os

from rag.store.postgres_setup import psycopg_module

SCRUBBED = ("docs", "pages", "vocab", "meta", "questions")  # tables with a page's text, words, path
LEFTOVER_COLUMNS = [("docs", "heading || ' ' || content || ' ' || path || ' ' || search_heading || ' ' || "
                             "search_body || ' ' || tsv::text"),
                    ("vocab", "word"), ("meta", "value"), ("pages", "path"),
                    ("questions", "question || ' ' || heading || ' ' || path")]
RELATION_FILES = """
WITH own AS (SELECT oid, reltoastrelid FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind IN ('r', 'i'))
SELECT pg_relation_filepath(x) FROM (
    SELECT oid AS x FROM own UNION SELECT reltoastrelid FROM own WHERE reltoastrelid <> 0
    UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT reltoastrelid FROM own)) r
WHERE pg_relation_filepath(x) IS NOT NULL ORDER BY 1
"""  # heap, TOAST and index files of the schema's tables, relative to data_directory


def like_escape(text):
    """A LIKE pattern part that matches `text` literally. Example: "50%_a" -> "50\\\\%\\\\_a\""""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def scrub(conn, full=True, memory="2GB"):
    """full: VACUUM FULL (new files, the old ones gone; `memory` for rebuilding the HNSW graph, else it crawls);
    else plain VACUUM (GIN keeps the lexemes). Then CHECKPOINT, so the new files are on disk when they are
    searched (needs superuser or pg_checkpoint)."""
    if full:
        conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute(f"VACUUM {'FULL ' if full else ''}{', '.join(SCRUBBED)}")
    conn.execute("RESET maintenance_work_mem")
    # the planner's statistics keep sample values of every column (pg_statistic, filled by autovacuum's ANALYZE
    # whenever it ran while the page was there): new ones without the page, then the catalog table rewritten
    conn.execute(f"ANALYZE {', '.join(SCRUBBED)}")
    try:
        conn.execute(f"VACUUM {'FULL ' if full else ''}pg_catalog.pg_statistic")
    except psycopg_module().Error:
        pass  # only a superuser may: docs/vergessen.md says what the admin does without it
    try:
        conn.execute("CHECKPOINT")
    except psycopg_module().Error:
        pass  # without the right the files reach the disk at the server's next checkpoint


def raw_files(conn, schema):
    """The readable relation files (and their 1 GB segments) of the schema's tables, TOAST and indexes."""
    try:
        base = conn.execute("SELECT current_setting('data_directory')").fetchone()[0]
    except psycopg_module().Error:
        return []  # only superusers and pg_read_all_settings see the data directory
    files = []
    for relative, in conn.execute(RELATION_FILES, (schema,)).fetchall():
        path, segment = os.path.join(base, relative), 1
        while os.access(path, os.R_OK):
            files.append(path)
            path, segment = f"{os.path.join(base, relative)}.{segment}", segment + 1
    return files


def leftovers(conn, needles):
    """{table: rows whose text holds any needle}, the live rows through SQL."""
    if not needles:
        return {}
    patterns = [f"%{like_escape(n)}%" for n in needles]
    found = {}
    for table, column in LEFTOVER_COLUMNS:
        hits = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} LIKE ANY(%s)", (patterns,)).fetchone()[0]
        if hits:
            found[table] = hits
    return found
