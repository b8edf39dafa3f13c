"""--watch: index the wiki, then look at it every few seconds and index again when a page changed.

    watch(args, build)   # prints, after each change: "geändert: mail/quota.md · 3 Chunks neu ·
    0.8 s"

Each cycle is an ordinary incremental run of `build` (one transaction per page, the writer lock
only while it runs), so Ctrl-C or kill -9 at any point loses nothing that was stored. With
--embed-via spawn one embedding server serves the whole watch, not one per change.

Does not handle: file system events (inotify); a change is seen at the next poll, by mtime, size and
inode.
"""
import os
import sys
import time
from pathlib import Path

from rag.ingest import embed_chunks
from rag.ingest.pages import find_pages
from rag.models.server_process import ServerProcess

# --watch: seconds between two looks at the wiki (a change is stored ≤ this + embedding later)
WATCH_INTERVAL = 2.0


def snapshot(wiki):
    """{path: (mtime_ns, size, inode)} of every page and .access file:
    what a poll compares. Example: {"a.md": (1733…, 120, 4711)}"""
    found = {}
    for rel in find_pages(wiki):
        try:
            st = os.stat(wiki / rel)
        except OSError:
            continue
        found[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
    # rule files (access_rules.py)
    for folder in {parent for rel in list(found) for parent in Path(rel).parents}:
        rule = wiki / folder / ".access"
        if rule.is_file():
            st = rule.stat()
            found[str(folder / ".access")] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def describe_run(run):
    """One line per page a watch cycle changed. Example: geändert:
    mail/quota.md · 3 Chunks neu · 0.8 s"""
    lines = [f"{'geändert' if path in run['known'] else 'neu'}: {path} · {embedded} "
             f"Chunk{'' if embedded == 1 else 's'} neu · {seconds:.1f} s"
             for path, embedded, seconds in run["written"]]
    return lines + [f"entfernt: {path} · {run['seconds']:.1f} s" for path in run["gone"]]


def start_server(args):
    """--embed-via spawn: one embedding server for the whole watch (args.spawned, which embed_all
    then uses)."""
    args.spawned = ServerProcess.for_indexing(args.model, embed_chunks.server_bin(args),
                                              ["x" * 4 * args.max_chars], threads=args.threads)
    try:
        args.spawned.start()
    except RuntimeError as exc:
        raise SystemExit(f"Fehler: {exc} – oder --embed-via binary verwenden")


def watch(args, build):
    """build(args), then poll args.wiki every args.interval seconds and build(args) again when a
    page changed.

    build returns a run's result (written, gone, known, seconds; see build_index.py) and raises
    SystemExit on failure: said once, tried again at the next poll.
    """
    wiki = Path(args.wiki)
    if args.via == "spawn":
        start_server(args)
    try:
        seen, failed = snapshot(wiki), None
        build(args)
        print(f"Beobachte {wiki} alle {args.interval:g} s – Strg-C beendet.", flush=True)
        args.watching = True
        while True:
            time.sleep(args.interval)
            now = snapshot(wiki)
            if now == seen:
                continue
            try:
                lines = describe_run(build(args))
                seen, failed = now, None
            # e.g. the embedder failed: say it once, try again at the next poll
            except SystemExit as exc:
                if str(exc.code) != failed:
                    print(exc.code, file=sys.stderr, flush=True)
                failed = str(exc.code)
                continue
            for line in lines:
                print(line, flush=True)
    finally:
        if getattr(args, "spawned", None):
            args.spawned.stop()
