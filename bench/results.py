"""Results and participants of a big poll: `GET /v1/polls/{id}/results` and
`GET /v1/polls/{id}/participants` through the whole Django stack (in-process test client, no
network to the app) for a time poll with 100 options and 2,000 participants who answered
every option, plus the selectors alone.

    .venv/bin/python bench/results.py [--options 100] [--participants 2000] [--repeat 30] [--json]

The database is a fresh SQLite file in a temporary directory unless DATABASE_URL is set
(then that database is migrated and gets a bench space and poll, deleted at the end: use a
scratch database). Rate limits are raised out of the way (the embedded store still counts).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='bench-')}/db.sqlite3")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["RATELIMIT_PER_MINUTE"] = os.environ["RATELIMIT_PER_DAY"] = str(10**9)
    os.environ["REDIS_URL"] = ""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def timed(call, repeat: int) -> dict:
    call()  # warm-up, not kept
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(samples), 1),
        "min_ms": round(ordered[0], 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", type=int, default=100)
    parser.add_argument("--participants", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per measurement (default 30)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args()
    setup_django()

    from django.db import connection
    from django.test import Client

    from bench import fixtures
    from polls import selectors
    from spaces import services as space_services

    space = space_services.create_space(name="Results bench", owner_email=f"bench-{time.time_ns()}@example.com", pro=True)
    _, key = space_services.create_key(space=space, name="bench")
    started = time.perf_counter()
    poll = fixtures.big_poll(space, args.options, args.participants)  # tallies and statistics too
    setup_s = time.perf_counter() - started
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def get(path) -> int:
        """The body's length; a streamed body is counted piece by piece, as a server sends it."""
        response = client.get(path)
        assert response.status_code == 200, response.getvalue()[:500]
        if response.streaming:
            return sum(len(piece) for piece in response.streaming_content)
        return len(response.content)

    sizes = {
        "results": get(f"/v1/polls/{poll.pk}/results"),
        "participants": get(f"/v1/polls/{poll.pk}/participants"),
    }
    tracemalloc.start()  # the Python heap's peak while one participant list is answered
    get(f"/v1/polls/{poll.pk}/participants")
    participants_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    result = {
        "database": connection.vendor,
        "options": args.options,
        "participants": args.participants,
        "votes": args.options * args.participants,
        "setup_s": round(setup_s, 1),
        "response_bytes": sizes,
        "participants_python_peak_bytes": participants_peak,
        "http": {
            "results": timed(lambda: get(f"/v1/polls/{poll.pk}/results"), args.repeat),
            "participants": timed(lambda: get(f"/v1/polls/{poll.pk}/participants"), max(5, args.repeat // 3)),
        },
        "selector": {
            "poll_results": timed(lambda: selectors.poll_results(selectors.get_poll(space, poll.pk)), args.repeat),
            "participant_rows": timed(
                lambda: selectors.participant_rows(selectors.get_poll(space, poll.pk).pk), max(5, args.repeat // 3)
            ),
        },
    }
    space.delete()  # the poll, its responses and the key go with it
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['options']} options x {result['participants']} participants = {result['votes']} votes, "
          f"database: {result['database']} (built in {result['setup_s']} s)")
    print(f"{'measurement':<34}{'median ms':>11}{'min ms':>9}{'p95 ms':>9}")
    for group in ("http", "selector"):
        for name, stats in result[group].items():
            label = f"GET .../{name}" if group == "http" else f"selectors.{name}"
            print(f"{label:<34}{stats['median_ms']:>11}{stats['min_ms']:>9}{stats['p95_ms']:>9}")
    print(f"response sizes: results {sizes['results']:,} B, participants {sizes['participants']:,} B; "
          f"Python peak while answering the participants: {participants_peak:,} B "
          f"({participants_peak / sizes['participants']:.2f} x the response)")


if __name__ == "__main__":
    main()
