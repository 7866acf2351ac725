"""The service as bench/endpoints.py and bench/ab.py serve it: a configuration's environment
and fixtures, gunicorn with the process that works off the jobs beside it, wrk's load, and
the CPU time of each process around a run (read from /proc)."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

PYTHON = sys.executable
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/bench_http"
DEFAULT_REDIS = "redis://127.0.0.1:6379/7"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
  io.write(string.format('BENCH {{"requests":%d,"us":%d,"p50":%d,"p95":%d,"p99":%d,"errors":%d,"non2xx":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95), latency:percentile(99),
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
            "p99_ms": stats["p99"] / 1000, "requests": stats["requests"]}


def prepare(name: str, workdir: Path, *, postgres_url: str, redis_url: str, base_dir: Path = BASE_DIR,
            big: int = 0, list_polls: int = 60, other_polls: int = 5000) -> tuple[dict, dict, dict]:
    """A configuration's environment, fixtures (`base_dir`'s own models and bench.fixtures, in a
    database made afresh) and wrk scripts: (env, ids, {method: script})."""
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(free_port()), "PYTHONPATH": str(base_dir),
           "DJANGO_SETTINGS_MODULE": "config.settings", "BENCH_BODY_FILE": str(workdir / "body.json"),
           "RATELIMIT_PER_MINUTE": str(10**9), "RATELIMIT_PER_DAY": str(10**9),
           "EMAIL_URL": os.environ.get("EMAIL_URL") or "consolemail://"}  # no e-mail is sent
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
