"""The operating system's own `sleep` and readiness check, even in a gevent worker, where
gevent's monkey patching makes them cooperative: for the checks that must never wait or
yield to the hub (gevent's `select` and `poll` switch to it even with a zero timeout) and
for waits shorter than gevent's timers can keep (libev wakes in whole milliseconds, so a
cooperative sleep lasts at least a millisecond). Both block the whole process while they
run.
"""

import select

from gevent.monkey import get_original

sleep = get_original("time", "sleep")
_poll = get_original("select", "poll")


def readable(fd: int) -> bool:
    """Whether `fd` has something to read at this instant, or was closed (a hang-up or an
    invalid descriptor counts as readable). Never waits."""
    poller = _poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
