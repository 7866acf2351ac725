"""core.redis_commands against the real Redis: replies, the script's reload, and the promise
that no connection is lent again with a reply left unread on it."""

import os
import time
import uuid

import pytest
import redis

from core.redis_commands import Commands, Script

URL = "redis://127.0.0.1:6379/2"


@pytest.fixture
def key():
    name = f"test:redis-commands:{uuid.uuid4().hex}"
    yield name
    redis.Redis.from_url(URL).delete(name)


def test_replies_come_back_and_one_connection_serves_commands_in_turn(key):
    commands = Commands(URL, timeout=1)
    assert commands.run("SET", key, "v", "NX", "EX", 60) == b"OK"
    assert commands.run("SET", key, "w", "NX", "EX", 60) is None
    assert commands.run("GET", key) == b"v"
    assert len(commands._idle) == 1


def test_a_script_missing_on_the_server_is_run_by_its_text_and_then_by_its_digest(key):
    commands = Commands(URL, timeout=1)
    script = Script(f"return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1]) -- {key}")  # new to the server
    assert redis.Redis.from_url(URL).script_exists(script.sha) == [False]
    assert commands.script(script, [key], [10]) == 11
    assert redis.Redis.from_url(URL).script_exists(script.sha) == [True]
    assert commands.script(script, [key], [10]) == 12


def test_a_reply_read_later_holds_its_connection_until_then_and_is_read_once(key):
    commands = Commands(URL, timeout=1)
    commands.run("SET", key, "v")
    script = Script(f"return redis.call('GET', KEYS[1]) .. ARGV[1] -- {key} later")  # new to the server
    pending, sent = commands.send("GET", key), commands.send_script(script, [key], ["!"])
    assert commands._idle == []  # both connections are their replies' until read
    assert commands.run("APPEND", key, "w") == 2  # a third connection meanwhile
    assert (pending.read(), sent.read()) == (b"v", b"vw!")  # in any order; the script by its text
    assert len(commands._idle) == 3
    with pytest.raises(RuntimeError, match="read already"):
        pending.read()


def test_an_error_reply_is_raised_and_leaves_the_connection_usable(key):
    commands = Commands(URL, timeout=1)
    commands.run("SET", key, "not a hash")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        commands.run("HGET", key, "field")
    assert len(commands._idle) == 1
    assert commands.run("GET", key) == b"not a hash"


def test_a_reply_that_did_not_come_in_time_is_never_read_by_a_later_command(key):
    commands = Commands(URL, timeout=0.2)
    commands.run("SET", key, "value")
    with pytest.raises(redis.TimeoutError):
        commands.run("BLPOP", f"{key}:empty", 0.5)  # Redis answers (nil) after 0.5 s
    assert commands._idle == []  # that connection was closed, not kept
    time.sleep(0.6)  # on purpose: past the BLPOP's 0.5 s, when a kept connection would hold its late reply
    assert commands.run("GET", key) == b"value"


def test_a_connection_the_server_closed_while_idle_is_replaced_before_anything_is_sent(key):
    commands = Commands(URL, timeout=1)
    commands.run("CLIENT", "SETNAME", "idle-victim")
    killer = redis.Redis.from_url(URL)
    victim_id = next(c["id"] for c in killer.client_list() if c["name"] == "idle-victim")
    assert killer.client_kill_filter(_id=victim_id) == 1
    assert commands.run("INCR", key) == 1  # served, on a new connection
    assert commands.run("INCR", key) == 2  # counted once each: nothing was sent on the dead one


def test_a_forked_child_makes_connections_of_its_own(key):
    commands = Commands(URL, timeout=1)
    commands.run("INCR", key)
    parent_connection = commands._idle[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its pool starts empty
        try:
            ok = commands._idle == [] and commands.run("INCR", key) == 2 and commands._idle[0] is not parent_connection
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert commands.run("INCR", key) == 3  # the parent's connection still answers the parent
    assert commands._idle == [parent_connection]
