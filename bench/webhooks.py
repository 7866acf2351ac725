"""Webhook delivery: throughput (events per second reaching a local receiver) and the delay
from a committed change to its delivery, embedded and with Celery.

    .venv/bin/python bench/webhooks.py [--mode both|embedded|celery] [--events 2000]
        [--latency-events 100] [--interval 0.25] [--concurrency 8] [--runs 1] [--json]

- embedded: a fresh SQLite file (what bin/serve uses) and `manage.py runjobs` in its own
  process, with the default settings (4 sender threads, a 0.25 s poll).
- celery: PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/bench_webhooks,
  created and migrated if missing: use a scratch database), the Redis broker
  (CELERY_BROKER_URL, default redis://127.0.0.1:6379/6, emptied first) and
  `celery -A config worker --concurrency N` (prefork, as in the Procfile).

The receiver is a threaded HTTP server in this process answering 200 at once. Events are
recorded the way the services do (`record_event` in a transaction; the dispatcher is told
on commit). Throughput: `--events` recorded while no dispatcher runs (Celery queues the
tasks), then worked off by a dispatcher started afterwards: the rate between the first and
the last arrival. Delay: `--latency-events` recorded one at a time at random moments
(`--interval` seconds apart on average), each measured from its commit to its arrival.

`--runs N` repeats each mode N times (a fresh process each) and prints every run and the
medians: on a shared machine single runs vary. Each run reports the 1-minute load average
at its start, so a busy machine shows in the numbers.

`--attack` measures fairness instead (issue 74): space A has `--attack-endpoints` endpoints
at a receiver that accepts and never answers, and queues a test ping every second (its 60
requests a minute) for `--attack-seconds`; space B records `poll.created` events at random
moments (`--interval`) before the attack (for a baseline) and during it. It reports B's
delays (commit to arrival: median and maximum; the target under attack is a median under
1 s and a maximum under 5 s) and the most connections A's receiver held at once. With
Celery, the sweeper runs every 15 s in this process, as Celery beat would run it.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/bench_webhooks"
DEFAULT_BROKER = "redis://127.0.0.1:6379/6"


class Receiver:
    """Records when each event id arrives (time.perf_counter of this process)."""

    def __init__(self):
        self.arrivals: dict[str, float] = {}
        self.requests = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                event_id = json.loads(body)["id"]
                with outer.lock:
                    outer.requests += 1
                    outer.arrivals.setdefault(event_id, time.perf_counter())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, ids: list[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if all(event_id in self.arrivals for event_id in ids):
                    return True
            time.sleep(0.005)
        return False


class SilentReceiver:
    """Accepts every connection, reads what comes and never answers; counts the connections
    open at once."""

    def __init__(self):
        import socket

        self.open = self.peak = self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/silent/"

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn) -> None:
        # Counted a moment after it opens: a sender's next attempt connects as soon as its
        # deadline shut the last one, before this side's thread may have seen that close.
        time.sleep(0.2)
        with self.lock:
            self.open += 1
            self.connections += 1
            self.peak = max(self.peak, self.open)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        finally:
            conn.close()
            with self.lock:
                self.open -= 1


def prepare_environment(mode: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL",)}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING", WEBHOOKS_ALLOW_PRIVATE_URLS="true",
               WEBHOOKS_DISPATCH=mode)
    if mode == "embedded":
        env["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='bench-webhooks-')}/db.sqlite3"
        env["CELERY_BROKER_URL"] = "memory://"
    else:
        env["DATABASE_URL"] = os.environ.get("DATABASE_URL") or DEFAULT_PG
        env["CELERY_BROKER_URL"] = os.environ.get("CELERY_BROKER_URL") or DEFAULT_BROKER
        _create_postgres_database(env["DATABASE_URL"])
        import redis

        redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    os.environ.update(env)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=BASE_DIR, env=env, check=True)
    return env


def _create_postgres_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def start_dispatcher(mode: str, env: dict, concurrency: int) -> subprocess.Popen:
    if mode == "embedded":
        command = [sys.executable, "manage.py", "runjobs", "--only", "webhooks.sweep"]
    else:
        env = {**env, "DB_SYNCHRONOUS_COMMIT": "off"}  # as the Procfile's worker runs
        command = [str(Path(sys.executable).parent / "celery"), "-A", "config", "worker", "--loglevel", "WARNING",
                   "--concurrency", str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def record(space_id: str, n: int):
    from django.db import transaction

    from webhooks.services import record_event

    with transaction.atomic():
        event = record_event(space_id=space_id, type="poll.updated", poll_id=f"bench{n:07d}")
    return event.id, time.perf_counter()  # after the commit (and its on-commit hook)


def run_mode(mode: str, args) -> dict:
    load = os.getloadavg()[0]
    env = prepare_environment(mode)
    import django

    django.setup()
    from spaces.services import create_space
    from webhooks.models import Delivery, Event
    from webhooks.services import create_endpoint

    receiver = Receiver()
    space = create_space(name="Bench", owner_email=f"bench-{time.time_ns()}@example.com", pro=True)
    create_endpoint(space=space, url=receiver.url)
    # Throughput: a backlog recorded while nothing sends (Celery queues the tasks), then
    # worked off: the rate between the first and the last arrival.
    started = time.perf_counter()
    ids = [record(space.id, n)[0] for n in range(args.events)]
    record_rate = args.events / (time.perf_counter() - started)
    dispatcher = start_dispatcher(mode, env, args.concurrency)
    try:
        if not receiver.wait_for(ids, timeout=900):
            raise SystemExit(f"{mode}: not every event arrived within 900 s: "
                             f"{dispatcher.stderr.read() if dispatcher.poll() is not None else ''}")
        arrivals = [receiver.arrivals[event_id] for event_id in ids]
        delivery_rate = (args.events - 1) / (max(arrivals) - min(arrivals))

        # Delay: one event at a time, at random moments (not in step with the poll).
        rng = random.Random(1)
        delays = []
        for n in range(args.latency_events):
            time.sleep(rng.uniform(0, 2 * args.interval))
            event_id, committed = record(space.id, 10**6 + n)
            if not receiver.wait_for([event_id], timeout=60):
                raise SystemExit(f"{mode}: event {event_id} did not arrive within 60 s")
            delays.append(receiver.arrivals[event_id] - committed)
    finally:
        dispatcher.send_signal(signal.SIGTERM)
        try:
            dispatcher.wait(30)
        except subprocess.TimeoutExpired:
            dispatcher.kill()
    total = args.events + args.latency_events
    duplicates = receiver.requests - total
    Event.objects.filter(space=space).delete()
    if mode == "embedded":
        shutil.rmtree(Path(env["DATABASE_URL"].removeprefix("sqlite:///")).parent, ignore_errors=True)
    return {
        "mode": mode,
        "database": "sqlite" if mode == "embedded" else "postgresql",
        "load_average": round(load, 2),
        "events": args.events,
        "record_per_s": round(record_rate),
        "delivered_per_s": round(delivery_rate),
        "delay_ms": {
            "p50": round(statistics.median(delays) * 1000, 1),
            "p95": round(sorted(delays)[int(0.95 * (len(delays) - 1))] * 1000, 1),
            "max": round(max(delays) * 1000, 1),
        },
        "duplicates": duplicates,
        "failed_deliveries": Delivery.objects.exclude(status=Delivery.Status.SUCCEEDED).count(),
    }


def run_attack(mode: str, args) -> dict:
    """Space B's delays before and during space A's pings to receivers that never answer."""
    load = os.getloadavg()[0]
    env = prepare_environment(mode)
    import django

    django.setup()
    from spaces.services import create_space
    from webhooks import jobs
    from webhooks.services import create_endpoint, queue_ping

    receiver, silent = Receiver(), SilentReceiver()
    tag = time.time_ns()
    attacker = create_space(name="Attacker", owner_email=f"attacker-{tag}@example.com", pro=True)
    targets = [create_endpoint(space=attacker, url=f"{silent.url}{n}")[0] for n in range(args.attack_endpoints)]
    other = create_space(name="Other", owner_email=f"other-{tag}@example.com", pro=True)
    create_endpoint(space=other, url=receiver.url)
    dispatcher = start_dispatcher(mode, env, args.concurrency)
    rng = random.Random(1)
    stop = threading.Event()

    def measure(seconds: float, start: int) -> list[str]:
        """B's events at random moments for `seconds`: their ids, with commit times kept."""
        ids, until = [], time.monotonic() + seconds
        while time.monotonic() < until:
            time.sleep(rng.uniform(0, 2 * args.interval))
            event_id, at = record(other.id, start + len(ids))
            committed[event_id] = at
            ids.append(event_id)
        return ids

    def attack() -> None:
        n = 0
        while not stop.wait(1.0):
            queue_ping(endpoint=targets[n % len(targets)])
            n += 1

    def sweeper() -> None:  # Celery beat's job, every 15 s
        while not stop.wait(15):
            jobs.sweep()

    committed: dict[str, float] = {}
    try:
        if not receiver.wait_for([record(other.id, 99999)[0]], timeout=60):  # the dispatcher is up
            raise SystemExit(f"{mode}: the dispatcher did not deliver within 60 s")
        baseline = measure(10, 1)
        threads = [threading.Thread(target=attack, daemon=True)]
        if mode == "celery":
            threads.append(threading.Thread(target=sweeper, daemon=True))
        for thread in threads:
            thread.start()
        attacked = measure(args.attack_seconds, 10**5)
        stop.set()
        if not receiver.wait_for(attacked, timeout=600):
            raise SystemExit(f"{mode}: not every event of space B arrived within 600 s of the attack's end")
    finally:
        stop.set()
        dispatcher.send_signal(signal.SIGTERM)
        try:
            dispatcher.wait(60)
        except subprocess.TimeoutExpired:
            dispatcher.kill()
    if mode == "embedded":
        shutil.rmtree(Path(env["DATABASE_URL"].removeprefix("sqlite:///")).parent, ignore_errors=True)

    def delays(ids: list[str]) -> dict:
        seconds = [receiver.arrivals[event_id] - committed[event_id] for event_id in ids]
        return {"events": len(ids), "p50_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3)}

    return {"mode": mode, "load_average": round(load, 2), "baseline": delays(baseline), "attacked": delays(attacked),
            "attack": {"endpoints": args.attack_endpoints, "seconds": args.attack_seconds,
                       "silent_connections": silent.connections, "silent_at_once": silent.peak}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["both", "embedded", "celery"], default="both")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--latency-events", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.25, help="mean pause between delay samples (s)")
    parser.add_argument("--concurrency", type=int, default=8, help="Celery worker processes")
    parser.add_argument("--runs", type=int, default=1, help="runs per mode; the medians are reported")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--attack", action="store_true", help="measure fairness under an attack (see above)")
    parser.add_argument("--attack-seconds", type=float, default=60)
    parser.add_argument("--attack-endpoints", type=int, default=5)
    args = parser.parse_args()
    if args.attack:
        return attack_main(args)
    if args.mode != "both" and args.runs == 1:
        results = [run_mode(args.mode, args)]
    else:  # one process per run: Django's settings are per process
        results = []
        for mode in ("embedded", "celery") if args.mode == "both" else (args.mode,):
            for _ in range(args.runs):
                argv = [sys.executable, __file__, "--mode", mode, "--json", "--events", str(args.events),
                        "--latency-events", str(args.latency_events), "--interval", str(args.interval),
                        "--concurrency", str(args.concurrency)]
                results.append(json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout))
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
        return
    for result in results:
        delay = result["delay_ms"]
        print(f"{result['mode']:>8} ({result['database']}, load {result['load_average']}): "
              f"{result['delivered_per_s']} events/s delivered ({result['events']} events; recorded at "
              f"{result['record_per_s']}/s), change-to-delivery delay p50 {delay['p50']} ms, p95 {delay['p95']} ms, "
              f"max {delay['max']} ms; {result['duplicates']} duplicates, {result['failed_deliveries']} failed")
    if args.runs > 1:
        for mode in sorted({result["mode"] for result in results}):
            runs = [result for result in results if result["mode"] == mode]
            print(f"{mode:>8} median of {len(runs)} runs: "
                  f"{statistics.median(r['delivered_per_s'] for r in runs):g} events/s, delay p50 "
                  f"{statistics.median(r['delay_ms']['p50'] for r in runs):g} ms, p95 "
                  f"{statistics.median(r['delay_ms']['p95'] for r in runs):g} ms; load average "
                  f"{statistics.median(r['load_average'] for r in runs):g}")


def attack_main(args) -> None:
    if args.mode != "both":
        results = [run_attack(args.mode, args)]
    else:  # one process per mode: Django's settings are per process
        argv = [sys.executable, __file__, "--attack", "--json", "--interval", str(args.interval), "--concurrency",
                str(args.concurrency), "--attack-seconds", str(args.attack_seconds), "--attack-endpoints",
                str(args.attack_endpoints), "--mode"]
        results = [json.loads(subprocess.run([*argv, mode], check=True, capture_output=True, text=True).stdout)
                   for mode in ("embedded", "celery")]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
        return
    for result in results:
        base, hit, attack = result["baseline"], result["attacked"], result["attack"]
        print(f"{result['mode']:>8} (load {result['load_average']}): other space's delay p50 {base['p50_s']} s, "
              f"max {base['max_s']} s ({base['events']} events); under attack ({attack['endpoints']} silent "
              f"endpoints pinged every second for {attack['seconds']:g} s) p50 {hit['p50_s']} s, max {hit['max_s']} s "
              f"({hit['events']} events); the attacker's receiver held {attack['silent_at_once']} connections at "
              f"once ({attack['silent_connections']} in all)")


if __name__ == "__main__":
    main()
