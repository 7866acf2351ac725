"""The web process as `bin/serve` runs it (gunicorn with config/gunicorn.py, and
`manage.py runjobs` beside it when asked), on the run's database, for the availability
tests; and raw HTTP over sockets. Not a test module.

    python -m tests.webproc seed RECEIVER_URL   # two Pro spaces, a key each, an endpoint of
                                                # the first at the receiver; prints JSON
"""

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request(port: int, method: str, path: str, key: str | None = None, body: bytes | None = None,
            timeout: float = 30) -> tuple[int | None, dict, bytes, float]:
    """(status, headers, body, seconds) of one request on a new connection; status None if
    the server could not be reached or did not answer in time."""
    started = time.monotonic()
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall((head + "\r\n").encode() + (body or b""))
            status, headers, payload = read_until_closed(sock)
    except (OSError, IndexError, ValueError):  # unreachable, or closed without an answer
        return None, {}, b"", time.monotonic() - started
    return status, headers, payload, time.monotonic() - started


def accepted_connections(port: int, *, queued: bool = False) -> int:
    """The connections to `port` that the server process has accepted (or with `queued`,
    that wait in its listen queue: in /proc/net/tcp those have no inode yet)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state, inode = line.split()[1], line.split()[3], line.split()[9]
            count += int(local.rsplit(":", 1)[1], 16) == port and state == "01" and (inode == "0") == queued
    return count


def read_until_closed(sock: socket.socket) -> tuple[int, dict, bytes]:
    """(status, headers, body) of the response, read until the server closes."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    head_part, _, payload = received.partition(b"\r\n\r\n")
    status_line, *lines = head_part.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, payload


def base_env(database_url: str, port: int, **settings) -> dict:
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "CELERY_BROKER_URL", "WEB_CONCURRENCY", "WEB_CONCURRENT_REQUESTS",
                           "WEB_SPACE_CONCURRENT_REQUESTS", "WEB_CONNECTIONS")}
    env.update(DATABASE_URL=database_url, HOST="127.0.0.1", PORT=str(port), LOG_LEVEL="ERROR",
               WEBHOOKS_DISPATCH="embedded", WEBHOOKS_ALLOW_PRIVATE_URLS="true",
               RATELIMIT_PER_MINUTE="100000", RATELIMIT_PER_DAY="100000",
               DJANGO_SETTINGS_MODULE="config.settings")
    env.update({name: str(value) for name, value in settings.items()})
    return env


def manage(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def serving(env: dict, *, jobs: bool = False):
    """gunicorn (and `manage.py runjobs` if asked) until the block ends; yields the port."""
    port = int(env["PORT"])
    processes = [subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.py", "config.wsgi"],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)]
    if jobs:
        processes.append(subprocess.Popen([sys.executable, "manage.py", "runjobs"], cwd=ROOT, env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        def up() -> bool:
            assert processes[0].poll() is None, processes[0].stderr.read().decode()
            return request(port, "GET", "/healthz", timeout=2)[0] == 200

        wait_until(up, 60, interval=0.2, message="the web process did not start")
        yield port
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def seed(receiver_url: str) -> dict:
    from spaces import services as space_services
    from webhooks import services

    keys = []
    for name in ("A", "B"):
        space = space_services.create_space(name=f"Space {name}", owner_email=f"{name.lower()}@example.com", pro=True)
        keys.append(space_services.create_key(space=space, name="test")[1])
        if name == "A":
            endpoint, _ = services.create_endpoint(space=space, url=receiver_url)
    return {"a": keys[0], "b": keys[1], "endpoint": endpoint.id}


if __name__ == "__main__":
    import django

    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps({"seed": seed}[command](*arguments)))
