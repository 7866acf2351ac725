"""What the browser tests share: the service started the README's way (`bin/serve`) on a
free port with a database of its own, Debian's Chromium, and an API call helper."""

import contextlib
import email
import json
import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from email import policy
from email.message import EmailMessage
from pathlib import Path

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Flags for a root user on a machine without a display or outside network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(folder: Path, **settings: str):
    """bin/serve on a free port (SQLite in `folder`, local webhook receivers allowed, plus
    `settings`); yields (base URL, the demo key it printed, its environment). Stopped, its
    whole process group, at the end."""
    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "APP_URL", "CDN_URL", "EMAIL_URL")}
    env.update(PORT=str(port), HOST="127.0.0.1", DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}",
               WEBHOOKS_ALLOW_PRIVATE_URLS="true", LOG_LEVEL="WARNING", WEB_CONCURRENCY="1", **settings)
    log = open(folder / "serve.log", "w+")
    process = subprocess.Popen(["bin/serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        def ready() -> bool:
            assert process.poll() is None, (folder / "serve.log").read_text()
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
                return response.status == 200

        wait_until(ready, 180, interval=0.5, ignore=(OSError,), message="bin/serve did not become ready")
        key = re.search(r"\b(sk_[A-Za-z0-9_-]+)", (folder / "serve.log").read_text()).group(1)
        yield base, key, env
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def api(base: str, key: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"{base}{path}", method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def mails(path: Path) -> list[EmailMessage]:
    """Every e-mail Django's file backend wrote into the folder `path`, or its console backend
    into bin/serve's output `path`, parsed as a mail client would. Each message ends with a
    line of 79 dashes; in bin/serve's output, log lines may come before one."""
    found = []
    for each in sorted(path.iterdir(), key=lambda p: p.stat().st_mtime) if path.is_dir() else [path]:
        for raw in re.split(rb"\n-{79}\n", each.read_bytes())[:-1]:  # the last piece is not a whole message
            lines = raw.strip().split(b"\n")
            first = next((n for n, line in enumerate(lines) if re.match(rb"[A-Za-z-]+: ", line)), None)
            if first is not None:
                found.append(email.message_from_bytes(b"\n".join(lines[first:]) + b"\n", policy=policy.default))
    return found


def wait_for_mail(path: Path, match, timeout: float = 45) -> EmailMessage:
    """The first e-mail in `path` (as `mails` reads it) that `match` accepts, waiting for it."""
    def matching() -> EmailMessage | None:
        return next((message for message in mails(path) if match(message)), None)

    return wait_until(matching, timeout, interval=0.3, message=f"no such e-mail in {path}")


def text_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()
