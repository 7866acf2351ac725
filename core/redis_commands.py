"""One Redis command at a time, for the hot paths: the rate limiter's script on every API
request and the queued fan-out's mark on every write (Celery).

`Commands` sends a command on a connection of redis-py's own (its parser, timeouts, TLS,
Unix sockets, AUTH and SELECT on connect), taken from a pool of this object's, and reads
the reply, at once (`run`, `script`) or when the caller asks for it (`send`,
`send_script`: the limiter's count runs while a create validates its body). redis-py's
client wraps each command in its retry, event and metrics layers, and its pool polls each
connection it lends for unread data; under gevent that poll goes through gevent's
emulation of `poll`. Here a command is a write and a read on the connection, without those
layers.

The promise redis-py's pool keeps, kept here too: a connection is lent again only after its
last reply was read whole. Any failure while a command is out (a timeout, a connection
reset, the request's deadline raised inside the read) closes that connection instead of
putting it back, so no later command can read another's reply. An error reply
(`ResponseError`) was read whole and leaves the connection usable. An idle connection the
server closed (a restart) or wrote to reads as readable: it is closed and another made,
before anything is sent on it, so the first command after a Redis restart is served. The
command itself is never sent twice: a command whose reply was lost may have run.
"""

import functools
import os
from collections.abc import Sequence
from hashlib import sha1

import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError
from redis.retry import Retry

from core import unpatched

MAX_IDLE = 16  # connections kept per pool; more in use at once are closed when returned


class Commands:
    def __init__(self, url: str, *, timeout: float):
        # redis-py reads the URL (scheme, host or socket path, database, password, TLS); its
        # pool is used for that only, never to lend connections.
        pool = redis.ConnectionPool.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
        )
        self._connection_class = pool.connection_class
        self._connection_kwargs = pool.connection_kwargs
        self._idle: list = []  # last in, first out: the fewest connections stay warm
        os.register_at_fork(after_in_child=self._idle.clear)  # the parent's sockets stay the parent's

    def run(self, *args):
        """The reply of one command; redis-py's exceptions on failure."""
        return self.send(*args).read()

    def send(self, *args) -> "Reply":
        """Sends one command; its reply is read later (`Reply.read`), so that the caller's own
        work runs while the server answers. The connection is the reply's until it is read:
        read it on every path (a reply never read keeps its connection out of the pool)."""
        return Reply(self, self._sent(args))

    def script(self, script: "Script", keys: Sequence, args: Sequence):
        """Run a Lua script by its digest; when the server does not have it (a new or
        restarted Redis), by its text, which also loads it for the next calls."""
        return self.send_script(script, keys, args).read()

    def send_script(self, script: "Script", keys: Sequence, args: Sequence) -> "Reply":
        """`script`, its reply read later (`send`)."""
        return Reply(self, self._sent(("EVALSHA", script.sha, len(keys), *keys, *args)),
                     by_text=("EVAL", script.text, len(keys), *keys, *args))

    def _sent(self, args):
        """A connection on which the command `args` was sent."""
        connection = self._lend()
        try:
            connection.send_packed_command(connection.pack_command(*args), check_health=False)
        except BaseException:
            connection.disconnect()  # part of the command may have gone: never lent again
            raise
        return connection

    def _lend(self):
        while self._idle:
            try:
                connection = self._idle.pop()
            except IndexError:  # another thread took the last one
                break
            if not _readable(connection):
                return connection
            connection.disconnect()  # closed by the server, or holding something unasked for
        return self._connection_class(**self._connection_kwargs)  # connects on its first command

    def _give_back(self, connection) -> None:
        if len(self._idle) < MAX_IDLE:
            self._idle.append(connection)
        else:
            connection.disconnect()


@functools.cache
def shared(url: str, timeout: float) -> Commands:
    """The process's one `Commands` for this server and timeout, whoever sends on it (the
    limiter's script, the fan-out's marks): one pool of warm connections."""
    return Commands(url, timeout=timeout)


class Reply:
    """A command sent (`Commands.send`), whose reply is read once."""

    __slots__ = ("_commands", "_connection", "_by_text")

    def __init__(self, commands: Commands, connection, by_text: tuple | None = None):
        self._commands, self._connection, self._by_text = commands, connection, by_text

    def read(self):
        """The reply; redis-py's exceptions on failure. A script the server did not have
        (`send_script`) runs again by its text."""
        connection, self._connection = self._connection, None
        if connection is None:
            raise RuntimeError("this reply was read already")
        try:
            reply = connection.read_response()
        except redis.ResponseError as error:
            self._commands._give_back(connection)  # an error reply, read whole
            if isinstance(error, NoScriptError) and self._by_text is not None:
                return self._commands.run(*self._by_text)
            raise
        except BaseException:
            connection.disconnect()  # a reply may still be on its way: never lent again
            raise
        self._commands._give_back(connection)
        return reply


class Script:
    """A Lua script and its digest (what `EVALSHA` names it by)."""

    def __init__(self, text: str):
        self.text = text
        self.sha = sha1(text.encode()).hexdigest()


def _readable(connection) -> bool:
    sock = connection._sock
    if sock is None:
        return False  # not connected: it connects when used
    return unpatched.readable(sock.fileno())
