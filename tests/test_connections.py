"""Django's connections in their thread's own storage, without asgiref's detour (core/connections.py)."""

import threading

from asgiref.local import Local
from django.db import connection, connections


def test_connections_are_looked_up_in_a_plain_thread_local():
    # An asgiref upgrade that renames its storage would quietly bring the detour back.
    assert not isinstance(connections._connections, Local)
    assert isinstance(connections._connections, threading.local)


def test_each_thread_still_has_its_own_connection(db):
    mine = connections["default"]
    seen = []
    thread = threading.Thread(target=lambda: seen.append((connections["default"], connection.alias)))
    thread.start()
    thread.join()
    assert seen[0][0] is not mine and seen[0][1] == "default"
    assert connections["default"] is mine
