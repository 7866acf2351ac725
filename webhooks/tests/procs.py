"""Helper processes for the multi-process webhook tests (not a test module).

    python -m webhooks.tests.procs seed URL EVENTS ENDPOINTS
    python -m webhooks.tests.procs work     # prints "ready", waits for a line on stdin,
                                            # then fans out and claims until nothing is left
    python -m webhooks.tests.procs state
    python -m webhooks.tests.procs attack SILENT_URL HOOK_URL ENDPOINTS PINGS [own]
    python -m webhooks.tests.procs record SPACE EVENTS GAP

Each prints one JSON document. DATABASE_URL chooses the database, as for the service.
"""

import json
import os
import sys
import time

import django


def seed(url: str, events: str, endpoints: str) -> dict:
    from spaces import services as space_services
    from webhooks import services

    space = space_services.create_space(name="Procs", owner_email="procs@example.com", pro=True)
    made = [services.create_endpoint(space=space, url=f"{url}{n}")[0].id for n in range(int(endpoints))]
    recorded = [
        services.record_event(space_id=space.id, type="poll.created", poll_id=f"poll{n:08d}").id for n in range(int(events))
    ]
    return {"space": space.id, "endpoints": made, "events": recorded}


def work() -> dict:
    """Fan out and claim (without sending) until there is nothing left, starting when
    told to, at the same time as the other workers, so that they contend."""
    from webhooks import selectors, services
    from webhooks.models import Event

    print("ready", flush=True)
    sys.stdin.readline()
    fanned, claimed = [], []
    while True:
        new = services.fan_out(limit=7)
        claims = services.claim_due(limit=5)
        fanned += new
        claimed += [claim.delivery.pk for claim in claims]
        if not new and not claims and not Event.objects.filter(dispatched_at__isnull=True).exists() \
                and not selectors.due_delivery_count():
            return {"fanned": fanned, "claimed": claimed}
        time.sleep(0.005)  # let the others in: a worker that sends takes far longer


def state() -> dict:
    from webhooks.models import Attempt, Delivery

    return {
        "deliveries": list(Delivery.objects.order_by("created_at").values("id", "status", "attempts", "event_id")),
        "attempts": list(
            Attempt.objects.order_by("started_at", "finished_at").values("id", "delivery_id", "succeeded", "error")
        ),
    }


def attack(silent_url: str, hook_url: str, endpoints: str, pings: str, whose: str = "other") -> dict:
    """Space A with ENDPOINTS endpoints at SILENT_URL (a receiver that never answers), PINGS
    test pings queued to each; space B (`own`: space A itself) with one endpoint at
    HOOK_URL. Returns B's id."""
    from spaces import services as space_services
    from webhooks import services

    attacker = space_services.create_space(name="Attacker", owner_email="a@example.com", pro=True)
    for n in range(int(endpoints)):
        endpoint = services.create_endpoint(space=attacker, url=f"{silent_url}{n}")[0]
        for _ in range(int(pings)):
            services.queue_ping(endpoint=endpoint)
    other = attacker if whose == "own" else space_services.create_space(name="Other", owner_email="b@example.com",
                                                                         pro=True)
    services.create_endpoint(space=other, url=hook_url)
    return {"space": other.id}


def record(space_id: str, events: str, gap: str) -> list:
    """Record EVENTS events of the space, GAP seconds apart: [event id, time.time() before
    the write] each."""
    from webhooks import services

    recorded = []
    for n in range(int(events)):
        started = time.time()
        event = services.record_event(space_id=space_id, type="poll.created", poll_id=f"fair{n:08d}")
        recorded.append([event.id, started])
        time.sleep(float(gap))
    return recorded


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    django.setup()
    command, *args = sys.argv[1:]
    print(json.dumps({"seed": seed, "work": work, "state": state, "attack": attack, "record": record}[command](*args)))
