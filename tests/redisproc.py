"""A redis-server of a test's own (nothing kept on disk), for the tests that stop it, kill
it or reach it at an address of their own."""

import shutil
import subprocess

import redis

from tests.waiting import wait_until


def start_redis(*arguments: str, client: redis.Redis) -> subprocess.Popen:
    """`redis-server *arguments`, once `client` gets its answer (within 10 seconds)."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed for this test (part of the PostgreSQL + Redis run: docs/deploy.md)"
    process = subprocess.Popen([binary, *arguments, "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(client.ping, 10, interval=0.02, ignore=(redis.ConnectionError,), message="redis-server did not start")
    except AssertionError:
        process.kill()
        raise
    return process
