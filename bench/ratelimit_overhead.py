"""What the rate limiter adds to a request: `GET /v1/polls` through the whole Django stack
(in-process test client, no network to the app) with limits off, with the embedded store
and with Redis, and `ratelimit.limiter.consume` alone.

    .venv/bin/python bench/ratelimit_overhead.py [--requests 2000] [--redis-url URL] [--json]

The database is a fresh SQLite file in a temporary directory unless DATABASE_URL is set
(then that database is migrated and gets a bench space: use a scratch database). Redis:
`--redis-url`, else REDIS_URL, else redis://127.0.0.1:6379/0; the bench space's counters
are deleted at the end. The modes take turns in rounds, so that drift hits them alike.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages


def setup_django(redis_url: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='bench-')}/db.sqlite3")
    os.environ["LOG_LEVEL"] = "WARNING"
    # Limits far above what the bench sends: every request is counted and let through.
    os.environ["RATELIMIT_PER_MINUTE"] = os.environ["RATELIMIT_PER_DAY"] = str(10**9)
    os.environ["REDIS_URL"] = redis_url
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(samples: list[float]) -> dict:
    micro = [s * 1e6 for s in samples]
    return {
        "median_us": round(statistics.median(micro), 1),
        "mean_us": round(statistics.fmean(micro), 1),
        "p95_us": round(percentile(micro, 0.95), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="timed requests per mode (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="turns each mode takes (default 5)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args()
    setup_django(args.redis_url)

    from django.db import close_old_connections, connection
    from django.test import Client, override_settings

    import ratelimit.throttling
    from ratelimit import limiter, services
    from spaces import services as space_services

    space = space_services.create_space(
        name="Rate-limit bench", owner_email=f"bench-{time.time_ns()}@example.com", pro=True
    )
    _, key = space_services.create_key(space=space, name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def no_limits(space):
        return lambda: limiter.Decision(True, {})  # allowed, no headers: what the throttle gets from start

    modes = {
        "off": ({"REDIS_URL": ""}, no_limits),
        "embedded": ({"REDIS_URL": ""}, limiter.start),
        # Cached reads of keys off: with them the key's query would go too (docs/performance.md),
        # and the difference would not be the limiter's.
        "redis": ({"REDIS_URL": args.redis_url}, limiter.start),
    }
    request_times = {name: [] for name in modes}
    consume_times = {name: [] for name in modes if name != "off"}
    per_round = max(1, args.requests // args.rounds)
    for round_number in range(args.rounds + 1):  # round 0 warms up and is not kept
        for name, (overrides, start) in modes.items():
            with override_settings(**overrides):
                ratelimit.throttling.start = start  # the name the throttle calls
                for _ in range(per_round):
                    started = time.perf_counter()
                    response = client.get("/v1/polls")
                    # What a server does at the end of every request (Django's test client
                    # keeps the connection open instead): CONN_MAX_AGE decides.
                    close_old_connections()
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200, response.content
                    if round_number:
                        request_times[name].append(elapsed)
                if name in consume_times:
                    for _ in range(per_round):
                        started = time.perf_counter()
                        start(space)()
                        elapsed = time.perf_counter() - started
                        if round_number:
                            consume_times[name].append(elapsed)
    ratelimit.throttling.start = limiter.start
    with override_settings(REDIS_URL=args.redis_url):
        services.reset_counters(space_id=space.pk)
    services.reset_counters(space_id=space.pk)

    off = statistics.median(request_times["off"]) * 1e6
    result = {
        "database": connection.vendor,
        "redis": args.redis_url,
        "requests_per_mode": len(request_times["off"]),
        "request": {name: summary(samples) for name, samples in request_times.items()},
        "overhead_median_us": {
            name: round(statistics.median(request_times[name]) * 1e6 - off, 1) for name in consume_times
        },
        "consume": {name: summary(samples) for name, samples in consume_times.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"GET /v1/polls, {result['requests_per_mode']} requests per mode, database: {result['database']}")
    print(f"{'mode':<10}{'median µs':>12}{'mean µs':>12}{'p95 µs':>12}{'overhead µs':>14}{'consume() µs':>15}")
    for name, stats in result["request"].items():
        overhead = result["overhead_median_us"].get(name, 0.0)
        alone = result["consume"].get(name, {}).get("median_us", 0.0)
        print(f"{name:<10}{stats['median_us']:>12}{stats['mean_us']:>12}{stats['p95_us']:>12}{overhead:>14}{alone:>15}")


if __name__ == "__main__":
    main()
