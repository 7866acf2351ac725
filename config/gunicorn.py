"""Gunicorn settings shared by `bin/serve` and the Procfile's web process.

Environment: HOST (default 127.0.0.1) and PORT (default 8000) make the address;
WEB_CONCURRENCY is the number of worker processes (default 2), WEB_CONNECTIONS the
connections each serves at once (default 1000). Options given on the command line win.

Workers are gevent's: every connection is a greenlet, so clients that send their headers or
body slowly (or never) cost a little memory each instead of a thread, and cannot stall the
requests of others (slowloris). psycopg 3 and redis-py cooperate with gevent; SQLite calls
are short and block their worker only while they run.
"""

import os
import shutil
import tempfile
from pathlib import Path

from gunicorn import util as gunicorn_util

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
worker_class = "gevent"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_connections = int(os.environ.get("WEB_CONNECTIONS", "1000"))
timeout = 30
graceful_timeout = 30
# Gunicorn answers a request line over 8 KiB with an HTML 414 of its own; 0 raises its cap
# to 1 MiB so that an overlong query reaches the service and gets the JSON 400 envelope.
limit_request_line = 0
# No control socket: several services (or CI beside a developer) may run on one machine.
control_socket_disable = True
# Gunicorn's own lines (start, workers, errors) as JSON too, like the service's log.
logger_class = "core.logging.GunicornLogger"  # no access line of gunicorn's: the service logs each request
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "core.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "loggers": {"gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False}},
    # Until Django applies its LOGGING (settings.LOG_LEVEL) in each worker.
    "root": {"handlers": ["console"], "level": "WARNING"},
}


# Metrics (core/metrics.py): each worker counts in files of this directory and a scrape of
# /metrics, answered by any worker, adds them all up. A directory of this server's own unless
# PROMETHEUS_MULTIPROC_DIR names one; its files are removed at start (old counts would add
# up with the new) and, for a directory made here, at exit.
_made_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _made_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="pollservice-metrics-")


def on_starting(server):
    for leftover in Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).glob("*.db"):
        leftover.unlink()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # its gauges leave the live sums


def post_worker_init(worker):
    """Leaves what the worker has loaded out of Python's garbage collections. A full
    collection walks every object the process holds (over a hundred thousand once Django, DRF
    and the views are imported) while the worker's other requests wait, and it comes more
    often the more requests allocate. Those objects live as long as the worker, so they are
    frozen once it has loaded the application and imported its views (`gc.freeze`): a full
    collection then walks only what requests allocated."""
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # imports every view now rather than on the first request
    gc.freeze()


def on_exit(server):
    if _made_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)


# Gunicorn answers a request it cannot parse (a malformed request line, header or chunk; too
# many or too large headers) itself, with an HTML page. The API's contract is the JSON error
# envelope for every failure, with the statuses of its error table: a client error is a 400
# VALIDATION_ERROR naming what gunicorn found, anything else a 500 INTERNAL_ERROR.
def _write_json_error(sock, status_int, reason, mesg):
    import json

    if 400 <= status_int < 500 or status_int == 501:
        status, reason, body = 400, "Bad Request", {"code": "VALIDATION_ERROR", "message": f"request: {mesg or reason}"}
    else:
        status, reason, body = 500, "Internal Server Error", {"code": "INTERNAL_ERROR", "message": "An unexpected error occurred."}
    payload = json.dumps({"error": body}, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + payload)


gunicorn_util.write_error = _write_json_error


def pre_request(worker, req):
    """Each request first lets the worker's other connections run (gevent's sleep(0)). A
    keep-alive connection whose next request has arrived by the time its response is written
    is read again without waiting, so, without this, one client that answers quickly was
    served request after request while the others' requests sat unread, for seconds under a
    few dozen connections; now each connection ready at once gets a turn."""
    import gevent

    gevent.sleep(0)
