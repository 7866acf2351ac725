"""What counting a request for /metrics costs: `core.metrics.observe_request` (a request
counter, a latency histogram, and every second a reading of the DB pool) plus the route
label and the 503 message parse the request middleware adds, in prometheus-client's
multiprocess mode (as under gunicorn: counts in mmap'ed files) and in its single-process mode.

    .venv/bin/python bench/metrics_overhead.py [--calls 100000]

Prints microseconds per request (median of 5 rounds) for: a 200 on a route, and a 503 (its
message parsed for the cause). Run by hand; the budget is well under 500 us per request.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))


def measure(calls: int) -> dict[str, float]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='bench-')}/db.sqlite3")
    import django

    django.setup()
    from django.http import JsonResponse
    from django.test import RequestFactory
    from django.urls import resolve

    from core import metrics
    from core.api import middleware

    request = RequestFactory().get("/v1/polls/AbCdEf123456")
    request.resolver_match = resolve("/v1/polls/AbCdEf123456")
    ok = JsonResponse({"data": {}})
    unavailable = JsonResponse({"error": {"code": "SERVICE_UNAVAILABLE", "message": "The database is unavailable; "
                                          "try again later."}}, status=503)

    def one(response):
        status = response.status_code
        metrics.observe_request(middleware._route(request), request.method, status, 0.012,
                                middleware._error_message(response) if status == 503 else None)

    results = {}
    for name, response in (("200", ok), ("503", unavailable)):
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(calls):
                one(response)
            rounds.append((time.perf_counter() - started) / calls * 1e6)
        results[name] = statistics.median(rounds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--child", choices=["multiprocess", "single"])
    args = parser.parse_args()
    if args.child:
        results = measure(args.calls)
        print(f"{args.child:12} 200: {results['200']:.2f} us/request   503: {results['503']:.2f} us/request")
        return
    # Each mode in a process of its own: the mode is fixed when prometheus-client is imported.
    for mode in ("multiprocess", "single"):
        env = dict(os.environ)
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        if mode == "multiprocess":
            env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bench-metrics-")
        subprocess.run([sys.executable, __file__, "--child", mode, "--calls", str(args.calls)], env=env, check=True)


if __name__ == "__main__":
    main()
