"""Where the index lives: the interface (base), SQLite (sqlite, sqlite_file), PostgreSQL + pgvector
(postgres, postgres_setup), the packed vectors (packed) and their exact scan (vectors). Callers
open a store here:

    index = store.open_store("knowledge.db")                 # SQLite, as in the post
    index = store.open_store("postgresql://rag@db/wiki")     # PostgreSQL + pgvector
    index.pages() -> {"mail/quota.md": "9f2c…"}

Does not handle: SQLite internals (rag/store/sqlite.py, for benchmarks and tests).
"""
import sqlite3
import sys

# the interface
from rag.store.base import ANN_MIN_CHUNKS, Chunk, Row, Store, StoreError, is_postgres  # noqa: F401
from rag.store.sqlite import SQLiteStore


def open_store(db, create=False, rebuild=False, reader=None):
    """The store behind --db: PostgreSQL for a postgresql:// DSN (rag/store/postgres.py), else the
    SQLite file.

    create: make the tables (build_index.py); rebuild: build a fresh index beside the old one, which
    `finish()` puts in its place; reader: rag/store/access.py Reader, whose hidden pages no reading
    method returns (None: everything). Raises StoreError (German, names the fix).
    """
    if is_postgres(db):
        from rag.store import postgres  # only here: SQLite users never read it
        return postgres.PostgresStore(db, create=create, rebuild=rebuild, reader=reader)
    return SQLiteStore(db, create=create, rebuild=rebuild, reader=reader)


def database_errors():
    """The exception classes a store's database can raise mid-run (psycopg's only once it is
    imported)."""
    found = [sqlite3.DatabaseError]
    if "psycopg" in sys.modules:
        found.append(sys.modules["psycopg"].Error)
    return tuple(found)


def describe_error(db, exc):
    """One German line for a database error in the middle of a run.

    Example: sqlite3.DatabaseError -> "… --rebuild".
    """
    if is_postgres(db):
        from rag.store import postgres_setup
        return postgres_setup.describe(db, exc)
    return f"Index-Datenbank {db} defekt ({exc}) – neu bauen mit: python3 build_index.py --rebuild"
