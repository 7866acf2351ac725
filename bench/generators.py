"""The most expensive poll a client can ask for in one small request: `POST /v1/polls`
with ten generators, each a year of quarter-hour slots (about 1 KB of JSON), through the
whole Django stack (in-process test client). It is refused as TOO_MANY_OPTIONS; what
matters is how soon. Also times a request whose generators all repeat the same slots.

    .venv/bin/python bench/generators.py [--repeat 30]

The database is a fresh SQLite file in a temporary directory unless DATABASE_URL is set
(then use a scratch database: it gets a demo space). Rate limits are raised out of the way.
"""

import argparse
import json
import statistics
import sys
import time
from io import StringIO
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))  # the project's packages


def year_generators(distinct: bool) -> dict:
    """Ten generators of a year of 15-minute slots from 00:00 to 23:59: each starting a day
    later (distinct slots), or all the same year (every slot ten times)."""
    return {
        "title": "Worst case", "kind": "time", "timeZone": "Europe/Berlin", "duration": 15,
        "generators": [
            {"startDate": f"2030-01-{(n if distinct else 0) + 1:02d}", "endDate": f"2030-12-{(n if distinct else 0) + 20:02d}",
             "from": "00:00", "to": "23:59", "interval": 15}
            for n in range(10)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from bench.results import setup_django  # the same scratch database and limits

    setup_django()
    from django.core.management import call_command
    from django.test import Client

    out = StringIO()
    call_command("demo", "--json", "--base-url", "http://localhost:8000", stdout=out)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {json.loads(out.getvalue())['key']}")
    for label, distinct in (("ten distinct year generators", True), ("ten identical year generators", False)):
        raw = json.dumps(year_generators(distinct))
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            response = client.post("/v1/polls", raw, content_type="application/json")
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 400 and response.json()["error"]["code"] == "TOO_MANY_OPTIONS", response.content
        print(f"{label} ({len(raw)} bytes): median {statistics.median(times):.1f} ms, "
              f"max {max(times):.1f} ms over {args.repeat} requests -> TOO_MANY_OPTIONS")


if __name__ == "__main__":
    main()
