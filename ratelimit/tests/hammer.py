"""A worker process of the concurrency test:
`python -m ratelimit.tests.hammer API_KEY THREADS REQUESTS`.

Sets Django up from the environment (DATABASE_URL, REDIS_URL, the limits), starts THREADS
threads, prints `ready`, and when a line arrives on stdin lets every thread send REQUESTS
`GET /v1/polls` through the whole Django stack at once. Prints `{status: count}` as JSON.
"""

import json
import os
import sys
import threading
from collections import Counter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402


def main(key: str, threads: int, requests: int) -> None:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    go = threading.Barrier(threads + 1)

    def work():
        client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
        go.wait()
        try:
            for _ in range(requests):
                status = client.get("/v1/polls").status_code
                with lock:
                    statuses[status] += 1
        finally:
            connection.close()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    print("ready", flush=True)
    sys.stdin.readline()
    go.wait()
    for worker in workers:
        worker.join()
    print(json.dumps(statuses), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
