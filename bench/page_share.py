"""One poll's crowd against another tenant's pages, over real HTTP: the service under gunicorn
as `bin/serve` runs it (SQLite, `manage.py runjobs` beside it) or as the Procfile does
(`--postgres`: PostgreSQL and Redis, Celery beside it). Clients loop on one big poll's
invite page (100 options x 2,000 participants, one space) while one more client reads
another space's small poll, its invite page and `GET /v1/polls/{id}`, one request at a time;
the same reads are timed first with no crowd. Prints p50 and p95 of both phases and what the
crowd got (full pages, 429 pages).

    .venv/bin/python bench/page_share.py [--clients 8] [--seconds 60] [--participants 2000]
        [--spread] [--read-limit N] [--postgres [--postgres-url URL] [--redis-url URL]] [--json]

The crowd sends from 127.0.0.1 (`--spread`: each client from an address of its own,
127.0.1.N, so that each has its own page-read limit), the timed reader from addresses of its
own (127.0.2.N and 127.0.3.N, a new one every 200 pages), so that no page-read limit is the
reader's. `--read-limit N` sets
`PAGES_READ_LIMIT_PER_ADDRESS_PER_MINUTE` (default: the service's own). The API's per-space
limits are raised out of the way. Run it by hand on an otherwise idle machine: it is no test.
The database is made afresh in a temporary directory (SQLite) or at `--postgres-url` (default
postgres://postgres@127.0.0.1:5432/bench_page_share), dropped and created again, with the
Redis database of `--redis-url` (default db 7) flushed: use scratch ones.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages (bench.fixtures, Django's settings)

from bench.served import PYTHON, free_port, reset_postgres, start  # noqa: E402

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/bench_page_share"
REDIS_URL = "redis://127.0.0.1:6379/7"


def build_fixtures(out: Path, participants: int) -> None:
    """In a child process with the run's environment: the crowded poll (one space), the
    reader's small poll and API key (another space)."""
    import django

    django.setup()
    from django.core.management import call_command

    from bench import fixtures

    call_command("migrate", verbosity=0)
    crowded_space, _ = fixtures.bench_space("Crowded")
    big = fixtures.big_poll(crowded_space, 100, participants)
    other_space, key = fixtures.bench_space("Other tenant")
    (small,) = fixtures.small_polls(other_space, 1, options=10, participants=20)
    (out / "fixtures.json").write_text(json.dumps({"big": big.pk, "small": small.pk, "key": key}))


def connect(port: int, source: str) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))


def get(conn: http.client.HTTPConnection, path: str, headers: dict | None = None) -> int:
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    response.read()
    return response.status


def crowd(port: int, path: str, source: str, until: float, counts) -> None:
    """One client of the crowd: GET `path` in a loop on one connection until `until`."""
    conn = connect(port, source)
    seen: dict[int, int] = {}
    while time.time() < until:
        try:
            status = get(conn, path)
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = connect(port, source)
            status = 0
        seen[status] = seen.get(status, 0) + 1
    conn.close()
    for status, count in seen.items():
        counts.put((status, count))


def read_other(port: int, ids: dict, seconds: float, phase: int) -> dict:
    """The other tenant's invite page and API read, alternately, one at a time, for `seconds`.
    The page from a new address every 200 reads (127.0.2.N, 127.0.3.N...: never past the
    page-read limit itself), the API from 127.0.0.3."""
    sources = {"invite page": f"127.0.{2 + phase}.1", "API GET poll": "127.0.0.3"}
    conns = {name: connect(port, source) for name, source in sources.items()}
    paths = {"invite page": (f"/invite/{ids['small']}", None),
             "API GET poll": (f"/v1/polls/{ids['small']}", {"Authorization": f"Bearer {ids['key']}"})}
    times: dict[str, list[float]] = {name: [] for name in sources}
    statuses: dict[int, int] = {}
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if times["invite page"] and len(times["invite page"]) % 200 == 0:
            sources["invite page"] = f"127.0.{2 + phase}.{len(times['invite page']) // 200 + 1}"
            conns["invite page"].close()
            conns["invite page"] = connect(port, sources["invite page"])
        for name, (path, headers) in paths.items():
            started = time.perf_counter()
            try:
                status = get(conns[name], path, headers)
            except (OSError, http.client.HTTPException):  # a kept-alive connection the server closed: again
                conns[name].close()
                conns[name] = connect(port, sources[name])
                started = time.perf_counter()
                status = get(conns[name], path, headers)
            times[name].append((time.perf_counter() - started) * 1000)
            statuses[status] = statuses.get(status, 0) + 1
        time.sleep(0.02)
    result = {name: {"p50_ms": round(statistics.median(values), 1),
                     "p95_ms": round(statistics.quantiles(values, n=20)[-1], 1), "requests": len(values)}
              for name, values in times.items()}
    result["statuses"] = statuses
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60, help="length of each phase (default 60)")
    parser.add_argument("--participants", type=int, default=2000)
    parser.add_argument("--spread", action="store_true", help="each crowd client from an address of its own")
    parser.add_argument("--read-limit", type=int, help="PAGES_READ_LIMIT_PER_ADDRESS_PER_MINUTE")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL and Redis (scratch ones)")
    parser.add_argument("--postgres-url", default=POSTGRES_URL)
    parser.add_argument("--redis-url", default=REDIS_URL)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--build-fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_fixtures:
        return build_fixtures(args.build_fixtures, args.participants)

    workdir = Path(tempfile.mkdtemp(prefix="page-share-"))
    (workdir / "body.json").write_text("{}")  # bench.app's baseline endpoints, unused here
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(free_port()), "PYTHONPATH": str(BASE_DIR),
           "DJANGO_SETTINGS_MODULE": "config.settings", "BENCH_BODY_FILE": str(workdir / "body.json"),
           "RATELIMIT_PER_MINUTE": str(10**9), "RATELIMIT_PER_DAY": str(10**9), "LOG_LEVEL": "WARNING",
           "EMAIL_URL": os.environ.get("EMAIL_URL") or "consolemail://"}  # no e-mail is sent
    if args.read_limit:
        env["PAGES_READ_LIMIT_PER_ADDRESS_PER_MINUTE"] = str(args.read_limit)
    if args.postgres:
        import redis

        reset_postgres(args.postgres_url)
        redis.Redis.from_url(args.redis_url).flushdb()
        env.update(DATABASE_URL=args.postgres_url, REDIS_URL=args.redis_url, CELERY_BROKER_URL=args.redis_url)
    else:
        env.update(DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3", REDIS_URL="", CELERY_BROKER_URL="",
                   WEBHOOKS_DISPATCH="embedded")
    subprocess.run([PYTHON, __file__, "--build-fixtures", str(workdir), "--participants", str(args.participants)],
                   cwd=BASE_DIR, env={**env, "DB_STATEMENT_TIMEOUT_MS": "0"}, check=True)
    ids = json.loads((workdir / "fixtures.json").read_text())
    service = start("postgres" if args.postgres else "sqlite", env, workdir)
    try:
        warm = connect(service.port, "127.0.0.4")
        assert get(warm, f"/invite/{ids['big']}") == 200
        warm.close()
        load = os.getloadavg()[0]
        alone = read_other(service.port, ids, args.seconds, 0)
        counts = multiprocessing.Queue()
        until = time.time() + args.seconds + 2
        clients = [multiprocessing.Process(target=crowd, args=(
            service.port, f"/invite/{ids['big']}", f"127.0.1.{n + 1}" if args.spread else "127.0.0.1", until, counts))
            for n in range(args.clients)]
        for client in clients:
            client.start()
        time.sleep(1)  # the crowd under way
        crowded = read_other(service.port, ids, args.seconds, 1)
        for client in clients:
            client.join()
        crowd_statuses: dict[int, int] = {}
        while not counts.empty():
            status, count = counts.get()
            crowd_statuses[status] = crowd_statuses.get(status, 0) + count
    finally:
        service.stop()
    result = {"database": "postgresql + redis" if args.postgres else "sqlite", "clients": args.clients,
              "spread": args.spread, "seconds": args.seconds, "participants": args.participants,
              "load_at_start": load, "alone": alone, "crowded": crowded, "crowd_statuses": crowd_statuses}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.clients} clients on a poll of 100 options x {args.participants} participants "
          f"({'an address each' if args.spread else 'one address'}), {result['database']}, "
          f"{args.seconds:g} s a phase, load {load:.1f} at the start")
    print(f"{'other tenant':<16}{'alone p50':>11}{'p95':>8}{'crowded p50':>13}{'p95':>8}")
    for name in ("invite page", "API GET poll"):
        print(f"{name:<16}{alone[name]['p50_ms']:>11}{alone[name]['p95_ms']:>8}"
              f"{crowded[name]['p50_ms']:>13}{crowded[name]['p95_ms']:>8}")
    print(f"the crowd's answers: {dict(sorted(crowd_statuses.items()))}; the reader's: {crowded['statuses']}")


if __name__ == "__main__":
    main()
