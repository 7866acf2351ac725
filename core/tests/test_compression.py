"""gzip for API reads of clients that accept it; never an answer that carries a secret."""

import gzip
import json

from django.test import Client

from polls.tests.factories import make_poll, respond


def test_reads_are_compressed_for_clients_that_accept_gzip(space_and_key):
    space, key = space_and_key
    poll = make_poll(space)
    for n in range(5):
        respond(poll, "yes", "no", None, name=f"P{n}")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    path = f"/v1/polls/{poll.pk}/participants"
    plain = client.get(path)
    assert "Content-Encoding" not in plain
    squeezed = client.get(path, HTTP_ACCEPT_ENCODING="gzip, deflate")
    assert squeezed["Content-Encoding"] == "gzip" and "Accept-Encoding" in squeezed["Vary"]
    assert json.loads(gzip.decompress(squeezed.content)) == json.loads(plain.content)
    assert len(squeezed.content) < len(plain.content)


def test_answers_with_a_secret_and_back_office_pages_are_never_compressed(space_and_key, settings, admin_client):
    _, key = space_and_key
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_ACCEPT_ENCODING="gzip")
    created = client.post("/v1/webhooks", json.dumps({"url": "http://127.0.0.1:9/hook"}), content_type="application/json")
    assert created.status_code == 201 and "Content-Encoding" not in created
    assert json.loads(created.content)["data"]["secret"]
    webhook_id = json.loads(created.content)["data"]["id"]
    rotated = client.generic("POST", f"/v1/webhooks/{webhook_id}/rotate-secret")
    assert rotated.status_code == 200 and "Content-Encoding" not in rotated, rotated.content[:200]
    page = admin_client.get("/admin/spaces/space/", HTTP_ACCEPT_ENCODING="gzip")
    assert page.status_code == 200 and "Content-Encoding" not in page
