"""The outbox's run: one connection to the mail server for the e-mails that are due (a new
one after a failure), and a run that ends after a few failures in a row, leaving the rest due
(never lost: the next run sends them)."""

import socketserver
import threading

import pytest
from django.core.mail.backends.base import BaseEmailBackend

from core.tasks import run_job
from pages import outbox
from pages.models import Mail

pytestmark = pytest.mark.django_db


class MailServer(BaseEmailBackend):
    """A mail server that refuses the addresses in `refused` (every one with "*")."""

    opened: list[int] = []
    sent: list[str] = []
    refused: set[str] = set()

    def open(self):
        MailServer.opened.append(id(self))
        return True

    def send_messages(self, messages):
        for message in messages:
            if "*" in self.refused or message.to[0] in self.refused:
                raise ConnectionResetError("the server hung up")
            MailServer.sent.append(message.to[0])
        return len(messages)


@pytest.fixture
def server(settings):
    settings.EMAIL_BACKEND = f"{__name__}.MailServer"
    MailServer.opened, MailServer.sent, MailServer.refused = [], [], set()
    return MailServer


def queue(*addresses: str) -> None:
    for address in addresses:
        outbox.queue(to=address, subject="Hello", text="Hello", html="<p>Hello</p>", poll_id="p")


def test_one_connection_per_run_and_a_new_one_after_a_failure(server):
    queue("a@example.com", "b@example.com", "bad@example.com", "c@example.com")
    server.refused = {"bad@example.com"}
    run_job("pages.send-mail")
    assert server.sent == ["a@example.com", "b@example.com", "c@example.com"]
    assert len(server.opened) == 2  # the first, and one after the failure
    bad = Mail.objects.get(to="bad@example.com")
    assert (bad.attempts, bad.sent_at) == (1, None)


def test_a_server_that_is_down_ends_the_run_and_the_rest_waits(server, caplog):
    queue(*(f"p{number}@example.com" for number in range(5)))
    server.refused = {"*"}
    run_job("pages.send-mail")
    tried = sorted(Mail.objects.values_list("attempts", flat=True))
    assert tried == [0, 0, 1, 1, 1] and caplog.text.count("e-mail not sent; retried later") == outbox.STOP_AFTER
    server.refused = set()
    run_job("pages.send-mail")
    assert len(server.sent) == 2  # those never tried; the others when their wait is over
    assert Mail.objects.filter(sent_at__isnull=True).count() == 3


class SMTPHandler(socketserver.StreamRequestHandler):
    """Enough of an SMTP server (RFC 5321) for Django's SMTP backend: each connection counted,
    each message's recipient kept, RCPT refused for `refused` addresses."""

    def handle(self):
        server = self.server
        server.connections += 1
        self.reply("220 localhost ESMTP")
        while line := self.rfile.readline():
            verb = line.decode().strip().split(" ", 1)[0].split(":", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250 localhost")
            elif verb == "RCPT":
                address = line.decode().split("<", 1)[1].split(">", 1)[0]
                if address in server.refused:
                    self.reply("550 no such mailbox")
                else:
                    server.recipients.append(address)
                    self.reply("250 OK")
            elif verb == "DATA":
                self.reply("354 go on")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                self.reply("250 queued")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:  # MAIL, RSET, NOOP
                self.reply("250 OK")

    def reply(self, text: str) -> None:
        self.wfile.write(text.encode() + b"\r\n")


@pytest.fixture
def smtp_server(settings):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SMTPHandler)
    server.daemon_threads = True
    server.connections, server.recipients, server.refused = 0, [], set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.server_address[1]
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield server
    server.shutdown()
    server.server_close()


def test_over_smtp_one_connection_carries_the_run(smtp_server):
    queue("a@example.com", "b@example.com", "bad@example.com", "c@example.com")
    smtp_server.refused = {"bad@example.com"}
    run_job("pages.send-mail")
    assert smtp_server.recipients == ["a@example.com", "b@example.com", "c@example.com"]
    assert smtp_server.connections == 2  # a refused recipient: a new connection for the rest
    assert Mail.objects.get(to="bad@example.com").attempts == 1
