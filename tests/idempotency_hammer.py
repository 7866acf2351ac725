"""A worker process of the idempotency concurrency test:
`python -m tests.idempotency_hammer API_KEY THREADS PATH IDEMPOTENCY_KEY BODY_JSON`.

Sets Django up from the environment, starts THREADS threads, prints `ready`, and when a
line arrives on stdin every thread sends the same create at once through the whole Django
stack. Prints `[[status, id, replayed], ...]` as JSON.
"""

import json
import os
import sys
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402


def main(key: str, threads: int, path: str, idempotency_key: str, body: str) -> None:
    results = []
    lock = threading.Lock()
    go = threading.Barrier(threads + 1)

    def work():
        client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_IDEMPOTENCY_KEY=idempotency_key)
        go.wait()
        try:
            response = client.post(path, body, content_type="application/json")
            data = json.loads(response.content)
            with lock:
                results.append([response.status_code, (data.get("data") or {}).get("id") or data,
                                response.headers.get("Idempotent-Replayed")])
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
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
