import logging
import os

from celery import Celery, signals

from core import brokers

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("pollservice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.conf.imports = ("core.tasks",)


@signals.setup_logging.connect
def use_the_service_log(**_):
    """The worker and beat log like the web process (settings.LOGGING, which django.setup()
    applied when Celery loaded the project: one JSON object per line, at LOG_LEVEL) instead
    of in Celery's own format: a connected receiver stops Celery from configuring logging
    (and `--loglevel` with it; the Procfile passes LOG_LEVEL to both)."""
    if not logging.getLogger().handlers:  # not configured yet (django.setup() not run)
        from logging.config import dictConfig

        from django.conf import settings

        dictConfig(settings.LOGGING)


# The request that enqueued a task (its request_id and trace_id) follows it: the task's log
# lines carry the same ids as the request's.
_TASK_CONTEXT = "log_context"
_bound: dict[str, object] = {}


@signals.before_task_publish.connect
def carry_log_context(headers=None, **_):
    from core.logging import bound

    context = bound()
    if context and headers is not None:
        headers[_TASK_CONTEXT] = context


@signals.task_prerun.connect
def bind_log_context(task_id=None, task=None, **_):
    from core.logging import bind

    request = task.request
    context = getattr(request, _TASK_CONTEXT, None) or (request.headers or {}).get(_TASK_CONTEXT) or {}
    allowed = {name: str(value) for name, value in context.items() if name in ("request_id", "trace_id")}
    _bound[task_id] = bind(**allowed, task_id=task_id)


@signals.task_postrun.connect
def unbind_log_context(task_id=None, **_):
    from core.logging import unbind

    token = _bound.pop(task_id, None)
    if token is not None:
        unbind(token)


def _return_database_connections() -> None:
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()  # back to the process's pool


@signals.task_prerun.connect
@signals.task_postrun.connect
def return_database_connections(task=None, **_):
    """Each task takes its connections from the process's pool and gives them back when it
    ends, as a web request does (CONN_MAX_AGE = 0): the pool checks a connection before it
    lends it again, so a task never gets one the server dropped meanwhile. Celery's Django
    fixup would close the pool itself around every task (settings.CELERY_DB_REUSE_MAX). A
    task run eagerly (inside the caller's request or transaction) keeps the caller's."""
    if not getattr(task.request, "is_eager", False):
        _return_database_connections()


@signals.worker_init.connect
def close_database_connections_at_start(**_):
    """What the fixup does at a worker's start unless CELERY_DB_REUSE_MAX is set: no
    connection is open when the pool's processes start (a forked child closes what it
    inherited without a word to the server, and the solo pool runs in this very process)."""
    _return_database_connections()


# --- One broker, one installation ------------------------------------------------------------
BROKER_CLAIM_KEY = "pollservice:installation"
BROKER_CLAIM_SECONDS = 7 * 24 * 3600
logger = logging.getLogger("service.celery")


def installation_identity() -> str:
    """Which installation this is: its database (without credentials). The processes of one
    installation share it; two installations do not."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    engine = database["ENGINE"].rsplit(".", 1)[-1]
    return f"{engine}://{database.get('HOST') or ''}:{database.get('PORT') or ''}/{database['NAME']}"


def claim_broker(broker_url: str, prefix: str, identity: str) -> str | None:
    """Record in the Redis broker that this installation uses it; return the identity of
    another installation that recorded itself there before (None if none did)."""
    import redis

    client = redis.Redis.from_url(broker_url, socket_connect_timeout=2, socket_timeout=2)
    key = f"{prefix}{BROKER_CLAIM_KEY}"
    previous = client.get(key)
    client.set(key, identity, ex=BROKER_CLAIM_SECONDS)
    previous = previous.decode() if previous is not None else None
    return previous if previous not in (None, identity) else None


@signals.worker_ready.connect
def check_email_url(**_):
    """The worker sends the outbox's e-mails: it says once when they would go to the console."""
    from core.mailconfig import warn_if_console_unasked

    warn_if_console_unasked()


@signals.worker_ready.connect
@signals.beat_init.connect
def check_broker_is_ours(**_):
    """At worker and beat start: warn when another installation uses the same Redis broker
    database and prefix (its workers would take this installation's tasks, and ours its)."""
    from django.conf import settings

    url = brokers.redis_url(settings.CELERY_BROKER_URL)
    if url is None:
        return
    try:
        other = claim_broker(url, settings.CELERY_BROKER_PREFIX, installation_identity())
    except Exception:  # noqa: BLE001 - the broker is down: Celery reports that itself
        return
    if other:
        logger.error(
            "another installation uses this Redis database as its Celery broker: each would take the other's "
            "tasks. Give each installation its own Redis database (CELERY_BROKER_URL=redis://host:6379/N) or its "
            "own CELERY_BROKER_PREFIX", extra={"other_installation": other, "this_installation": installation_identity()},
        )
