"""The WAL's checkpoints, out of the requests' way: `manage.py runjobs` copies what the web
processes wrote into the database file, so that their commits never do.

SQLite checkpoints a WAL database from the commit that makes the WAL pass
`wal_autocheckpoint` pages (1,000 by default): that commit then copies the pages into the
database file and waits for the disk twice (fdatasync), while its process (a gevent
worker serving other requests too) waits with it. The service's connections take SQLite's
automatic checkpoint only past `BACKSTOP_PAGES` (core/sqlite/base.py), and this embedded
worker (settings.EMBEDDED_WORKERS) runs a PASSIVE checkpoint every `INTERVAL_SECONDS` on a
connection of its own: it never blocks a writer or a reader, and costs a read of shared
memory when nothing was written since the last.

Under load readers keep the WAL in use, so the next writer seldom starts it over from its
first frame, and it grows: once it is `RESTART_FRAMES` long the worker also runs a RESTART
checkpoint, which holds off the writers (they wait for the lock as usual) for at most
`RESTART_WAIT_MS` while the readers of the WAL finish. A web process alone (no `runjobs`)
still checkpoints, at the backstop.
"""

import logging
import threading

from django import db

logger = logging.getLogger("service.jobs")

INTERVAL_SECONDS = 0.1
#: Past this many frames in the WAL, a RESTART checkpoint too (above).
RESTART_FRAMES = 2_000
RESTART_WAIT_MS = 20
#: The automatic checkpoint of every connection of the service (`wal_autocheckpoint`):
#: about 40 MB of WAL, reached only when no `runjobs` checkpoints (or it falls behind).
BACKSTOP_PAGES = 10_000


def embedded_worker(stop: threading.Event):
    """`manage.py runjobs`' embedded worker: the checkpointing thread on a SQLite database
    (nothing to run on PostgreSQL). Returns the function that waits for it."""
    if db.connections["default"].vendor != "sqlite" or db.connections["default"].is_in_memory_db():
        return None
    thread = threading.Thread(target=run, args=(stop,), name="sqlite-checkpoints")
    thread.start()
    return thread.join


def run(stop: threading.Event) -> None:
    try:
        while not stop.wait(INTERVAL_SECONDS):
            _checkpoint_or_warn()
    finally:
        db.connections.close_all()


def _checkpoint_or_warn() -> None:
    try:
        checkpoint()
    except db.Error:  # a locked or missing file: the next turn tries again
        logger.warning("WAL checkpoint failed", exc_info=True)


def checkpoint(connection=None) -> tuple[int, int, int]:
    """A PASSIVE checkpoint, then a RESTART one if the WAL is long, on `connection` (this
    thread's default one): (1 if the last could not finish, frames in the WAL, frames copied)."""
    with (connection or db.connection).cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        result = cursor.fetchone()
        if result[1] >= RESTART_FRAMES:
            cursor.execute(f"PRAGMA busy_timeout = {RESTART_WAIT_MS}")
            try:
                cursor.execute("PRAGMA wal_checkpoint(RESTART)")
                result = cursor.fetchone()
            finally:
                cursor.execute("PRAGMA busy_timeout = 0")
        return result
