"""The service's log: one JSON object per line, in the web process, `manage.py` and Celery's
worker and beat alike, and the context every line of a request (or of a task it caused)
carries: its request id and the trace id of its W3C `traceparent`."""

import json
import logging
import re
from contextvars import ContextVar
from datetime import UTC, datetime

from gunicorn import glogging

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}

# W3C Trace Context: version-traceid-parentid-flags, lowercase hex; all-zero ids are invalid.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")

#: Fields added to every line logged while they are bound (request_id, trace_id).
_context: ContextVar[dict] = ContextVar("log_context", default={})


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id of a valid `traceparent` header value, else None (the header is then
    ignored, as the recommendation says)."""
    match = _TRACEPARENT.fullmatch((traceparent or "").strip())
    if not match:
        return None
    version, trace_id, parent_id, _flags = match.groups()
    if version == "ff" or trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    return trace_id


def bind(**fields):
    """Add fields to every log line of this request, task or greenlet until `unbind(token)`;
    fields whose value is None are left out."""
    return _context.set({**_context.get(), **{k: v for k, v in fields.items() if v is not None}})


def unbind(token) -> None:
    _context.reset(token)


def bound() -> dict:
    return _context.get()


class ContextFilter(logging.Filter):
    """Adds the bound fields to each record (a field the call set itself wins)."""

    def filter(self, record):
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


def _either(patterns) -> str:
    """One group matching any of `patterns`."""
    return "(" + "|".join(f"(?:{pattern})" for pattern in patterns) + ")"


def timestamp(created: float) -> str:
    """`2026-11-23T19:35:01.123Z`: UTC, milliseconds."""
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# An e-mail address anywhere in a line (a message, a field, an exception's text).
_EMAIL = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")
# A URL's user name and password, and every query value: a webhook receiver's URL may carry
# its credentials there (`https://user:pass@host/`, `/hook?token=...`, also in an exception's text).
_USERINFO = re.compile(r"""(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@"'<>\\]+@""")
_QUERY_VALUE = re.compile(r"""([?&][^=&?#\s"'<>\\]+=)[^&#\s"'<>\\]+""")
REDACTED = "[redacted]"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, milliseconds), level, logger, message and any
    `extra` or bound fields.

    No line carries a secret, in whichever field it is: the segment after a path matching one
    of `secret_paths` (settings.LOG_SECRET_PATHS: an edit link's or a sign-in link's token),
    what follows one of `secret_prefixes` (settings.LOG_SECRET_PREFIXES: an API key's or a
    webhook secret's own prefix), every e-mail address, a URL's user name and password and
    every query value are written `[redacted]`."""

    def __init__(self, *args, secret_paths=(), secret_prefixes=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.secrets = [re.compile(_either(secret_paths) + r"""[^/\s"'?#<>\\]+""")] if secret_paths else []
        self.secrets += [re.compile(_either(secret_prefixes) + r"[A-Za-z0-9+/=_-]+")] if secret_prefixes else []

    def format(self, record):
        return self.redact(self.line(record))

    def redact(self, line: str) -> str:
        for pattern in self.secrets:
            line = pattern.sub(rf"\1{REDACTED}", line)
        if "://" in line:
            line = _USERINFO.sub(rf"\1{REDACTED}@", line)
        if "=" in line:
            line = _QUERY_VALUE.sub(rf"\1{REDACTED}", line)
        return _EMAIL.sub(REDACTED, line) if "@" in line else line

    def line(self, record) -> str:
        entry = {
            "time": timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class GunicornLogger(glogging.Logger):
    """gunicorn's logger (config/gunicorn.py) without its own access line unless one is asked
    for (`--access-logfile`): the service writes one for every request itself
    (core.api.middleware, with the request id and the space). Given a `logconfig_dict`,
    gunicorn would otherwise build its line's fields for every request and hand them to a
    logger with no handler, for nothing."""

    def _compute_access_log_enabled(self) -> bool:
        return self.cfg.accesslog is not None
