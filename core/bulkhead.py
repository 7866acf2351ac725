"""Admission of a request into a web process: a per-space bulkhead in front of the
process's request slots (config/wsgi.py).

A process runs WEB_CONCURRENT_REQUESTS requests through Django at once. Without more, a
space that sends many requests at a time fills every slot, and the requests of every other
space queue behind its. The bulkhead gives each space a compartment of at most
WEB_SPACE_CONCURRENT_REQUESTS of the slots (fewer than all): a space's further requests
wait in its own compartment, not in the queue for the slots, so another space's request
waits for at most the compartments' worth of requests ahead of it.

The space is known before Django runs from the API key (a digest of the Authorization
header), once this process has authenticated that key (the request middleware puts the space's id in the WSGI
environ: SPACE_ID). API requests whose space is not known yet (a key's first request here,
a forged key, no key) share one compartment; the back office has its own, and so do the
other pages (the app's pages, the API reference): a flood of forged keys cannot crowd out
spaces already known, staff, or the people answering polls.

Within the pages' compartment each poll's pages (`/invite/{pollId}...`, `/poll/{pollId}...`)
first wait in a compartment of their own, of at most `per_poll` slots (half the pages'):
the visitors of one poll never take every slot of the pages, and another poll's visitor
waits behind at most that many of theirs. A poll's compartment is made on its first request
and dropped when no request holds or waits for it, so made-up poll ids cost no memory.
"""

import hashlib
import threading
from collections import deque
from contextlib import contextmanager

import gevent.event
from django.conf import settings
from gevent.monkey import get_original, is_module_patched

#: Set in the WSGI environ by the request middleware: the space the request was
#: authenticated as (None if it was not).
SPACE_ID = "service.space_id"

#: Set in the WSGI environ by a view or middleware: seconds config/wsgi.py waits, holding no
#: slot and no compartment, before it hands the response over (a refusal that a client
#: looping on the service would otherwise get back at once, to ask again).
ANSWER_DELAY = "service.answer_delay"

UNKNOWN = "unknown"
BACK_OFFICE = "back office"
PAGES = "pages"
POLL_PAGES = "pages of poll "  # + the poll's id: one poll's pages, inside PAGES
_MAX_KEYS = 100_000  # keys remembered per process (a few MB at most)
_local = threading.local()  # per greenlet under gevent: the request's process slots

_os_lock = get_original("_thread", "allocate_lock")  # never yields to gevent's hub


class FifoSemaphore:
    """A bounded semaphore whose waiters are served in arrival order. A release hands its
    slot straight to the longest waiter, and an arrival takes a free slot only when nobody
    waits: no request is passed by those that came after it. (gevent's semaphore and
    threading's let an arrival take a slot just released before the waiter it was meant for
    runs: under a steady load a waiter could be passed again and again, for seconds.)

    Waits are cooperative in a gevent worker (gevent's Event), a thread's otherwise. The
    state is guarded by an operating-system lock held only for a few list operations,
    never across a wait, so it never blocks a greenlet's hub."""

    def __init__(self, value: int):
        self._value = self._free = value
        self._waiters: deque = deque()
        self._lock = _os_lock()
        self._event = gevent.event.Event if is_module_patched("threading") else threading.Event

    def acquire(self, timeout: float | None = None) -> bool:
        """Take a slot, waiting at most `timeout` seconds (None: no bound); whether it did."""
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            if timeout is not None and timeout <= 0:
                return False
            waiter = self._event()
            self._waiters.append(waiter)
        try:
            if waiter.wait(timeout):
                return True
        except BaseException:  # the greenlet killed: a slot handed over meanwhile passes on
            if not self._withdraw(waiter):
                self.release()
            raise
        return not self._withdraw(waiter)  # a slot handed over as the wait ran out is this one's

    def _withdraw(self, waiter) -> bool:
        """Take a waiter out of the queue; False if it was handed a slot first."""
        with self._lock:
            if waiter.is_set():
                return False
            self._waiters.remove(waiter)
            return True

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # the slot passes on; the count stays
            elif self._free < self._value:
                self._free += 1
            else:
                raise ValueError("semaphore released too many times")


class Bulkhead:
    def __init__(self, per_compartment: int, per_poll: int | None = None):
        self.per_compartment = per_compartment
        self.per_poll = per_poll or max(1, per_compartment // 2)
        self._lock = threading.Lock()
        self._compartments: dict[str, FifoSemaphore] = {}
        self._poll_users: dict[str, int] = {}  # requests holding or waiting for a poll's compartment
        self._space_of_key: dict[bytes, str] = {}

    def compartment(self, environ) -> str:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/admin/"):
            return BACK_OFFICE
        if not path.startswith("/v1/"):
            return PAGES
        return self._space_of_key.get(_key_digest(environ), UNKNOWN)

    def compartments(self, environ) -> tuple[str, ...]:
        """The compartments a request waits in, outermost first: a poll's page its poll's,
        then the pages'; any other request its one `compartment`."""
        name = self.compartment(environ)
        if name == PAGES:
            path = environ.get("PATH_INFO", "")
            if path.startswith(settings.PAGE_PATH_PREFIXES):
                poll_id = path.split("/", 3)[2][:64]
                if poll_id:
                    return POLL_PAGES + poll_id, PAGES
        return (name,)

    def learn(self, environ) -> None:
        """After a request: remember the space its key was authenticated as."""
        space_id = environ.get(SPACE_ID)
        if space_id:
            digest = _key_digest(environ)
            if self._space_of_key.get(digest) != space_id:
                if len(self._space_of_key) >= _MAX_KEYS:
                    self._space_of_key.clear()
                self._space_of_key[digest] = space_id

    def acquire(self, name: str, timeout: float | None) -> bool:
        of_poll = name.startswith(POLL_PAGES)
        with self._lock:
            semaphore = self._compartments.get(name)
            if semaphore is None:
                size = self.per_poll if of_poll else self.per_compartment
                semaphore = self._compartments[name] = FifoSemaphore(size)
            if of_poll:
                self._poll_users[name] = self._poll_users.get(name, 0) + 1
        if semaphore.acquire(timeout=timeout):
            return True
        if of_poll:
            self._leave(name)
        return False

    def release(self, name: str) -> None:
        self._compartments[name].release()
        if name.startswith(POLL_PAGES):
            self._leave(name)

    def _leave(self, name: str) -> None:
        """A request is done with a poll's compartment: the last one drops it."""
        with self._lock:
            self._poll_users[name] -= 1
            if not self._poll_users[name]:
                del self._poll_users[name], self._compartments[name]


def _key_digest(environ) -> bytes:
    return hashlib.sha256(environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")).digest()


@contextmanager
def holding(slots: FifoSemaphore):
    """config/wsgi.py: the request runs holding one of these slots (see `slot_released`)."""
    _local.slots = slots
    try:
        yield
    finally:
        _local.slots = None


@contextmanager
def slot_released():
    """Give the request's slot to others while it waits on the outside world (a DNS
    lookup), and take one again after. Only where no transaction is open: with SQLite a
    transaction holds the database's write lock. Outside a web request: nothing to do."""
    slots = getattr(_local, "slots", None)
    if slots is None:
        yield
        return
    slots.release()
    try:
        yield
    finally:
        slots.acquire()  # each holder is bounded by its own deadline
