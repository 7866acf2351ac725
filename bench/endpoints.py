"""Every endpoint beside what the framework itself can do, over real HTTP: the service under
gunicorn (config/gunicorn.py, as `bin/serve` and the Procfile run it) loaded with wrk, in
alternating rounds with baselines served by the same processes (bench/app.py): a bare
WSGI callable, a bare Django view returning the bytes of `GET /v1/polls/{id}`, and that view
plus the round trips of an API request with nothing in them (`SELECT 1`, and with Redis a
`PING`): the floor of a read that looks its key up and counts it.

    .venv/bin/python bench/endpoints.py [--configs sqlite,postgres] [--rounds 3] [--seconds 3]
        [--connections 8] [--big 20000] [--growth 3] [--tail 32] [--only POST] [--cpu] [--json | --markdown]

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
the worker's peak RSS (0 leaves it out).

`--growth N` then runs N more rounds, each after `POST /v1/polls` was loaded for
`--growth-seconds` (thousands of polls created in the listed space, through the service and
its pooled, prepared connections): the bare view, the list and `POST` again, as a space that
has grown sees them. `--tail C` (default 32) serves the service again with one gevent worker
(WEB_CONCURRENCY=1) and loads every target with C connections on the one key: p50 and p99,
whether requests that wait are served in turn. 0 leaves either out. Rate limits are raised out of the way (every request
is still counted). The 1-minute load average is printed at the start and the end of each
configuration: the machine is shared, so compare ratios of one run, not absolute figures.

`--cpu` also prints, for each throughput endpoint, the CPU time per request of each process
that served it, read from /proc around every wrk run: the web workers, the jobs (`manage.py
runjobs` beside SQLite, the Celery worker and its pool beside PostgreSQL), the bench
database's PostgreSQL backends, redis-server, and the whole machine (wrk and the kernel
included; run it on an otherwise idle machine). Under wrk the machine's
CPU is the bottleneck, so these say where a request's cost lies, and they move less from
one run to the next than throughput does.

`--markdown` ends with one table: the floors of docs/performance.md beside each
configuration's figures, a figure past its floor marked, and the commit and processor the
run was measured on (bench/report.py).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages (bench.fixtures, Django's settings)

from bench.report import print_config, print_markdown
from bench.served import DEFAULT_PG, DEFAULT_REDIS, CpuProbe, Service, peak_rss_kb, prepare, reset_peak, start, wrk

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
    created = args.list_polls  # polls in the listed space, each POST's added
    try:
        for target in targets:  # warm-up: every worker imports and connects
            sample = wrk(service.port, scripts[target[1]], target[2].format(**ids), 2, 1)
            created += sample["requests"] if target[1] == "POST" else 0
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
                created += sample["requests"] if method == "POST" else 0
        growth = grow(service, args, ids, scripts, created)
        huge = None
        if ids["huge"]:
            huge = read_huge(service, ids)
    finally:
        service.stop()
    tail = tail_latencies(name, env, workdir, args, ids, scripts) if args.tail else None
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
            "endpoints": endpoints, "big": huge, "cpu_ms_per_request": cpu_ms, "growth": growth, "tail": tail}


GROWTH_TARGETS = ("bare Django view", "GET list limit=50", "POST poll (10 options)")


def grow(service: Service, args, ids: dict, scripts: dict, created: int) -> list[dict]:
    """`--growth` rounds: `POST /v1/polls` loaded for `--growth-seconds`, then the bare view,
    the list and `POST` measured as in a round, their ratios to the bare view of the same
    round, and how many polls the listed space then holds."""
    by_label = {target[0]: target for target in TARGETS}
    found = []
    for _ in range(args.growth):
        created += wrk(service.port, scripts["POST"], "/v1/polls", args.connections, args.growth_seconds)["requests"]
        samples = {}
        for label in GROWTH_TARGETS:
            _label, method, path, _conns, _body = by_label[label]
            samples[label] = wrk(service.port, scripts[method], path.format(**ids), args.connections, args.seconds)
            created += samples[label]["requests"] if method == "POST" else 0
        bare = samples["bare Django view"]["rps"]
        found.append({"polls": created, "endpoints": {
            label: {"rps": round(sample["rps"], 1), "ratio_to_bare_view": round(sample["rps"] / bare, 3),
                    "p50_ms": round(sample["p50_ms"], 1), "p95_ms": round(sample["p95_ms"], 1)}
            for label, sample in samples.items()}})
    return found


def tail_latencies(name: str, env: dict, workdir: Path, args, ids: dict, scripts: dict) -> dict:
    """The service again with one gevent worker, every target loaded with `--tail`
    connections on the one key in turn: its p50 and p99. Requests that wait for a slot must
    be served in turn, so p99 stays within a small multiple of p50."""
    service = start(name, {**env, "WEB_CONCURRENCY": "1"}, workdir)
    targets = [target for target in selected(args.only) if target[0] != "bare WSGI"]
    try:
        for _label, method, path, _conns, _body in targets:  # warm-up
            wrk(service.port, scripts[method], path.format(**ids), 2, 1)
        endpoints = {}
        for label, method, path, _conns, _body in targets:
            sample = wrk(service.port, scripts[method], path.format(**ids), args.tail, max(args.seconds, 4))
            endpoints[label] = {"rps": round(sample["rps"], 1), "p50_ms": round(sample["p50_ms"], 1),
                                "p99_ms": round(sample["p99_ms"], 1),
                                "p99_over_p50": round(sample["p99_ms"] / max(sample["p50_ms"], 0.001), 1)}
    finally:
        service.stop()
    worst = max((stats["p99_over_p50"] for label, stats in endpoints.items() if not label.startswith("bare")), default=None)
    return {"connections": args.tail, "endpoints": endpoints, "worst_p99_over_p50": worst}


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
    parser.add_argument("--growth", type=int, default=3, help="rounds after thousands of creates (0: none)")
    parser.add_argument("--growth-seconds", type=float, default=10, help="POST load before each growth round")
    parser.add_argument("--tail", type=int, default=32, help="connections on one worker for p99 (0: none)")
    parser.add_argument("--list-polls", type=int, default=60, help=argparse.SUPPRESS)
    parser.add_argument("--other-polls", type=int, default=5000,
                        help="polls of another space in the database, as a service in use has (0: none)")
    parser.add_argument("--postgres-url", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_PG))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--only", help="comma-separated words: only the endpoints whose label has one "
                        "(with the bare baselines), e.g. --only POST or --only GET,results")
    parser.add_argument("--cpu", action="store_true", help="also the CPU per request of each process (see above)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="end with the floors' table (see above)")
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
    elif args.markdown:
        print_markdown(results)


if __name__ == "__main__":
    main()
