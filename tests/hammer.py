"""Many clients at once, through the whole Django stack, from several processes: the
concurrency tests of the rate limiter and of Idempotency-Key.

`hammer(env, processes, threads, request, repeat)` starts `processes` workers
(`python -m tests.hammer`), each with `threads` threads; every worker prints `ready`, and
when all are, every thread of every process sends `request` `repeat` times at once. Returns
`[status, body, Idempotent-Replayed]` of every response (the body parsed as JSON).
`shared_database(tmp_path)` gives the workers a database URL that sees the test's data.

A request is `{"method": "GET" or "POST", "path": ..., "key": API key, "headers": {...},
"body": JSON object}` (headers and body optional).
"""

import json
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing, contextmanager
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[1]


@contextmanager
def shared_database(tmp_path):
    """A URL other processes can open to see this test's (committed) data, and after the
    block, their writes visible here too."""
    from django.db import connection  # the workers import this module before Django is set up

    from ratelimit import sqlite_counters

    if connection.vendor == "postgresql":
        db = connection.settings_dict
        yield f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        return
    # SQLite: the test database lives in this process's memory; share it through a file.
    path = tmp_path / "shared.sqlite3"
    connection.ensure_connection()
    with closing(sqlite3.connect(path)) as file:
        connection.connection.backup(file)
        # In WAL mode before any process opens it: the switch (each connection's init
        # command) needs the file to itself and fails at once when others are connecting.
        file.execute("PRAGMA journal_mode=WAL")
    yield f"sqlite:///{path}"
    with closing(sqlite3.connect(path)) as file:
        file.backup(connection.connection)
    # The rate-limit counters the workers kept in their own file (ratelimit.sqlite_counters).
    counters = Path(sqlite_counters.counters_name(str(path), in_memory=False))
    if counters.exists():
        with closing(sqlite3.connect(counters)) as file, sqlite_counters.raw_connection() as raw:
            file.backup(raw)


def hammer(env: dict, processes: int, threads: int, request: dict, repeat: int = 1) -> list[list]:
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.hammer", str(threads), str(repeat), json.dumps(request)],
            cwd=BASE_DIR, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for _ in range(processes)
    ]
    try:
        return [result for out in release_together(workers, timeout=120) for result in json.loads(out)]
    finally:
        for worker in workers:
            worker.kill()


def release_together(workers: list[subprocess.Popen], timeout: float) -> list[str]:
    """Start worker processes at one instant: wait until each has printed `ready`, send
    every one `go`, and return what each printed after (each must exit 0 within `timeout`)."""
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        assert worker.returncode == 0, err
        outputs.append(out)
    return outputs


def _work(threads: int, repeat: int, request: dict) -> None:
    """The worker process: Django set up from the environment (DATABASE_URL, REDIS_URL, the
    limits), `threads` threads released together."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    results: list[list] = []
    lock = threading.Lock()
    go = threading.Barrier(threads + 1)
    headers = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in request.get("headers", {}).items()}

    def work():
        client = Client(HTTP_AUTHORIZATION=f"Bearer {request['key']}", **headers)
        go.wait()
        try:
            for _ in range(repeat):
                if request["method"] == "POST":
                    response = client.post(request["path"], json.dumps(request.get("body")), content_type="application/json")
                else:
                    response = client.get(request["path"])
                with lock:
                    results.append([response.status_code, json.loads(response.content),
                                    response.headers.get("Idempotent-Replayed")])
        finally:
            connection.close()

    start_when_told([threading.Thread(target=work) for _ in range(threads)], go)
    print(json.dumps(results), flush=True)


def start_when_told(threads: list[threading.Thread], go: threading.Barrier) -> None:
    """The worker process's side of `release_together`: start `threads` (each waits on `go`),
    print `ready`, and when told, release them at once and wait for them to finish."""
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    sys.stdin.readline()
    go.wait()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    _work(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))
