"""`./bin/serve` as a person runs it: Ctrl-C (SIGINT to the terminal's process group) stops
every process it started, quietly, and a later start skips the work already done."""

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.waiting import wait_until
from tests.webproc import free_port, request

ROOT = Path(__file__).resolve().parents[1]


def start(env: dict, log_path: Path) -> subprocess.Popen:
    # A session of its own, like a terminal's foreground job: killpg reaches what Ctrl-C would.
    log = open(log_path, "w")
    # With SIGINT caught here, bin/serve starts with it at its default, as from a terminal. A
    # test run started in the background of a script (`cmd &`) has SIGINT ignored, and a shell
    # that starts with a signal ignored can neither trap nor restore it: bin/serve would never
    # hear the Ctrl-C this test sends.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(["bin/serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def wait_ready(process, port: int, log_path: Path) -> None:
    def ready() -> bool:
        assert process.poll() is None, log_path.read_text()
        return request(port, "GET", "/readyz", timeout=2)[0] == 200

    wait_until(ready, 180, interval=0.3, message="bin/serve did not become ready")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_ctrl_c_stops_everything_quietly_and_a_later_start_skips_collecting(tmp_path):
    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(PORT=str(port), HOST="127.0.0.1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               WEB_CONCURRENCY="2")
    for run in (1, 2):
        log_path = tmp_path / f"serve-{run}.log"
        process = start(env, log_path)
        try:
            wait_ready(process, port, log_path)
            children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
            assert len(children) == 2, children  # web and jobs
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
            process.wait(timeout=90)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        output = log_path.read_text()
        assert "Traceback" not in output and "SystemExit" not in output, output[-3000:]
        assert process.returncode == 130
        for child in children:  # each in its process group (job control), all stopped
            assert not group_alive(int(child)), child
        stamp = ROOT / "var" / "static" / ".collected-for"
        if run == 1:
            collected_at = stamp.stat().st_mtime_ns
    assert stamp.stat().st_mtime_ns == collected_at  # the second start did not collect again


def test_a_killed_bin_serve_leaves_no_process_behind(tmp_path):
    """SIGKILL to bin/serve alone (no trap runs): its web server and jobs loop stop too."""
    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(PORT=str(port), HOST="127.0.0.1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               WEB_CONCURRENCY="1")
    log_path = tmp_path / "serve.log"
    process = start(env, log_path)
    children: list[str] = []
    try:
        wait_ready(process, port, log_path)
        children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2, children  # web and jobs
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        wait_until(lambda: not any(group_alive(int(child)) for child in children), 60,
                   message=log_path.read_text()[-3000:])
        assert request(port, "GET", "/healthz", timeout=2)[0] != 200  # nothing serves any more
    finally:
        for child in children:
            if group_alive(int(child)):
                os.killpg(int(child), signal.SIGKILL)
