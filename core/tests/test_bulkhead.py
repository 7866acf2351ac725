"""The per-space bulkhead in front of a web process's request slots (core/bulkhead.py):
which compartment a request waits in, and each compartment's cap. The flood it exists for
is tested over gunicorn in tests/test_availability.py."""

import subprocess
import sys
import textwrap
from pathlib import Path

from core.bulkhead import BACK_OFFICE, PAGES, POLL_PAGES, SPACE_ID, UNKNOWN, Bulkhead, FifoSemaphore

BASE_DIR = Path(__file__).resolve().parents[2]


def environ(path: str, key: str | None = None, space_id: str | None = None) -> dict:
    env = {"PATH_INFO": path}
    if key:
        env["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    if space_id:
        env[SPACE_ID] = space_id
    return env


def test_a_key_counts_for_its_space_once_a_request_authenticated_it():
    bulkhead = Bulkhead(2)
    assert bulkhead.compartment(environ("/v1/polls", "sk_a")) == UNKNOWN
    bulkhead.learn(environ("/v1/polls", "sk_a", space_id="space1"))
    bulkhead.learn(environ("/v1/polls", "sk_forged"))  # not authenticated: nothing learned
    assert bulkhead.compartment(environ("/v1/polls", "sk_a")) == "space1"
    assert bulkhead.compartment(environ("/v1/webhooks", "sk_a")) == "space1"
    assert bulkhead.compartment(environ("/v1/polls", "sk_forged")) == UNKNOWN
    assert bulkhead.compartment(environ("/v1/polls")) == UNKNOWN
    # Staff and the app's pages never wait behind API keys.
    assert bulkhead.compartment(environ("/admin/login/", "sk_a")) == BACK_OFFICE
    assert bulkhead.compartment(environ("/p/abc", "sk_a")) == PAGES


def test_each_compartment_takes_at_most_its_cap():
    bulkhead = Bulkhead(2)
    assert bulkhead.acquire("space1", timeout=0) and bulkhead.acquire("space1", timeout=0)
    assert not bulkhead.acquire("space1", timeout=0.01)  # the third waits (here: gives up)
    assert bulkhead.acquire("space2", timeout=0)  # another space is not held up
    bulkhead.release("space1")
    assert bulkhead.acquire("space1", timeout=0)


def run_in_a_gevent_worker(script: str) -> None:
    """`script` monkey-patched, as gunicorn's gevent workers are; it prints ok at its end."""
    script = "from gevent import monkey; monkey.patch_all()\n" + textwrap.dedent(script)
    out = subprocess.run([sys.executable, "-c", script], cwd=BASE_DIR, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_in_a_gevent_worker_the_slots_wait_cooperatively():
    """A wait lets the other greenlets run, and the slots stay bounded."""
    run_in_a_gevent_worker("""
        import gevent
        from core.bulkhead import Bulkhead, FifoSemaphore
        slots = FifoSemaphore(1)
        bulkhead = Bulkhead(1)
        assert bulkhead.acquire("space1", timeout=0) and not bulkhead.acquire("space1", timeout=0.01)
        assert slots.acquire(timeout=0)
        ran = []
        waiter = gevent.spawn(lambda: ran.append(slots.acquire(timeout=5)))
        gevent.spawn(lambda: ran.append("other")).join()  # runs while the waiter waits
        slots.release()
        waiter.join()
        assert ran == ["other", True], ran
        slots.release()
        try:
            slots.release()  # bounded: one release too many is an error
        except ValueError:
            print("ok")
    """)


def test_in_a_gevent_worker_waiters_are_served_in_arrival_order():
    """A released slot goes to the longest waiter, never to a request that arrives after
    the release, before that waiter runs again (gevent's own semaphore gave it to the
    arrival: under a steady load a waiter was passed again and again)."""
    run_in_a_gevent_worker("""
        import gevent
        from core.bulkhead import FifoSemaphore
        slots = FifoSemaphore(1)
        assert slots.acquire(timeout=0)
        served = []

        def request(name):
            assert slots.acquire(timeout=5)
            served.append(name)
            gevent.sleep(0)  # others get to run, and to arrive, while it holds the slot
            slots.release()

        waiting = [gevent.spawn(request, name) for name in ("first", "second", "third")]
        gevent.sleep(0)  # all three wait, in that order
        slots.release()
        assert not slots.acquire(timeout=0)  # an arrival after the release: the slot is the first's
        late = gevent.spawn(request, "late")
        gevent.joinall([*waiting, late], raise_error=True)
        assert served == ["first", "second", "third", "late"], served
        assert slots.acquire(timeout=0)  # every slot given back
        slots.release()
        print("ok")
    """)


def test_a_waiter_that_gives_up_leaves_the_queue():
    """A waiter whose deadline passes is no longer served: the next release frees a slot
    (for threads, as in the tests' own server)."""
    slots = FifoSemaphore(1)
    assert slots.acquire(timeout=0)
    assert not slots.acquire(timeout=0.01)
    slots.release()
    assert slots.acquire(timeout=0)
    slots.release()


def test_a_polls_pages_wait_in_their_own_compartment_inside_the_pages():
    bulkhead = Bulkhead(2)
    assert bulkhead.per_poll == 1
    assert bulkhead.compartments(environ("/invite/abc")) == (POLL_PAGES + "abc", PAGES)
    assert bulkhead.compartments(environ("/invite/abc/edit/token")) == (POLL_PAGES + "abc", PAGES)
    assert bulkhead.compartments(environ("/poll/abc/sign-in")) == (POLL_PAGES + "abc", PAGES)
    assert bulkhead.compartments(environ("/invite/")) == (PAGES,)
    assert bulkhead.compartments(environ("/static/pages/app.css")) == (PAGES,)
    assert bulkhead.compartments(environ("/v1/polls", "sk_a")) == (UNKNOWN,)
    assert bulkhead.compartments(environ("/admin/")) == (BACK_OFFICE,)


def test_one_polls_visitors_never_take_every_slot_of_the_pages():
    """What config/wsgi.py does for each page request: its poll's compartment, then the
    pages'. The visitors of a crowded poll hold at most `per_poll` of the pages' slots and
    the rest of them wait in their poll's compartment, so another poll's visitor finds a
    slot of the pages free."""
    bulkhead = Bulkhead(2)
    crowded, other = POLL_PAGES + "crowded", POLL_PAGES + "other"
    assert bulkhead.acquire(crowded, timeout=0) and bulkhead.acquire(PAGES, timeout=0)
    assert not bulkhead.acquire(crowded, timeout=0.01)  # the crowd's next visitor waits in its poll's
    assert bulkhead.acquire(other, timeout=0) and bulkhead.acquire(PAGES, timeout=0)  # another poll's gets in
    bulkhead.release(PAGES)
    bulkhead.release(other)
    bulkhead.release(PAGES)
    bulkhead.release(crowded)
    assert bulkhead.acquire(crowded, timeout=0)
    bulkhead.release(crowded)


def test_a_polls_compartment_is_dropped_when_no_request_holds_or_waits_for_it():
    bulkhead = Bulkhead(2)
    for n in range(1000):  # made-up poll ids
        name = POLL_PAGES + f"made-up-{n}"
        assert bulkhead.acquire(name, timeout=0)
        assert not bulkhead.acquire(name, timeout=0)  # a waiter that gave up
        bulkhead.release(name)
    assert bulkhead.acquire(UNKNOWN, timeout=0)
    bulkhead.release(UNKNOWN)
    assert set(bulkhead._compartments) == {UNKNOWN} and not bulkhead._poll_users
