"""Instructions per request, counted by valgrind's callgrind: the same figure for the same
code whatever else the machine is doing, where the wall-clock benches (bench/endpoints.py)
vary by a third from one run to the next on a shared machine. For comparing a change with
the code before it; not a substitute for endpoints.py, which sees round trips, gunicorn and
the database server too.

    .venv/bin/python bench/instructions.py [--targets bare,get,list,post] [--requests 200] [--json]

Each target runs in a process of its own under `valgrind --tool=callgrind` with counting off
while Django starts, migrates a fresh SQLite file (or the DATABASE_URL database: use a
scratch one) and builds the fixtures (60 polls of 10 options, bench.fixtures), and warms up;
then it counts `--requests` requests through the service's WSGI application
(config.wsgi.application, in-process: no socket, no gunicorn) and the figure is the total
divided by their number. `bare` is the bare Django view of bench/app.py (behind every
middleware), the floor. Rate limits are raised out of the way (each request is still
counted). REDIS_URL, if set, is used as the service would. Needs `valgrind` (Debian's).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

TARGETS = ("bare", "get", "list", "post")


def child(target: str, requests: int, ready: Path, go: Path) -> None:
    """Set up, warm up, say `ready`, wait for `go` (counting on), run the requests, exit."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("EMAIL_URL", "consolemail://")  # no e-mail is sent
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='bench-')}/db.sqlite3")
    os.environ.setdefault("REDIS_URL", "")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["RATELIMIT_PER_MINUTE"] = os.environ["RATELIMIT_PER_DAY"] = str(10**9)
    import django

    django.setup()
    from django.core.management import call_command

    from bench import fixtures

    call_command("migrate", verbosity=0)
    space, key = fixtures.bench_space()
    poll = fixtures.small_polls(space, 60)[0]
    body = json.dumps(fixtures.poll_body(10)).encode()

    from config.wsgi import application as service

    def call(app, path: str, method: str = "GET", data: bytes = b"", query: str = "") -> str:
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "HTTP_HOST": "localhost", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
            "wsgi.input": BytesIO(data), "wsgi.errors": sys.stderr, "CONTENT_LENGTH": str(len(data)) if data else "",
            "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Bearer {key}",
        }
        status = []
        result = app(environ, lambda line, headers, exc_info=None: status.append(line))
        content = b"".join(result)
        getattr(result, "close", lambda: None)()
        assert status[0][:3] in ("200", "201"), (status, content[:300])
        return content

    bare_body = Path(tempfile.mkdtemp(prefix="bench-")) / "body.json"
    bare_body.write_bytes(call(service, f"/v1/polls/{poll.pk}"))
    os.environ["BENCH_BODY_FILE"] = str(bare_body)
    from bench.app import application

    run = {
        "bare": lambda: call(application, "/bench/view"),
        "get": lambda: call(application, f"/v1/polls/{poll.pk}"),
        "list": lambda: call(application, "/v1/polls", query="limit=50"),
        "post": lambda: call(application, "/v1/polls", "POST", body),
    }[target]
    for _ in range(30):
        run()
    _hold_fan_out_mark()
    ready.touch()
    while not go.exists():
        time.sleep(0.05)
    for _ in range(requests):
        run()
    os._exit(0)  # no teardown counted


def _hold_fan_out_mark() -> None:
    """With Celery (a Redis broker), a write enqueues a fan-out task unless one is queued
    already (webhooks.broker_marks, FAN_OUT_QUEUED_KEY): nothing consumes it here, and its mark
    would expire during the slow counted run, making a few requests publish a task and the
    count move by a fifth from one run to the next. Held for the run: every counted write
    finds a fan-out queued, as most do under load (one task per batch window)."""
    from django.conf import settings

    if settings.WEBHOOKS_DISPATCH != "celery":
        return
    from webhooks import broker_marks

    marks = broker_marks.marks()
    if marks is not None:
        commands, (queued, _recent) = marks
        commands.run("SET", queued, "bench", "EX", 3600)


def count(target: str, requests: int) -> int:
    """Instructions per request of `target`, from a callgrind run of its own."""
    work = Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    ready, go, out = work / "ready", work / "go", work / "callgrind.out"
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
         sys.executable, __file__, "--child", target, str(requests), str(ready), str(go)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # string hashes seeded at random moved the count by 1-3 %
    )
    while not ready.exists():
        if process.poll() is not None:
            raise SystemExit(f"{target}: the child failed:\n{process.stderr.read()[-3000:]}")
        time.sleep(0.2)
    subprocess.run(["callgrind_control", "--instr=on", str(process.pid)], check=True, capture_output=True)
    go.touch()
    if process.wait() != 0:
        raise SystemExit(f"{target}: the child failed:\n{process.stderr.read()[-3000:]}")
    totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    return int(totals.group(1)) // requests


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}")
    parser.add_argument("--requests", type=int, default=200, help="requests counted per target (default 200)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    targets = [name for name in args.targets.split(",") if name]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    # The counts do not mind the load; but targets sharing a DATABASE_URL database would
    # migrate it at once, and collide: one after the other there.
    workers = 1 if os.environ.get("DATABASE_URL") else os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        result = dict(zip(targets, pool.map(lambda name: count(name, args.requests), targets), strict=True))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    database = os.environ.get("DATABASE_URL", "sqlite (a fresh file)").split("@")[-1]
    print(f"instructions per request, {args.requests} requests each; database: {database}, "
          f"Redis: {os.environ.get('REDIS_URL') or 'none'}")
    for name, instructions in result.items():
        ratio = f"  bare ÷ this {result['bare'] / instructions:.3f}" if "bare" in result else ""
        print(f"{name:6} {instructions:>12,}{ratio}")


if __name__ == "__main__":
    main()
