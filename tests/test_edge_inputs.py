"""Inputs at the edges of the HTTP contract that used to crash (500),
slip through validation, or leave the JSON envelope. Every case goes through HTTP."""

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test.client import RequestFactory

from config.wsgi import application
from polls.models import Poll
from tests.waiting import wait_until
from tests.webproc import read_until_closed


def time_poll(*options, **extra):
    return {"title": "Call", "kind": "time", "duration": 30, "options": list(options), **extra}


def date_poll(*dates, **extra):
    return {"title": "Dinner", "kind": "date", "options": [{"date": day} for day in dates], **extra}


def generator_poll(**generator):
    return {
        "title": "Call", "kind": "time", "duration": 30,
        "generators": [{"startDate": "2026-12-01", "endDate": "2026-12-01", "from": "09:00", "to": "10:00", **generator}],
    }


def assert_refused(response, message):
    assert (response.status_code, response.body["error"]["code"]) == (400, "VALIDATION_ERROR"), response.body
    assert response.body["error"]["message"] == message
    assert Poll.objects.count() == 0


# --- Dates and instants at the ends of the calendar --------------------------------------

RANGE = "must be between 1000-01-01 and 9998-12-31"


@pytest.mark.parametrize(
    "body, message",
    [
        (time_poll({"startTime": "9999-12-31T23:59:59Z"}), f"options[0].startTime: {RANGE}"),
        (time_poll({"startTime": "9999-12-31T23:00:00-05:00"}), f"options[0].startTime: {RANGE}"),
        (time_poll({"startTime": "0001-01-01T00:00:00+05:00"}), f"options[0].startTime: {RANGE}"),
        (time_poll({"startTime": "0999-12-31T12:00:00"}, timeZone="Europe/Berlin"), f"options[0].startTime: {RANGE}"),
        (date_poll("9999-12-31"), f"options[0].date: {RANGE}"),
        (date_poll("2026-12-01", "0001-01-01"), f"options[1].date: {RANGE}"),
        (generator_poll(startDate="9999-12-25", endDate="9999-12-31"),
         f"generators[0].startDate: {RANGE}; generators[0].endDate: {RANGE}"),
        (generator_poll(startDate="9998-12-31", endDate="9999-01-01"), f"generators[0].endDate: {RANGE}"),
    ],
    ids=["instant-9999", "offset-into-10000", "offset-into-year-0", "wall-clock-999", "date-9999", "date-1",
         "generator-9999", "generator-ends-9999"],
)
def test_dates_and_times_beyond_the_supported_years_are_validation_errors(api, body, message):
    assert_refused(api.post("/v1/polls", body), message)


def test_the_first_and_last_supported_days_work_and_instants_keep_four_digit_years(api):
    r = api.post("/v1/polls", time_poll({"startTime": "1000-01-01T00:00:00+14:00"}, {"startTime": "9998-12-31T23:59:00-14:00"}))
    assert r.status_code == 201, r.body
    assert [o["startTime"] for o in r.body["data"]["options"]] == ["0999-12-31T10:00:00.000Z", "9999-01-01T13:59:00.000Z"]
    poll_id = r.body["data"]["id"]
    assert api.get(f"/v1/polls/{poll_id}").body["data"]["options"] == r.body["data"]["options"]
    r = api.post("/v1/polls", date_poll("1000-01-01", "9998-12-31"))
    assert [o["date"] for o in r.body["data"]["options"]] == ["1000-01-01", "9998-12-31"]
    r = api.post("/v1/polls", generator_poll(startDate="9998-12-31", endDate="9998-12-31", **{"from": "23:00", "to": "23:59"}))
    assert r.status_code == 201 and len(r.body["data"]["options"]) == 1


# --- Formats are ASCII and whole ----------------------------------------------------------

DATE_TIME = "must be an RFC 3339 date-time"
CLOCK = "must be a time HH:MM (00:00-23:59)"


@pytest.mark.parametrize(
    "body, message",
    [
        (time_poll({"startTime": "٢٠٢٦-12-01T09:00:00Z"}), f"options[0].startTime: {DATE_TIME}"),
        (time_poll({"startTime": "2026-12-01T0９:00:00Z"}), f"options[0].startTime: {DATE_TIME}"),
        (time_poll({"startTime": "2026-12-01T09:00:00Z\n"}), f"options[0].startTime: {DATE_TIME}"),
        (time_poll({"startTime": "2026-12-01T09:00\n"}), f"options[0].startTime: {DATE_TIME}"),
        (generator_poll(**{"from": "0٩:00"}), f"generators[0].from: {CLOCK}"),
        (generator_poll(**{"from": "09:00\n"}), f"generators[0].from: {CLOCK}"),
        (generator_poll(to="10:00\n"), f"generators[0].to: {CLOCK}"),
        (date_poll("2026-12-0١"), "options[0].date: must be a date YYYY-MM-DD"),
        (date_poll("2026-12-01\n"), "options[0].date: must be a date YYYY-MM-DD"),
    ],
    ids=["arabic-indic-year", "fullwidth-hour", "newline-after-z", "newline-after-minutes", "clock-digit",
         "clock-newline", "to-newline", "date-digit", "date-newline"],
)
def test_non_ascii_digits_and_trailing_newlines_are_not_dates_or_times(api, body, message):
    assert_refused(api.post("/v1/polls", body), message)


# --- Object keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        rb'{"\ud800": 1, "title": "x", "kind": "date", "options": [{"date": "2026-12-01"}]}',
        rb'{"title": "x", "kind": "date", "options": [{"date": "2026-12-01", "\udfff": 1}]}',
        rb'{"title": "x", "kind": "time", "options": [], "\ud800": 1, "\ud800": 2}',
    ],
    ids=["top-level", "nested", "duplicated"],
)
def test_a_key_with_an_unpaired_surrogate_is_a_validation_error(api, raw):
    assert_refused(api.post("/v1/polls", raw=raw), "body: an object key is not valid Unicode text")


# --- Chunked request bodies (as gunicorn hands them over) ------------------------------


@contextmanager
def database_kept_open():
    """Like Django's test client: a request must not close the test's database connection."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


def chunked_post(key: str, body: bytes) -> tuple[int, dict]:
    """POST /v1/polls through the WSGI application as gunicorn calls it for a request with
    `Transfer-Encoding: chunked`: no CONTENT_LENGTH, the decoded body on wsgi.input, and
    `wsgi.input_terminated` set."""
    environ = RequestFactory().post("/v1/polls").environ
    del environ["CONTENT_LENGTH"]
    environ.update({
        "CONTENT_TYPE": "application/json", "HTTP_TRANSFER_ENCODING": "chunked", "HTTP_AUTHORIZATION": f"Bearer {key}",
        "wsgi.input": BytesIO(body), "wsgi.input_terminated": True,
    })
    statuses = []
    with database_kept_open():
        response = application(environ, lambda status, headers, exc_info=None: statuses.append(status))
        content = b"".join(response)
        response.close()
    return int(statuses[0].split()[0]), json.loads(content)


def test_a_chunked_body_is_read_like_any_other(space_and_key):
    status, body = chunked_post(space_and_key[1], json.dumps(date_poll("2026-12-01")).encode())
    assert status == 201, body
    assert Poll.objects.get().title == body["data"]["title"] == "Dinner"


def test_a_chunked_body_over_the_size_limit_is_refused(space_and_key, settings):
    settings.MAX_REQUEST_BODY_BYTES = 1000
    status, body = chunked_post(space_and_key[1], json.dumps(date_poll("2026-12-01", description="a" * 1000)).encode())
    assert (status, body) == (400, {"error": {"code": "VALIDATION_ERROR", "message": "body: larger than 1000 bytes"}})
    assert Poll.objects.count() == 0


# --- Requests Django refuses before any view ---------------------------------------------


@pytest.mark.parametrize("host", ["a b", "exa mple.com", "[::1"])
def test_a_malformed_host_header_gets_the_json_envelope(api, host):
    r = api.get("/v1/polls", headers={"Host": host})
    assert (r.status_code, r["Content-Type"]) == (400, "application/json")
    assert r.body == {"error": {"code": "VALIDATION_ERROR", "message": "request: refused as malformed"}}


def test_a_host_outside_allowed_hosts_gets_the_json_envelope(api, settings):
    settings.ALLOWED_HOSTS = ["api.example.com"]
    r = api.post("/v1/polls", date_poll("2026-12-01"), headers={"Host": "evil.example.net"})
    assert r.status_code == 400 and r.body["error"]["code"] == "VALIDATION_ERROR"
    assert Poll.objects.count() == 0
    assert api.post("/v1/polls", date_poll("2026-12-01"), headers={"Host": "api.example.com"}).status_code == 201


# --- Requests gunicorn refuses before Django sees them ----------------------------------


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """The web process as bin/serve starts it (config/gunicorn.py), one worker; the requests
    below never reach Django, so its database is never opened."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(HOST="127.0.0.1", PORT=str(port), WEB_CONCURRENCY="1", WEB_CONCURRENT_REQUESTS="1", LOG_LEVEL="WARNING",
               DATABASE_URL=f"sqlite:///{tmp_path_factory.mktemp('gunicorn') / 'unused.sqlite3'}")
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.py", "config.wsgi"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        def listening() -> bool:
            assert process.poll() is None, process.stderr.read().decode()
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        wait_until(listening, 30, interval=0.1, ignore=(OSError,), message="gunicorn did not start")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def raw_exchange(port: int, request: bytes) -> tuple[int, dict, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        return read_until_closed(connection)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/polls HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"POST /v1/polls HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
        b"POST /v1/polls HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"get /v1/polls HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /v1/polls/\xff HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /v1/polls HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n",
        b"GET /v1/polls HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(200)) + b"\r\n",
    ],
    ids=["negative-length", "chunked-and-length", "bad-chunk-size", "lowercase-method", "non-utf8-path",
         "header-too-large", "too-many-headers"],
)
def test_a_request_gunicorn_cannot_parse_gets_the_json_envelope(gunicorn, request_bytes):
    status, headers, body = raw_exchange(gunicorn, request_bytes)
    assert (status, headers["content-type"]) == (400, "application/json")
    error = json.loads(body)["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["message"].startswith("request: ")
    assert int(headers["content-length"]) == len(body)


# --- The poll list's query ----------------------------------------------------------------


@pytest.mark.parametrize(
    "query, message",
    [
        ("cursor=", "cursor: must not be empty"),
        ("cursor=" + "a" * 501, "cursor: must be at most 500 characters"),
        ("cursor=%00", "cursor: must not contain NUL characters"),
    ],
    ids=["empty", "too-long", "nul"],
)
def test_a_bad_cursor_is_named_in_the_house_style(api, query, message):
    r = api.get(f"/v1/polls?{query}")
    assert (r.status_code, r.body["error"]) == (400, {"code": "VALIDATION_ERROR", "message": message})


# --- Query parameters where an operation has none -----------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [("POST", "/v1/polls"), ("GET", "/v1/polls/{id}"), ("DELETE", "/v1/polls/{id}"), ("GET", "/v1/polls/{id}/results"),
     ("GET", "/v1/polls/{id}/participants"), ("GET", "/v1/polls/{id}/participants/abc")],
)
def test_a_query_parameter_an_operation_does_not_have_is_a_validation_error(api, method, path):
    poll_id = api.post("/v1/polls", date_poll("2026-12-01")).body["data"]["id"]
    body = date_poll("2026-12-02") if method == "POST" else None
    r = api.request(method, path.format(id=poll_id) + "?force=true&limit=5", body)
    assert (r.status_code, r.body["error"]) == (400, {"code": "VALIDATION_ERROR", "message": "force: unknown field; limit: unknown field"})
    assert "RateLimit-Remaining" in r  # checked after the limiter, like every validation
    assert list(Poll.objects.values_list("pk", flat=True)) == [poll_id]  # nothing created or deleted
    assert api.get(f"/v1/polls/{poll_id}?").status_code == 200  # an empty query is no parameter


def test_validation_of_the_query_comes_before_the_lookup(api):
    r = api.get("/v1/polls/nope?x=1")
    assert (r.status_code, r.body["error"]["message"]) == (400, "x: unknown field")
