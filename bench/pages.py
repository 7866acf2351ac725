"""The pages of a big poll through the whole Django stack (in-process test client) for a time
poll with 100 options and 2,000 participants who answered every option: the invite page
(`GET {APP_URL}/invite/{id}`) as a newcomer sees it and as a participant holding an edit
link sees it, and the organizer's page (`GET {APP_URL}/poll/{id}`) signed in. Reports the
time (median, min, p95), the number of queries and the page's size.

    .venv/bin/python bench/pages.py [--options 100] [--participants 2000] [--repeat 30] [--json]

The database is a fresh SQLite file in a temporary directory unless DATABASE_URL is set
(then that database is migrated and gets a bench space and poll, deleted at the end: use a
scratch database).
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project's packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", type=int, default=100)
    parser.add_argument("--participants", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per measurement (default 30)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args()
    from bench.results import setup_django, timed

    setup_django()

    from django.db import connection
    from django.test import Client

    from bench import fixtures
    from pages import services as page_services

    space, _ = fixtures.bench_space("Pages bench")
    poll = fixtures.big_poll(space, args.options, args.participants)  # tallies and statistics too
    poll.disable_comments = False
    poll.save(update_fields=["disable_comments"])
    _, token = page_services.answer(poll=poll, name="Bench", email=None, votes={})
    visitors = {"newcomer": Client(), "participant": Client(), "organizer": Client()}
    visitors["participant"].cookies[f"answer_{poll.pk}"] = token
    _, sign_in = page_services.request_sign_in(poll=poll, email=space.owner.email)
    assert visitors["organizer"].post(f"/poll/{poll.pk}/sign-in/{sign_in}").status_code == 302
    urls = {"newcomer": f"/invite/{poll.pk}", "participant": f"/invite/{poll.pk}", "organizer": f"/poll/{poll.pk}"}

    result = {"database": connection.vendor, "options": args.options, "participants": args.participants + 1,
              "pages": {}}
    for name, client in visitors.items():
        def get(client=client, url=urls[name]):
            response = client.get(url)
            assert response.status_code == 200, response.content[:500]
            return response

        queries = []
        with connection.execute_wrapper(lambda execute, sql, *rest: queries.append(sql) or execute(sql, *rest)):
            size = len(get().content)
        result["pages"][name] = {**timed(get, args.repeat), "queries": len(queries), "bytes": size}
    space.delete()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"invite and organizer pages, {result['options']} options x {result['participants']} participants, "
          f"database: {result['database']}")
    print(f"{'visitor':<14}{'median ms':>11}{'min ms':>9}{'p95 ms':>9}{'queries':>9}{'bytes':>9}")
    for name, stats in result["pages"].items():
        print(f"{name:<14}{stats['median_ms']:>11}{stats['min_ms']:>9}{stats['p95_ms']:>9}{stats['queries']:>9}"
              f"{stats['bytes']:>9}")


if __name__ == "__main__":
    main()
