"""Every endpoint beside what the framework itself can do, over real HTTP: the service under
gunicorn (config/gunicorn.py, as `bin/serve` and the Procfile run it) loaded with wrk, in
alternating rounds with baselines served by the same processes (bench/app.py): a bare
WSGI callable, a bare Django view returning the bytes of `GET /v1/polls/{id}`, and that view
plus the round trips of an API request with nothing in them (`SELECT 1`, and with Redis a
`PING`): the floor of a read that looks its key up and counts it.

    .venv/bin/python bench/endpoints.py [--configs sqlite,postgres] [--rounds 3] [--seconds 3]
        [--connections 8] [--big 20000] [--only POST] [--cpu] [--json]

Configurations:
- sqlite: a fresh SQLite file, no Redis, `manage.py runjobs` beside the web process (what
  `bin/serve` runs);
- postgres: PostgreSQL (`--postgres-url`, default postgres://postgres@127.0.0.1:5432/bench_http,
  dropped and created again: use a scratch database) and Redis (`--redis-url`, default
  redis://127.0.0.1:6379/7, the rate-limit counters and the Celery broker), as the
  Procfile's web process runs, with its Celery worker beside it (which fans out the events
  of the writes).

Each round runs every target for `--seconds` (wrk, one thread): the throughput endpoints with
`--connections` connections (ratio = rps ÷ the bare view's rps of the same round; the median
of the rounds is printed), the heavy reads (results 100 × 2,000, participants 2,000 × 100)
with one connection, so that p50 and p95 are the time of one request. `--big N` then reads
the participants of an N × 100 poll a few times with one client, measuring time, bytes and
the worker's peak RSS (0 leaves it out). Rate limits are raised out of the way (every request
is still counted). The 1-minute load average is printed at the start and the end of each
configuration: the machine is shared, so compare ratios of one run, not absolute figures.

`--cpu` also prints, for each throughput endpoint, the CPU time per request of each process
that served it, read from /proc around every wrk run: the web workers, the jobs (`manage.py
runjobs` beside SQLite, the Celery worker and its pool beside PostgreSQL), the bench
database's PostgreSQL backends, redis-server, and the whole machine (wrk and the kernel
included; run it on an otherwise idle machine). Under wrk the machine's
CPU is the bottleneck, so these say where a request's cost lies, and they move less from
one run to the next than throughput does.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages (bench.fixtures, Django's settings)

PYTHON = sys.executable
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/bench_http"
DEFAULT_REDIS = "redis://127.0.0.1:6379/7"

# name, method, path template, connections ("c" = --connections), body, compared with the bare view
TARGETS = [
    ("bare WSGI", "GET", "/bench/wsgi", "c", None),
    ("bare Django view", "GET", "/bench/view", "c", None),
    ("bare view + round trips", "GET", "/bench/round-trips", "c", None),
    ("GET poll", "GET", "/v1/polls/{poll}", "c", None),
    ("GET list limit=50", "GET", "/v1/polls?limit=50", "c", None),
    ("POST poll (10 options)", "POST", "/v1/polls", "c", "post"),
    ("results 100x2,000", "GET", "/v1/polls/{big}/results", 1, None),
    ("participants 2,000x100", "GET", "/v1/polls/{big}/participants", 1, None),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Fixtures (run in a child process with the configuration's environment) ---------------


def build_fixtures(out: Path, list_polls: int, big: int, other_polls: int) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from bench import fixtures

    call_command("migrate", verbosity=0)
    fixtures.other_polls(other_polls)
    space, key = fixtures.bench_space()
    polls = fixtures.small_polls(space, list_polls)
    results_poll = fixtures.big_poll(space, 100, 2000)
    big_poll = fixtures.big_poll(space, 100, big) if big else None
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.get(f"/v1/polls/{polls[-1].pk}")
    assert response.status_code == 200, response.content
    (out / "body.json").write_bytes(response.content)
    (out / "post.json").write_text(json.dumps(fixtures.poll_body(10)))
    (out / "fixtures.json").write_text(json.dumps({
        "key": key, "poll": polls[-1].pk, "big": results_poll.pk, "huge": big_poll.pk if big_poll else None,
    }))


def reset_postgres(url: str) -> None:
    """Drop and create the database of `url` (any URL libpq takes: `?host=/var/run/postgresql`
    for the server's Unix socket)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(url)["dbname"]
    with psycopg.connect(url, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


# --- Servers ---------------------------------------------------------------------------------


class Service:
    """gunicorn and the process that works off the jobs beside it (`jobs`: `manage.py
    runjobs` for SQLite, the Procfile's Celery worker with PostgreSQL), each in its own
    process group, stopped on exit."""

    def __init__(self, env: dict, workdir: Path, jobs: list[str], jobs_env: dict, base_dir: Path = BASE_DIR):
        self.env, self.workdir, self.port = env, workdir, int(env["PORT"])
        self.procs = []
        self.log = open(workdir / "server.log", "ab")
        self.procs.append(subprocess.Popen(
            [GUNICORN, "--config", "config/gunicorn.py", "bench.app:application"],
            cwd=base_dir, env=env, stdout=self.log, stderr=self.log, start_new_session=True,
        ))
        self.procs.append(subprocess.Popen(
            jobs, cwd=base_dir, env={**env, **jobs_env}, stdout=self.log, stderr=self.log, start_new_session=True,
        ))
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _ = self.get("/healthz")
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                self.stop()
                tail = (workdir / "server.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"the service did not start:\n{tail}")
            time.sleep(0.2)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def workers(self) -> list[int]:
        return children(self.procs[0].pid)

    def jobs(self) -> list[int]:
        """The jobs' process and its children (Celery's pool)."""
        main = self.procs[1].pid
        return [main, *children(main)]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.log.close()


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of these processes so far (a process gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def machine_cpu_seconds() -> float:
    """CPU time the whole machine spent busy so far (all but idle and iowait)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICKS


class CpuProbe:
    """The processes behind a configuration, grouped as `--cpu` reports them."""

    def __init__(self, service: "Service", postgres_url: str | None, redis_url: str | None):
        self.service, self.postgres_url, self.redis_url = service, postgres_url, redis_url

    def groups(self) -> dict[str, list[int]]:
        groups = {"web": self.service.workers(), "jobs": self.service.jobs()}
        if self.postgres_url:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict

            with psycopg.connect(self.postgres_url, autocommit=True) as conn:
                groups["postgres"] = [row[0] for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    [conninfo_to_dict(self.postgres_url)["dbname"]],
                )]
        if self.redis_url:
            import redis

            groups["redis"] = [int(redis.Redis.from_url(self.redis_url).info("server")["process_id"])]
        return groups

    def measure(self, run):
        """`run()`'s result, and the CPU seconds each group and the machine spent meanwhile."""
        groups = self.groups()  # the workers' connections are open after the warm-up
        before = {name: cpu_seconds(pids) for name, pids in groups.items()}
        machine = machine_cpu_seconds()
        result = run()
        spent = {name: cpu_seconds(pids) - before[name] for name, pids in groups.items()}
        spent["machine"] = machine_cpu_seconds() - machine
        return result, spent


# --- Load ------------------------------------------------------------------------------------

WRK_SCRIPT = """
wrk.method = "{method}"
wrk.headers["Authorization"] = "Bearer {key}"
{body}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {{"requests":%d,"us":%d,"p50":%d,"p95":%d,"errors":%d,"non2xx":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95),
    e.connect + e.read + e.write + e.timeout, e.status))
end
"""


def wrk(port: int, script: Path, path: str, connections: int, seconds: float) -> dict:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "30s", "-s", str(script),
         f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("BENCH "))
    stats = json.loads(line[6:])
    if stats["errors"] or stats["non2xx"]:
        raise SystemExit(f"wrk saw errors on {path}: {stats}\n{out}")
    return {"rps": stats["requests"] / (stats["us"] / 1e6), "p50_ms": stats["p50"] / 1000, "p95_ms": stats["p95"] / 1000,
            "requests": stats["requests"]}


def prepare(name: str, workdir: Path, *, postgres_url: str, redis_url: str, base_dir: Path = BASE_DIR,
            big: int = 0, list_polls: int = 60, other_polls: int = 5000) -> tuple[dict, dict, dict]:
    """A configuration's environment, fixtures (`base_dir`'s own models and bench.fixtures, in a
    database made afresh) and wrk scripts: (env, ids, {method: script})."""
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(free_port()), "PYTHONPATH": str(base_dir),
           "DJANGO_SETTINGS_MODULE": "config.settings", "BENCH_BODY_FILE": str(workdir / "body.json"),
           "RATELIMIT_PER_MINUTE": str(10**9), "RATELIMIT_PER_DAY": str(10**9)}
    if name == "sqlite":
        env.update(DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3", REDIS_URL="", CELERY_BROKER_URL="",
                   WEBHOOKS_DISPATCH="embedded")
    else:
        reset_postgres(postgres_url)
        import redis

        redis.Redis.from_url(redis_url).flushdb()
        env.update(DATABASE_URL=postgres_url, REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
        env.pop("WEBHOOKS_DISPATCH", None)
    subprocess.run([PYTHON, str(base_dir / "bench" / "endpoints.py"), "--build-fixtures", str(workdir), "--big", str(big),
                    "--list-polls", str(list_polls), "--other-polls", str(other_polls)],
                   cwd=base_dir, check=True,
                   env={**env, "DB_STATEMENT_TIMEOUT_MS": "0"})  # loading 2,000,000 votes takes a while
    ids = json.loads((workdir / "fixtures.json").read_text())
    body = (workdir / "post.json").read_text()
    scripts = {}
    for method, has_body in (("GET", False), ("POST", True)):
        script = workdir / f"{method}.lua"
        script.write_text(WRK_SCRIPT.format(
            method=method, key=ids["key"],
            body=f'wrk.headers["Content-Type"] = "application/json"\nwrk.body = [[{body}]]' if has_body else "",
        ))
        scripts[method] = script
    return env, ids, scripts


def start(name: str, env: dict, workdir: Path, base_dir: Path = BASE_DIR) -> Service:
    """The service of a configuration as `bin/serve` (SQLite) or the Procfile (PostgreSQL) runs it."""
    if name == "sqlite":
        return Service(env, workdir, [PYTHON, "manage.py", "runjobs"], {}, base_dir)
    return Service(env, workdir, [str(Path(PYTHON).with_name("celery")), "-A", "config", "worker",
                                  "--loglevel", "WARNING"], {"DB_SYNCHRONOUS_COMMIT": "off"}, base_dir)


def selected(only: str | None) -> list[tuple]:
    """The targets `--only` names, with the bare baselines."""
    return [target for target in TARGETS if target[0].startswith("bare") or not only
            or any(word in target[0] for word in only.split(","))]


def run_config(name: str, args, workdir: Path) -> dict:
    started = time.perf_counter()
    env, ids, scripts = prepare(name, workdir, postgres_url=args.postgres_url, redis_url=args.redis_url, big=args.big,
                                list_polls=args.list_polls, other_polls=args.other_polls)
    setup_s = time.perf_counter() - started

    load_start = os.getloadavg()[0]
    service = start(name, env, workdir)
    probe = CpuProbe(service, env["DATABASE_URL"] if name != "sqlite" else None, env["REDIS_URL"] or None)
    cpu: dict[str, dict[str, float]] = {}  # label -> group -> CPU seconds, "requests" included
    targets = selected(args.only)
    try:
        for target in targets:  # warm-up: every worker imports and connects
            wrk(service.port, scripts[target[1]], target[2].format(**ids), 2, 1)
        rounds: dict[str, list[dict]] = {target[0]: [] for target in targets}
        for _ in range(args.rounds):
            for label, method, path, connections, _body in targets:
                conns = args.connections if connections == "c" else connections
                seconds = args.seconds if connections == "c" else max(args.seconds, 4)

                def run(method=method, path=path, conns=conns, seconds=seconds):
                    return wrk(service.port, scripts[method], path.format(**ids), conns, seconds)

                if args.cpu and connections == "c":
                    sample, spent = probe.measure(run)
                    totals = cpu.setdefault(label, {})
                    for group, seconds_spent in {**spent, "requests": sample["requests"]}.items():
                        totals[group] = totals.get(group, 0) + seconds_spent
                else:
                    sample = run()
                rounds[label].append(sample)
        huge = None
        if ids["huge"]:
            huge = read_huge(service, ids)
    finally:
        service.stop()
    load_end = os.getloadavg()[0]

    endpoints = {}
    for label, method, _path, connections, _body in targets:
        samples = rounds[label]
        ratios = [s["rps"] / bare["rps"] for s, bare in zip(samples, rounds["bare Django view"], strict=True)]
        endpoints[label] = {
            "connections": args.connections if connections == "c" else connections,
            "rps": round(statistics.median(s["rps"] for s in samples), 1),
            # One connection against eight: no ratio, the latencies are the figures.
            "ratio_to_bare_view": round(statistics.median(ratios), 3) if connections == "c" else None,
            "p50_ms": round(statistics.median(s["p50_ms"] for s in samples), 1),
            "p95_ms": round(statistics.median(s["p95_ms"] for s in samples), 1),
        }
    cpu_ms = {
        label: {group: round(spent / totals["requests"] * 1000, 3) for group, spent in totals.items() if group != "requests"}
        for label, totals in cpu.items()
    }
    return {"config": name, "setup_s": round(setup_s, 1), "load_start": load_start, "load_end": load_end,
            "endpoints": endpoints, "big": huge, "cpu_ms_per_request": cpu_ms}


def read_huge(service: Service, ids: dict, repeat: int = 3) -> dict:
    """The participants of the big poll, one request at a time; each worker's peak RSS is
    reset before and read after, and the largest is kept."""
    headers = {"Authorization": f"Bearer {ids['key']}"}
    times, peaks, size = [], [], 0
    for _ in range(repeat):
        workers = service.workers()
        for pid in workers:
            reset_peak(pid)
        started = time.perf_counter()
        status, content = service.get(f"/v1/polls/{ids['huge']}/participants", headers)
        times.append(time.perf_counter() - started)
        assert status == 200, content[:300]
        size = len(content)
        peaks.append(max(peak_rss_kb(pid) for pid in workers))
    return {"bytes": size, "median_s": round(statistics.median(times), 2),
            "worker_peak_rss_mb": round(max(peaks) / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--big", type=int, default=20000, help="participants of the big read (0: none)")
    parser.add_argument("--list-polls", type=int, default=60, help=argparse.SUPPRESS)
    parser.add_argument("--other-polls", type=int, default=5000,
                        help="polls of another space in the database, as a service in use has (0: none)")
    parser.add_argument("--postgres-url", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_PG))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--only", help="comma-separated words: only the endpoints whose label has one "
                        "(with the bare baselines), e.g. --only POST or --only GET,results")
    parser.add_argument("--cpu", action="store_true", help="also the CPU per request of each process (see above)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--build-fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_fixtures:
        build_fixtures(args.build_fixtures, args.list_polls, args.big, args.other_polls)
        return

    results = []
    for name in args.configs.split(","):
        workdir = Path(tempfile.mkdtemp(prefix=f"bench-http-{name}-"))
        try:
            results.append(run_config(name, args, workdir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if not args.json:
            print_config(results[-1], args)
    if args.json:
        print(json.dumps(results, indent=2))


def print_config(result: dict, args) -> None:
    print(f"\n== {result['config']}: load average {result['load_start']:.2f} at the start, "
          f"{result['load_end']:.2f} at the end; {args.rounds} rounds of {args.seconds:g} s; "
          f"fixtures built in {result['setup_s']} s")
    print(f"{'endpoint':<26}{'conns':>6}{'rps':>9}{'÷ bare view':>13}{'p50 ms':>9}{'p95 ms':>9}")
    for label, stats in result["endpoints"].items():
        ratio = stats["ratio_to_bare_view"]
        print(f"{label:<26}{stats['connections']:>6}{stats['rps']:>9}{'-' if ratio is None else ratio:>13}"
              f"{stats['p50_ms']:>9}{stats['p95_ms']:>9}")
    if result["cpu_ms_per_request"]:
        groups = list(next(iter(result["cpu_ms_per_request"].values())))
        print(f"CPU ms per request{'':<8}" + "".join(f"{group:>10}" for group in groups))
        for label, spent in result["cpu_ms_per_request"].items():
            print(f"{label:<26}" + "".join(f"{spent[group]:>10}" for group in groups))
    if result["big"]:
        big = result["big"]
        print(f"participants {args.big:,}x100: {big['bytes']:,} B in {big['median_s']} s (median of 3), "
              f"worker peak RSS {big['worker_peak_rss_mb']} MB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
