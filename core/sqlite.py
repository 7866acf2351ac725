"""SQLite: every process keeps its database file open for as long as it runs.

Django opens a connection for a request and closes it at the end (CONN_MAX_AGE = 0). When the
last connection to a WAL database closes, SQLite checkpoints the WAL into the database file
and deletes it, waiting on the disk twice (about 10 ms on the reference machine): with one
request at a time per process, every request that wrote anything (the rate-limit counter is
one write per request) paid it. One idle connection per process, opened with the first
connection of the process and never used for anything else, keeps the file open: closing a
request's connection is then never the last close, and the WAL is checkpointed by SQLite's
own automatic checkpoints (every 1,000 pages written) instead.

Durability is unchanged: the database runs with `journal_mode=WAL` and `synchronous=NORMAL`
(config/settings.py), so a commit is safe from a crash of the process, and the latest
commits may be lost (never corrupted) when the machine itself loses power
(docs/rate-limits.md).
"""

import os
import sqlite3
import threading

_open: dict[tuple[int, str], sqlite3.Connection] = {}  # (process id, file) -> the idle connection
_lock = threading.Lock()


def keep_database_open(sender, connection, **kwargs) -> None:
    """`connection_created` receiver: the first SQLite connection of a process to a file
    opens the process's idle one (a forked child opens its own)."""
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return
    key = (os.getpid(), str(connection.settings_dict["NAME"]))
    if key in _open:
        return
    with _lock:
        if key not in _open:
            idle = sqlite3.connect(key[1], check_same_thread=False)
            # Reading once enters WAL mode, whose shared lock marks the file as in use.
            idle.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            _open[key] = idle
