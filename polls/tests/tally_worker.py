"""A worker process of polls/tests/test_tallies.py (`python -m polls.tests.tally_worker
POLL_ID SEED`): THREADS threads, each answering the poll ROUNDS times and changing or
removing one of its answers after each, released together with the other processes
(tests.hammer.release_together); prints how many rounds it finished."""

import json
import os
import random
import sys
import threading

from tests.hammer import start_when_told

PROCESSES, THREADS, ROUNDS = 3, 4, 6
KINDS = ["yes", "ifNeedBe", "no", None]


def _work(poll_id: str, seed: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    from django.db import connection

    from polls import services
    from polls.models import Option, Participant, Poll

    poll = Poll.objects.get(pk=poll_id)
    options = list(Option.objects.filter(poll=poll).values_list("pk", flat=True))
    go = threading.Barrier(THREADS + 1)
    finished = []

    def work(n: int):
        rng = random.Random(seed * 100 + n)
        mine = []
        go.wait()
        try:
            for round_number in range(ROUNDS):
                votes = {option: rng.choice(KINDS) for option in options}
                mine.append(services.create_response(poll=poll, name=f"P{seed}-{n}-{round_number}", votes=votes))
                target = rng.choice(mine)
                if rng.random() < 0.5:
                    services.update_response(participant=Participant.objects.get(pk=target.pk), votes={
                        option: rng.choice(KINDS) for option in rng.sample(options, 3)
                    })
                elif len(mine) > 1:
                    mine.remove(target)
                    services.delete_response(participant=target)
            finished.append(1)
        finally:
            connection.close()

    start_when_told([threading.Thread(target=work, args=(n,)) for n in range(THREADS)], go)
    print(json.dumps(len(finished) * ROUNDS), flush=True)


if __name__ == "__main__":
    _work(sys.argv[1], int(sys.argv[2]))
