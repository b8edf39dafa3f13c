"""The store interface (rag/store/base.py): both stores have every method of the Protocol, with the same
parameter names, and the folder list comes from the store (SQLite here; PostgreSQL in test_postgres.py).

Does not handle: a running PostgreSQL server (the class is inspected, not opened).
"""
import inspect

import pytest

from conftest import run_script
from test_layers import GRAPH
from rag import core
from rag import store
from rag.doors import common
from rag.store import base
from rag.store import postgres
from rag.store import sqlite

METHODS = sorted(name for name, member in vars(base.Store).items() if inspect.isfunction(member)
                 and not name.startswith("_"))


def test_the_protocol_names_what_the_indexer_and_the_core_call():
    assert {"pages", "write_page", "delete_page", "lexical", "vector_scan", "meta", "folders", "close"} <= set(METHODS)


@pytest.mark.parametrize("cls", [sqlite.SQLiteStore, postgres.PostgresStore])
def test_both_stores_implement_every_method_with_the_same_parameter_names(cls):
    for name in METHODS:
        assert inspect.isfunction(getattr(cls, name, None)), f"{cls.__name__}.{name} fehlt"
        wanted = list(inspect.signature(getattr(base.Store, name)).parameters)
        assert list(inspect.signature(getattr(cls, name)).parameters) == wanted, f"{cls.__name__}.{name}"
    assert cls.kind in ("sqlite", "postgres")


def test_sqlite_and_postgres_do_not_import_each_other():
    assert "rag.store.postgres" not in GRAPH["rag.store.sqlite"]
    assert "rag.store.sqlite" not in GRAPH["rag.store.postgres"]


def test_folders_come_from_the_store(small_wiki, fake_embedding, tmp_path):
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    index = store.open_store(fake_embedding["RAG_DB"])
    try:
        assert index.folders() == ["mail/", "netzwerk/"]  # drucker.md lies at the top
    finally:
        index.close()
    assert common.folders(core.Settings(db=fake_embedding["RAG_DB"])) == ["mail/", "netzwerk/"]
    assert common.folders(core.Settings(db=str(tmp_path / "fehlt.db"))) == []  # no index: no folders


def test_open_store_picks_the_store_by_the_address():
    assert store.is_postgres("postgresql://rag@db/wiki") and store.is_postgres("postgres://rag@db/wiki")
    assert not store.is_postgres("knowledge.db")
    with pytest.raises(store.StoreError, match="zuerst bauen mit: python3 build_index.py"):
        store.open_store("/nirgends/knowledge.db")
