"""No secret in the logs or the metrics: a run through every API operation and every page,
refusals and failures included, logged at INFO by the service's own handler, holds none of
the API keys, webhook secrets, receiver URLs' credentials, edit tokens, sign-in and
unsubscribe tokens and e-mail addresses it made, nor do the e-mails' sending and failing;
and a web process without EMAIL_URL (whose console would print sign-in links) refuses to
start."""

import logging
import os
import re
import socket
import subprocess
import sys
import threading

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client

from conftest import Api, _routes, openapi_document
from core.tests.test_logs import Lines
from pages import jobs as page_jobs
from pages import mail
from pages import urls as page_urls
from pages import views as page_views
from pages.tests.conftest import answer, csrf
from privateapi.tests.conftest import PrivateApi
from spaces.keys import prefix_of
from tests import webproc
from tests.waiting import wait_until
from webhooks.tests.fixtures import run_worker


@pytest.fixture
def every_line(caplog, settings, monkeypatch):
    """Everything the service's log handler writes, at INFO for every logger (and e-mails
    sent before the request returns, for the test to read their links)."""
    monkeypatch.setattr(mail, "in_background", lambda function, *args: function(*args))
    caplog.set_level("INFO")
    caplog.set_level("WARNING", logger="werkzeug")  # the test's receivers are not the service
    for name in dir(django_settings):
        if name.startswith("PAGES_") and "LIMIT" in name:
            setattr(settings, name, (100_000, 1_000_000))  # the pages' throttles out of the way
    lines = Lines()
    lines.attach()
    yield lines
    for handler, stream in reversed(lines.restore):
        handler.setStream(stream)


class Covering(Api):
    """The schema-checked API client, noting each (method, path template) it called."""

    def __init__(self, key):
        super().__init__(key)
        self.called = set()

    def request(self, method, path, body=None, **kwargs):
        response = super().request(method, path, body, **kwargs)
        path = path.split("?")[0]
        self.called.update((method.lower(), template) for pattern, template, _ in _routes() if pattern.match(path))
        return response


def operations() -> set[tuple[str, str]]:
    return {(method, template) for template, methods in openapi_document()["paths"].items()
            for method in methods if method in ("get", "post", "patch", "put", "delete")}


def link(message, pattern: str) -> str:
    return re.search(pattern, message.body).group(0)


class RefusingMailServer:
    """A local SMTP server that refuses every recipient, naming the address in its answer
    (as real ones do: the sender's error then carries it)."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refused: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as stream:
            stream.write(b"220 mail.test ESMTP\r\n")
            stream.flush()
            for line in stream:
                command = line.decode().strip()
                verb = command.split(" ", 1)[0].upper()
                if verb == "RCPT":
                    self.refused.append(command)
                    reply = f"550 5.1.1 {command.split(':', 1)[1].strip()}: recipient address rejected"
                else:
                    reply = {"EHLO": "250 mail.test", "HELO": "250 mail.test", "QUIT": "221 bye"}.get(verb, "250 OK")
                stream.write(reply.encode() + b"\r\n")
                stream.flush()
                if verb == "QUIT":
                    return

    def use(self, settings) -> None:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", self.port, 10
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False

    def close(self) -> None:
        self.listener.close()


def test_a_run_through_every_operation_and_page_logs_no_secret(
        make_space, receiver, local_urls, mailoutbox, every_line, monkeypatch, client, settings):
    space, key = make_space()
    owner = space.owner.email
    api = Covering(key)
    secrets = {"API key": key, "owner's e-mail": owner}
    receiver.expect_request("/hook").respond_with_data("ok")

    # --- The API: every operation of the OpenAPI document, and refusals.
    api.get("/v1/openapi")
    poll = api.post("/v1/polls", {"title": "Team lunch", "kind": "date", "organizer": {"email": owner},
                                  "options": [{"date": "2030-05-02"}, {"date": "2030-05-03"}]}).body["data"]
    pid = poll["id"]
    for path in ("/v1/polls", f"/v1/polls/{pid}", f"/v1/polls/{pid}/results", f"/v1/polls/{pid}/participants"):
        assert api.get(path).status_code == 200
    created = api.post("/v1/webhooks", {"url": receiver.url_for("/hook")}).body["data"]
    secrets["webhook secret"] = created["secret"]
    wid = created["id"]
    api.get("/v1/webhooks")
    api.get(f"/v1/webhooks/{wid}")
    api.patch(f"/v1/webhooks/{wid}", {"enabled": True})
    secrets["rotated webhook secret"] = api.post(f"/v1/webhooks/{wid}/rotate-secret").body["data"]["secret"]
    api.post(f"/v1/webhooks/{wid}/ping")
    # A receiver whose URL carries a token in its query, failing (each failure is logged), and
    # one with a password in its URL (refused).
    secrets["receiver URL's query token"] = "receiver-query-token-74"
    receiver.expect_request("/failing").respond_with_data("no", status=500)
    failing = api.post("/v1/webhooks", {"url": receiver.url_for("/failing") + "?token=receiver-query-token-74"})
    api.post(f"/v1/webhooks/{failing.body['data']['id']}/ping")
    secrets["receiver URL's password"] = "receiver-password-74"
    assert api.post("/v1/webhooks", {"url": "https://hook:receiver-password-74@hooks.example.com/x"}).status_code == 400
    run_worker()
    api.get(f"/v1/webhooks/{wid}/deliveries")
    assert api.get("/v1/polls", key=key[:-1] + ("x" if key[-1] != "x" else "y")).status_code == 401
    api.get(f"/v1/polls/{owner}")  # an address in a path
    api.get(f"/v1/polls/{key}")  # a key pasted in a path
    api.get(f"/v1/webhooks/{secrets['webhook secret']}/deliveries")  # and a secret
    api.post("/v1/polls", {"title": "x", "kind": "date", "organizer": {"email": "stranger@example.net"},
                           "options": [{"date": "2030-05-02"}]})
    secrets["stranger's e-mail"] = "stranger@example.net"

    # --- The invite page: answer with an address, the e-mailed edit link, comments, "send me my link".
    api.post("/v1/polls", {"title": "x", "kind": "date", "options": [{"date": "2030-05-02"}]})
    pages_poll = api.post("/v1/polls", {"title": "Dinner", "kind": "date", "disableComments": False,
                                        "options": [{"date": "2030-05-02"}]}).body["data"]
    page = f"/invite/{pages_poll['id']}"
    visitor = Client(enforce_csrf_checks=True)
    response = answer(visitor, pages_poll, {pages_poll["options"][0]["id"]: "yes"}, name="Ada",
                      email="ada@example.org")
    assert response.status_code == 302
    secrets["participant's e-mail"] = "ada@example.org"
    edit = link(mailoutbox[-1], r"/invite/\S+/edit/[A-Za-z0-9_-]+")
    secrets["edit token"] = edit.rsplit("/", 1)[1]
    fresh = Client(enforce_csrf_checks=True)
    assert fresh.get(edit).status_code == 200
    fresh.post(edit, {"action": "update", "name": "Ada"})  # no CSRF token: refused, and logged
    fresh.get(edit + "/more")  # the HTML 404 under the link
    with monkeypatch.context() as patched:
        patched.setattr(page_views, "render_invite", lambda *a, **k: 1 / 0)
        assert Client().get(edit).status_code == 500  # a crash under the link is logged
    visitor.post(f"{page}/comments", {"csrfmiddlewaretoken": csrf(visitor, page), "name": "Ada", "text": "Hi"})
    visitor.post(f"{page}/send-link", {"csrfmiddlewaretoken": csrf(visitor, page), "email": "ADA@example.org"})
    secrets["new edit token"] = link(mailoutbox[-1], r"/invite/\S+/edit/[A-Za-z0-9_-]+").rsplit("/", 1)[1]
    participant = api.get(f"/v1/polls/{pages_poll['id']}/participants").body["data"][0]["id"]
    api.get(f"/v1/polls/{pages_poll['id']}/participants/{participant}")
    visitor.post(f"{page}/send-link", {"csrfmiddlewaretoken": csrf(visitor, page), "email": "nobody@example.org"})
    secrets["unknown visitor's e-mail"] = "nobody@example.org"

    # --- The organizer's page: the sign-in link, actions, the CSV, the calendar file, sign-out.
    organizer = Client(enforce_csrf_checks=True)
    manage = f"/poll/{pages_poll['id']}"
    organizer.post(f"{manage}/sign-in", {"csrfmiddlewaretoken": csrf(organizer, manage), "email": owner})
    sign_in = link(mailoutbox[-1], r"/poll/\S+/sign-in/[A-Za-z0-9_-]+")
    secrets["sign-in token"] = sign_in.rsplit("/", 1)[1]
    confirm = organizer.get(sign_in)
    assert organizer.post(sign_in, {"csrfmiddlewaretoken": confirm.context["csrf_token"]}).status_code == 302
    assert Client().get(sign_in).status_code == 403  # used: a dead link, logged too
    token = csrf(organizer, manage)
    for data in ({"action": "edit", "title": "Dinner at Ada's"}, {"action": "close"}, {"action": "reopen"},
                 {"action": "schedule", "option": pages_poll["options"][0]["id"], "confirmed": "yes", "email": "yes"}):
        organizer.post(f"{manage}/act", {"csrfmiddlewaretoken": token, **data})
    organizer.get(f"{manage}/confirm?action=cancel")
    # The outbox's e-mails (the decision's invitation to Ada, the organizer's notice of the
    # answers), sent by their job; then a mail server that refuses every recipient: the
    # cancellation's invitation and a sign-in link fail, and each failure is logged.
    page_jobs.send_mail()
    sent = [(message.to, message.subject) for message in mailoutbox]
    assert any(to == ["ada@example.org"] and subject.startswith("“Dinner at Ada's”: Thursday") for to, subject in sent), sent
    assert ([owner], "“Dinner at Ada's”: 1 answer, 1 comment") in sent, sent
    refusing = RefusingMailServer()
    try:
        refusing.use(settings)
        organizer.post(f"{manage}/act", {"csrfmiddlewaretoken": token, "action": "cancel", "confirmed": "yes",
                                          "email": "yes"})
        page_jobs.send_mail()
        organizer.post(f"{manage}/sign-in", {"csrfmiddlewaretoken": token, "email": owner})
    finally:
        refusing.close()
    assert any("ada@example.org" in command for command in refusing.refused), refusing.refused
    assert any(owner in command for command in refusing.refused), refusing.refused
    assert organizer.get(f"{manage}/answers.csv").status_code == 200
    Client().get(f"{page}/event.ics")
    from polls.models import Comment

    comment = Comment.objects.get(poll_id=pages_poll["id"]).pk
    for data in ({"action": "notify", "on": "no"}, {"action": "deadline", "closes_at": "2030-04-30T12:00"},
                 {"action": "clear-deadline"}, {"action": "remove-comment", "comment": comment},
                 {"action": "remove-participant", "participant": participant}):
        assert organizer.post(f"{manage}/act", {"csrfmiddlewaretoken": token, **data}).status_code == 302, data
    copy = organizer.post(f"{manage}/act", {"csrfmiddlewaretoken": token, "action": "duplicate", "title": "Copy"})
    copied = copy["Location"].split("?")[0]
    assert organizer.post(f"{copied}/act", {"csrfmiddlewaretoken": token, "action": "delete",
                                             "confirmed": "yes"}).status_code == 200
    assert Client().get(f"/language?language=de&next={page}").status_code == 302
    organizer.post(f"{manage}/sign-out", {"csrfmiddlewaretoken": token})
    from pages.notices import unsubscribe_token

    secrets["unsubscribe token"] = unsubscribe_token(pages_poll["id"])
    assert Client().get(f"{manage}/unsubscribe/{secrets['unsubscribe token']}").status_code == 200
    Client().post(f"{manage}/unsubscribe/{secrets['unsubscribe token']}")
    api.delete(f"/v1/webhooks/{wid}")
    api.delete(f"/v1/polls/{pid}")

    # --- The private API: each of its operations, an organizer's address in a body.
    private = PrivateApi(key)
    private.get("/api/private/openapi")
    private.client.get("/api/private/docs")
    made = private.post("/api/private/polls", {"title": "Offsite", "dates": ["2030-01-15"],
                                               "organizer": {"email": owner}}).body["data"]["id"]
    private.get("/api/private/polls")
    for suffix in ("", "/results", "/participants"):
        private.get(f"/api/private/polls/{made}{suffix}")
    private.patch(f"/api/private/polls/{made}", {"title": "Offsite 2"})
    private.delete(f"/api/private/polls/{made}")
    private.get(f"/api/private/polls/{owner}")

    missing = operations() - api.called
    assert not missing, f"operations the run did not call: {sorted(missing)}"
    metrics = client.get("/metrics").content.decode()
    lines = every_line.stream.getvalue()
    paths = re.findall(r'"path": "([^"]+)"', lines)
    unvisited = [str(route.pattern) for route in page_urls.urlpatterns[:-1]
                 if not any(route.pattern.match(path.lstrip("/")) for path in paths)]
    assert not unvisited, f"pages the run did not open: {unvisited}"
    assert f"/invite/{pages_poll['id']}/edit/[redacted]" in paths and f"/poll/{pages_poll['id']}/sign-in/[redacted]" in paths
    assert "page crashed" in lines and "Forbidden (CSRF" in lines  # the lines that once carried them
    for failure in ("webhook attempt failed", "e-mail not sent; retried later", "sign-in e-mail not sent"):
        assert failure in lines, failure
    assert len(lines.splitlines()) > 40
    for name, secret in secrets.items():
        for text, where in ((lines, "the log"), (metrics, "/metrics")):
            assert secret.lower() not in text.lower(), f"{name} in {where}"


def test_a_receiver_url_s_credentials_and_any_key_reach_no_line(every_line):
    """A line that names a receiver's URL (a field, or an exception's text, as the HTTP
    library's do) has its user name, password and query values redacted, the rest kept; a
    key whose random prefix holds `-` or `_` (the base64url alphabet) is redacted too."""
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    url = f"http://hook-user:hook-password@127.0.0.1:{port}/hook?token=query-token&v=2"
    with pytest.raises(requests.RequestException) as refused:
        requests.post(url, timeout=5)
    assert "token=query-token" in str(refused.value)
    logging.getLogger("service.webhooks").error("webhook attempt failed unexpectedly", exc_info=refused.value,
                                                extra={"url": url})
    keys = [f"sk_{prefix}_{secret * 32}" for prefix, secret in (("a-b_c-d_", "S"), ("-_______", "T"))]
    assert all(prefix_of(key) for key in keys)
    logging.getLogger("service.access").info("request", extra={"path": f"/v1/polls/{keys[0]}", "header": keys[1]})
    lines = every_line.stream.getvalue()
    assert "http://[redacted]@127.0.0.1" in lines and "/hook?token=[redacted]&v=[redacted]" in lines, lines
    assert "/v1/polls/sk_a-b_c-d__[redacted]" in lines and "sk_-________[redacted]" in lines, lines
    for secret in ("hook-user", "hook-password", "query-token", "S" * 32, "T" * 32):
        assert secret not in lines, secret


KEY = b"sk_AAAAAAAA_" + b"B" * 32


def test_gunicorn_s_lines_of_a_refused_request_line_hold_no_token(tmp_path):
    """gunicorn refuses a request line it cannot parse and logs it whole: in a web worker that
    line goes through the service's handler, which redacts the link's token."""
    port = webproc.free_port()
    env = webproc.base_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", port)
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.py", "config.wsgi"],
                               cwd=django_settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_until(lambda: webproc.request(port, "GET", "/healthz", timeout=2)[0] == 200, 60, interval=0.2)
            for line in (b"GET /poll/made-up-poll/sign-in/sign-in-token-74\r\n", b"GET /v1/polls/" + KEY + b"\r\n"):
                with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                    sock.sendall(line + b"Host: x\r\n\r\n")
                    assert webproc.read_until_closed(sock)[0] == 400
            wait_until(lambda: log.read_text().count("Invalid HTTP request line") == 2, 30)
        finally:
            web.terminate()
            web.wait(60)
    text = log.read_text()
    assert "/poll/made-up-poll/sign-in/[redacted]" in text and "/v1/polls/sk_AAAAAAAA_[redacted]" in text, text
    assert "sign-in-token-74" not in text and KEY.decode() not in text, text


@pytest.mark.parametrize(("environment", "starts"), [
    ({}, False), ({"DEBUG": "true"}, True), ({"EMAIL_URL": "consolemail://"}, True),
    ({"EMAIL_URL": "smtp+tls://user:password@mail.example.com:587"}, True),
])
def test_a_web_process_without_email_url_refuses_to_start_unless_debug(tmp_path, environment, starts):
    env = {name: value for name, value in os.environ.items() if name not in ("EMAIL_URL", "DEBUG")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               **environment)
    done = subprocess.run([sys.executable, "-c", "import config.wsgi"], cwd=django_settings.BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == starts, done.stderr
    if not starts:
        assert "EMAIL_URL is not set" in done.stderr


@pytest.mark.parametrize("process", ["runjobs", "celery worker"])
@pytest.mark.parametrize(("environment", "warns"), [({}, True), ({"EMAIL_URL": "consolemail://"}, False)])
def test_the_processes_that_send_e_mails_say_once_when_they_would_print_them(tmp_path, process, environment, warns):
    """`runjobs` and Celery's worker send the outbox's e-mails; without EMAIL_URL (DEBUG off)
    they start, and say once, on their first lines, that e-mails would go to the console."""
    env = {name: value for name, value in os.environ.items() if name not in ("EMAIL_URL", "DEBUG", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               CELERY_BROKER_URL="memory://", LOG_LEVEL="INFO", **environment)
    command, started = {
        "runjobs": (["manage.py", "runjobs", "--no-workers", "--only", "pages.purge-mail"], "runjobs started"),
        "celery worker": (["-m", "celery", "-A", "config", "worker", "--pool", "solo", "--without-gossip",
                           "--without-mingle", "--without-heartbeat"], "ready"),
    }[process]
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        running = subprocess.Popen([sys.executable, *command], cwd=django_settings.BASE_DIR, env=env,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_until(lambda: started in log.read_text() or running.poll() is not None, 120)
            running.terminate()
            running.wait(60)
        finally:
            running.kill()
    text = log.read_text()
    assert started in text, text
    assert text.count("EMAIL_URL is not set") == (1 if warns else 0), text


def test_the_documented_filemail_url_writes_to_its_absolute_folder(tmp_path):
    """docs/app.md's `filemail:` example, with this test's folder as its absolute path: the
    e-mail lands there (django-environ reads `filemail:///path` as the relative `path`)."""
    documented = re.search(r"`(filemail:/+)abs/path/to/folder`", (django_settings.BASE_DIR / "docs" / "app.md").read_text())
    url = documented.group(1) + str(tmp_path / "mail").lstrip("/")
    env = {name: value for name, value in os.environ.items() if name != "EMAIL_URL"}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               EMAIL_URL=url)
    script = ("import django; django.setup(); from django.core.mail import send_mail; "
              "send_mail('Hello', 'Body', None, ['ada@example.com'])")
    done = subprocess.run([sys.executable, "-c", script], cwd=django_settings.BASE_DIR, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [written] = (tmp_path / "mail").iterdir()
    assert "Subject: Hello" in written.read_text()
