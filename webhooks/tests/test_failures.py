"""Receivers that fail or misbehave, the retry schedule, and disabling after 20 failures."""

import json
import socket
import struct
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from core import metrics
from webhooks import services
from webhooks.models import Attempt, Delivery, Endpoint
from webhooks.tests.fixtures import read_request, received, run_worker, trickle_answer, verify
from webhooks.tests.test_ssrf import dns  # noqa: F401 - the fake DNS fixture


def record(space, type="poll.created"):
    return services.record_event(space_id=space.id, type=type, poll_id="AbCdEf123456")


def only_attempt() -> Attempt:
    [attempt] = Attempt.objects.all()
    return attempt


@pytest.fixture
def attempt_against(raw_receiver, make_endpoint, space):
    """`attempt_against(behave)`: one event sent to a raw TCP peer that behaves so; returns
    the attempt and how long the worker took."""

    def attempt(behave) -> tuple[Attempt, float]:
        raw_receiver.behave = behave
        make_endpoint(raw_receiver.url())
        record(space)
        started = time.monotonic()
        run_worker()
        return only_attempt(), time.monotonic() - started

    return attempt


def test_a_500_is_a_failure_retried_after_a_minute(receiver, hook, space):
    receiver.expect_request("/hook").respond_with_data("boom", status=500)
    record(space)
    before = timezone.now()
    run_worker()
    attempt = only_attempt()
    assert (attempt.succeeded, attempt.status_code, attempt.error) == (False, 500, "HTTP 500")
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.PENDING and delivery.attempts == 1
    assert before + timedelta(seconds=59) < delivery.next_attempt_at < timezone.now() + timedelta(seconds=61)
    assert delivery.claimed_until is None and delivery.last_error == "HTTP 500"


def test_any_2xx_is_a_success(receiver, hook, space):
    receiver.expect_request("/hook").respond_with_data("", status=204)
    record(space)
    run_worker()
    assert only_attempt().succeeded
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_a_redirect_is_not_followed_and_fails(receiver, hook, space):
    receiver.expect_request("/hook").respond_with_data("", status=302, headers={"Location": receiver.url_for("/elsewhere")})
    receiver.expect_request("/elsewhere").respond_with_data("ok")
    record(space)
    run_worker()
    assert [request.path for request, _ in receiver.log] == ["/hook"]
    attempt = only_attempt()
    assert (attempt.succeeded, attempt.status_code) == (False, 302)
    assert attempt.error == "HTTP 302: redirects are not followed"


def test_a_receiver_slower_than_the_timeout_fails(attempt_against):
    def slow(conn):
        read_request(conn)
        time.sleep(2.5)  # the test timeout is 1 s
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    attempt, took = attempt_against(slow)
    assert took < 2.0
    assert (attempt.succeeded, attempt.status_code, attempt.error) == (False, None, "timed out after 1 s")


def test_a_receiver_trickling_bytes_is_cut_off_at_the_deadline(attempt_against):
    """Each byte arrives well within a read timeout; the whole exchange still ends at
    the deadline."""

    def trickle(conn):
        read_request(conn)
        trickle_answer(conn)

    attempt, took = attempt_against(trickle)
    assert took < 1.8
    assert (attempt.succeeded, attempt.error) == (False, "timed out after 1 s")
    assert 900 <= attempt.duration_ms < 1800


def test_a_connection_closed_without_an_answer_fails(attempt_against):
    def hang_up(conn):
        read_request(conn)
        conn.close()

    attempt, _ = attempt_against(hang_up)
    assert not attempt.succeeded and attempt.status_code is None
    # Closed with the request still unread on its side, the peer's kernel answers a reset.
    assert attempt.error in ("the receiver closed the connection without answering", "connection reset by the receiver")
    assert Delivery.objects.get().status == Delivery.Status.PENDING


def test_a_refused_connection_fails(raw_receiver, make_endpoint, space):
    url = raw_receiver.url()
    raw_receiver.close()
    make_endpoint(url)
    record(space)
    run_worker()
    attempt = only_attempt()
    assert (attempt.succeeded, attempt.error) == (False, "connection refused")


def reset(conn):
    read_request(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    conn.close()


@pytest.mark.parametrize(("behave", "error"), [
    (reset, "connection reset by the receiver"),
    (lambda conn: read_request(conn) and conn.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"),
     "response too large: a header line over 64 KiB"),
    (lambda conn: read_request(conn) and conn.sendall(b"hello there\r\n\r\n"), "the answer is not valid HTTP"),
], ids=["reset", "huge-header", "not-http"])
def test_a_failure_is_told_in_the_receivers_words(attempt_against, api, behave, error):
    """What an integrator reads in the delivery log names what happened, never one of
    our classes or the HTTP library's (it read `connection failed:
    _VettedHTTPConnection(host='127.0.0.1', port=9009): ...`)."""
    attempt, _ = attempt_against(behave)
    assert (attempt.succeeded, attempt.error) == (False, error)
    endpoint_id = attempt.delivery.endpoint_id
    [delivery] = api.get(f"/v1/webhooks/{endpoint_id}/deliveries").body["data"]
    assert delivery["attempts"][0]["error"] == error


def test_an_unresolvable_name_is_a_dns_failure(dns, make_endpoint, space):  # noqa: F811
    dns["hooks.test"] = ["127.0.0.1"]
    make_endpoint("http://hooks.test:9/hook")
    del dns["hooks.test"]  # the name stopped resolving after the endpoint was saved
    record(space)
    run_worker()
    assert only_attempt().error == "DNS failure: the host 'hooks.test' cannot be resolved (Name or service not known)"


def test_a_huge_body_is_read_only_up_to_64_kib(attempt_against):
    sent, stopped = [], threading.Event()

    def endless(conn):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        chunk = b"x" * 65536
        try:
            for _ in range(16 * 1024):  # up to 1 GiB, far more than anyone should read
                conn.sendall(chunk)
                sent.append(len(chunk))
        except OSError:
            pass
        stopped.set()

    attempt, took = attempt_against(endless)
    assert took < 1.0
    assert attempt.succeeded and attempt.status_code == 200
    assert attempt.response_excerpt == "x" * 512
    assert stopped.wait(10)
    assert sum(sent) < 64 * 1024 * 1024  # the sender hung up long before the end


def test_retries_follow_the_schedule_then_the_delivery_fails(receiver, hook, space, clock):
    """1 min, 5 min, 30 min, 2 h, 12 h; the same event id and body every time, a new
    delivery id and a fresh signature for each attempt."""
    _endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("no", status=503)
    event = record(space)
    run_worker()
    for wait in (60, 300, 1800, 7200, 43200):
        clock.shift(wait - 2)
        assert run_worker() == 0, f"nothing is due {wait - 2} s after the last attempt"
        clock.shift(2)
        assert run_worker() == 1, f"the retry is due {wait} s after the last attempt"
    clock.shift(86400 * 3)
    assert run_worker() == 0

    got = received(receiver)
    assert len(got) == 6
    assert {item["raw"] for item in got} == {event.body}
    assert {item["body"]["id"] for item in got} == {event.id}
    assert len({item["headers"]["X-Service-Delivery"] for item in got}) == 6
    assert len({item["headers"]["X-Service-Signature"] for item in got}) == 6
    for item in got:
        assert verify(item["raw"], item["headers"], secret, tolerance=None)
    attempts = list(Attempt.objects.order_by("started_at"))
    assert [a.id for a in attempts] == [item["headers"]["X-Service-Delivery"] for item in got]
    for attempt, item in zip(attempts, got):
        t = int(item["headers"]["X-Service-Signature"].split(",")[0][2:])
        assert abs(t - attempt.started_at.timestamp()) < 3  # signed at send time
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in zip(attempts, attempts[1:])]
    assert [round(gap / 10) * 10 for gap in gaps] == [60, 300, 1800, 7200, 43200]
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == (Delivery.Status.FAILED, 6, None)
    assert Endpoint.objects.get().failure_streak == 1


def test_a_retry_that_succeeds_ends_the_delivery(receiver, hook, space, clock):
    receiver.expect_oneshot_request("/hook").respond_with_data("no", status=500)
    receiver.expect_request("/hook").respond_with_data("ok")
    record(space)
    run_worker()
    clock.shift(60)
    run_worker()
    clock.shift(86400)
    assert run_worker() == 0
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (Delivery.Status.SUCCEEDED, 2, "")
    assert [a.succeeded for a in Attempt.objects.order_by("started_at")] == [False, True]


def fail_deliveries(space, clock, count: int) -> None:
    """Record `count` events and let every attempt of their deliveries fail."""
    for _ in range(count):
        record(space)
    run_worker()
    for wait in (60, 300, 1800, 7200, 43200):
        clock.shift(wait)
        run_worker()


def test_twenty_failed_deliveries_in_a_row_disable_the_endpoint(receiver, hook, space, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    fail_deliveries(space, clock, 19)
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.failure_streak) == (True, 19)

    fail_deliveries(space, clock, 1)
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.failure_streak) == (False, 20)
    assert endpoint.disabled_reason == "20 failed deliveries in a row" and endpoint.disabled_at is not None
    assert Delivery.objects.filter(status=Delivery.Status.FAILED).count() == 20

    requests_so_far = len(receiver.log)
    record(space)
    assert run_worker() == 0
    assert len(receiver.log) == requests_so_far


def test_a_success_resets_the_failure_count(receiver, hook, space, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    fail_deliveries(space, clock, 19)
    receiver.clear()
    receiver.expect_request("/hook").respond_with_data("ok")
    record(space)
    run_worker()
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.failure_streak) == (True, 0)


def test_recovery_after_disabling_does_not_replay(receiver, hook, space, clock):
    endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    fail_deliveries(space, clock, 20)
    endpoint.refresh_from_db()
    assert not endpoint.is_enabled
    missed = record(space, "poll.updated")  # happens while disabled
    run_worker()

    receiver.clear()
    receiver.expect_request("/hook").respond_with_data("ok")
    services.enable_endpoint(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.failure_streak, endpoint.disabled_reason) == (True, 0, "")
    fresh = record(space, "poll.closed")
    clock.shift(86400)
    run_worker()
    got = received(receiver)
    assert [item["body"]["id"] for item in got] == [fresh.id]
    assert missed.id not in {json.loads(d.event.body)["id"] for d in Delivery.objects.select_related("event")}
    assert verify(got[0]["raw"], got[0]["headers"], secret)


def test_disabling_cancels_pending_retries(receiver, hook, space, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    record(space)
    run_worker()
    services.disable_endpoint(endpoint=endpoint)
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.CANCELED
    assert delivery.last_error == "not sent: disabled by an operator"
    clock.shift(3600)
    assert run_worker() == 0
    assert len(receiver.log) == 1


def test_a_receiver_answering_410_gone_disables_its_endpoint_at_once(api, superuser_client, receiver, hook, space):
    """Standard Webhooks' convention: 410 Gone asks for no more. The delivery ends (no
    retry), the endpoint is disabled with the reason, its other pending deliveries are
    canceled, and the API and the back office show it."""
    endpoint, _ = hook
    finished = finished_counts()
    receiver.expect_request("/hook").respond_with_data("gone", status=410)
    record(space)
    services.fan_out()
    record(space, type="poll.updated")  # made, not yet sent
    services.fan_out()
    [claim] = services.claim_due(limit=1)
    services.send_many([claim])
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.disabled_reason) == (False, "the receiver answered 410 Gone")
    assert endpoint.failure_streak == 0
    sent = Delivery.objects.get(pk=claim.delivery.pk)
    assert (sent.status, sent.attempts, sent.last_error, sent.next_attempt_at) == (
        Delivery.Status.FAILED, 1, "HTTP 410", None)
    other = Delivery.objects.exclude(pk=sent.pk).get()
    assert (other.status, other.last_error) == (Delivery.Status.CANCELED, "not sent: the receiver answered 410 Gone")
    assert run_worker() == 0 and len(receiver.log) == 1
    assert finished_counts() == {**finished, "failed": finished["failed"] + 1, "canceled": finished["canceled"] + 1}

    data = api.get(f"/v1/webhooks/{endpoint.id}").body["data"]
    assert (data["enabled"], data["disabledReason"]) == (False, "the receiver answered 410 Gone")
    assert data["disabledAt"] is not None
    page = superuser_client.get(f"/admin/webhooks/endpoint/{endpoint.pk}/change/").content.decode()
    assert "the receiver answered 410 Gone" in page


def finished_counts() -> dict[str, float]:
    """This process's `service_webhook_deliveries_finished` counter, by outcome."""
    return {outcome: metrics.DELIVERIES.labels(outcome)._value.get() for outcome in ("succeeded", "failed", "canceled")}


def test_each_final_state_is_counted_once_for_the_metrics(receiver, hook, space, clock):
    receiver.expect_request("/hook").respond_with_data("ok")
    before = finished_counts()
    for _ in range(3):
        record(space)
    assert run_worker() == 3
    assert finished_counts() == {**before, "succeeded": before["succeeded"] + 3}
