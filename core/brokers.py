"""Redis addresses as Celery (kombu) and redis-py each write them.

The two agree on `redis://` and `rediss://`, not on a Unix socket: redis-py reads
`unix:///path/redis.sock?db=N`, kombu `redis+socket:///path/redis.sock?virtual_host=N` and
knows no `unix://` (`No such transport: unix`, so that every enqueue failed). REDIS_URL is
redis-py's (the rate-limit counters); the Celery broker made from it is kombu's; the
service's own commands to the broker (the fan-out's marks, the broker claim) are redis-py's
again. Imported by the settings: the standard library only.
"""

from urllib.parse import parse_qsl, urlencode, urlsplit

_SOCKET = "redis+socket"


def celery_broker_url(redis_url: str) -> str:
    """Celery's URL for the Redis at `redis_url` (redis-py's form)."""
    return _renamed(redis_url, "unix", _SOCKET, "db", "virtual_host")


def redis_url(broker_url: str) -> str | None:
    """redis-py's URL for the Celery broker at `broker_url`; None if it is not Redis."""
    scheme = broker_url.partition("://")[0]
    if scheme in ("redis", "rediss", "unix"):
        return broker_url
    if scheme == _SOCKET:
        return _renamed(broker_url, _SOCKET, "unix", "virtual_host", "db")
    return None


def _renamed(url: str, scheme: str, new_scheme: str, parameter: str, new_parameter: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != scheme:
        return url
    query = urlencode([(new_parameter if name == parameter else name, value)
                       for name, value in parse_qsl(parts.query, keep_blank_values=True)])
    # By hand: urlunsplit drops the `//` of a scheme it does not know when there is no host.
    return f"{new_scheme}://{parts.netloc}{parts.path}{'?' if query else ''}{query}"
