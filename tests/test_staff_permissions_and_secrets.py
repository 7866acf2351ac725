"""Who may do what in the back office (view-only staff, secrets that never reach a cookie, TLS proxies), the installation secret key, and API-key and request-id edge cases."""

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages.storage.cookie import CookieStorage
from django.db import connection
from django.http import HttpRequest
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from config.secret_key import installation_secret_key
from spaces import services as spaces
from spaces.models import ApiKey, Space, User
from webhooks import services as webhooks
from webhooks.models import Delivery, Endpoint


@pytest.fixture
def viewer(db, client):
    """A staff login allowed to look at everything and to change nothing."""
    user = get_user_model().objects.create(username="viewer", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client.force_login(user)
    return client


@pytest.fixture
def delivery(space, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    endpoint, _secret = webhooks.create_endpoint(space=space, url="http://127.0.0.1:9/hook")
    webhooks.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    webhooks.fan_out()
    return Delivery.objects.get(endpoint=endpoint)


def act(client, app: str, model: str, action: str, pk) -> None:
    response = client.post(reverse(f"admin:{app}_{model}_changelist"), {"action": action, "_selected_action": [pk]})
    assert response.status_code in (200, 302)


def test_a_view_only_staff_login_cannot_run_state_changing_admin_actions(viewer, space, delivery):
    """Django offers an action without `permissions` to everyone who may see the list:
    each of these changes something, so each needs the change permission."""
    key, _raw = spaces.create_key(space=space, name="k")
    endpoint = delivery.endpoint
    changelist = viewer.get(reverse("admin:spaces_user_changelist"))
    assert changelist.status_code == 200  # the viewer does see the lists

    act(viewer, "spaces", "user", "ban", space.owner.pk)
    act(viewer, "spaces", "subscription", "deactivate", space.subscription.pk)
    act(viewer, "spaces", "apikey", "revoke", key.pk)
    act(viewer, "webhooks", "endpoint", "disable", endpoint.pk)
    act(viewer, "webhooks", "delivery", "resend", delivery.pk)

    assert not User.objects.get(pk=space.owner.pk).is_banned
    assert Space.objects.get(pk=space.pk).is_pro
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    assert Endpoint.objects.get(pk=endpoint.pk).is_enabled
    assert Delivery.objects.count() == 1
    for name in ("ban", "unban", "activate", "deactivate", "revoke", "send_ping", "enable", "disable", "resend"):
        assert f'value="{name}"' not in changelist.content.decode()
    for app, model in (("spaces", "subscription"), ("spaces", "apikey"), ("webhooks", "endpoint"),
                       ("webhooks", "delivery")):
        page = viewer.get(reverse(f"admin:{app}_{model}_changelist")).content.decode()
        assert 'name="action"' not in page, model


def test_a_staff_login_with_the_change_permissions_runs_them(db, client, space, delivery):
    user = get_user_model().objects.create(username="operator", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__regex=r"^(view|change)_"))
    client.force_login(user)
    key, _raw = spaces.create_key(space=space, name="k")

    act(client, "spaces", "user", "ban", space.owner.pk)
    act(client, "spaces", "apikey", "revoke", key.pk)
    act(client, "webhooks", "delivery", "resend", delivery.pk)
    act(client, "webhooks", "endpoint", "disable", delivery.endpoint.pk)
    act(client, "spaces", "subscription", "deactivate", space.subscription.pk)

    assert User.objects.get(pk=space.owner.pk).is_banned
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    assert Delivery.objects.count() == 2
    assert not Endpoint.objects.get(pk=delivery.endpoint.pk).is_enabled
    assert not Space.objects.get(pk=space.pk).is_pro


def cookie_contents(response) -> str:
    """Everything the response's cookies carry, the messages cookie decoded (it is signed,
    not encrypted: anyone who sees the cookie reads it)."""
    texts = []
    for morsel in response.cookies.values():
        texts.append(morsel.value)
        decoded = CookieStorage(HttpRequest())._decode(morsel.value) if morsel.key == CookieStorage.cookie_name else None
        texts += [str(message) for message in decoded or []]
    return "\n".join(texts)


def test_a_new_api_key_and_webhook_secret_never_travel_in_a_cookie(superuser_client, space, settings):
    """Shown once, on the page after saving, from the server-side session: a signed cookie
    would hand the secret to the browser's cookie jar and every proxy log of cookies."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    saved = superuser_client.post(
        reverse("admin:spaces_apikey_add"), {"space": space.pk, "name": "admin key", "expires_at_0": "",
                                             "expires_at_1": ""}
    )
    assert saved.status_code == 302
    shown = superuser_client.get(saved["Location"])
    [raw_key] = re.findall(r"sk_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{32}", shown.content.decode())
    assert raw_key[3:11] == ApiKey.objects.get(name="admin key").prefix
    assert raw_key not in cookie_contents(saved) + cookie_contents(shown)

    saved = superuser_client.post(
        reverse("admin:webhooks_endpoint_add"),
        {"space": space.pk, "url": "http://127.0.0.1:9/hook", "event_types": ["poll.created"]},
    )
    assert saved.status_code == 302
    shown = superuser_client.get(saved["Location"])
    [secret] = re.findall(r"whsec_[A-Za-z0-9_-]{43}", shown.content.decode())
    assert secret == Endpoint.objects.get().secret
    assert secret not in cookie_contents(saved) + cookie_contents(shown)
    again = superuser_client.get(saved["Location"]).content.decode()
    assert raw_key not in again and secret not in again


def test_no_secret_key_is_written_in_the_source():
    """Without SECRET_KEY in the environment, each installation makes its own random key
    (a key in the source signs the same things for everyone who reads it)."""
    source = (Path(django_settings.BASE_DIR) / "config" / "settings.py").read_text()
    assert len(django_settings.SECRET_KEY) >= 50
    assert django_settings.SECRET_KEY not in source


def test_the_installation_key_is_made_once_private_and_shared_by_concurrent_processes(tmp_path):
    path = tmp_path / "var" / "secret_key"
    script = f"from config.secret_key import installation_secret_key as k; print(k(__import__('pathlib').Path({str(path)!r})))"
    processes = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         cwd=django_settings.BASE_DIR, env={**os.environ, "PYTHONPATH": str(django_settings.BASE_DIR)})
        for _ in range(6)
    ]
    keys = {process.communicate(timeout=30)[0].strip() for process in processes}
    assert len(keys) == 1 and len(keys.pop()) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(path.parent) == ["secret_key"]  # no temporary file left behind
    assert installation_secret_key(path) == path.read_text()
    assert installation_secret_key(tmp_path / "other" / "secret_key") != path.read_text()


def settings_under(environment: dict, *names: str) -> dict:
    """The named settings as a fresh process computes them with `environment`."""
    script = ("import django, json; django.setup(); from django.conf import settings as s; "
              f"print(json.dumps({{n: getattr(s, n, None) for n in {list(names)!r}}}))")
    env = {**os.environ, **environment, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True,
                          cwd=django_settings.BASE_DIR)
    return json.loads(done.stdout)


def test_the_back_office_works_behind_a_proxy_that_ends_tls(db, settings):
    """The documented deployment: TLS ends at the proxy, which says so in X-Forwarded-Proto.
    A browser's login then carries `Origin: https://...`, which CSRF compares with the
    request's own scheme: BEHIND_TLS_PROXY=true makes them agree and the cookies secure."""
    names = ("SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    assert settings_under({"BEHIND_TLS_PROXY": "false"}, *names) == {
        "SECURE_PROXY_SSL_HEADER": None, "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False
    }
    behind = settings_under({"BEHIND_TLS_PROXY": "true"}, *names)
    assert behind == {"SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"], "SESSION_COOKIE_SECURE": True,
                      "CSRF_COOKIE_SECURE": True}
    for name, value in behind.items():
        setattr(settings, name, tuple(value) if isinstance(value, list) else value)
    user = get_user_model().objects.create(username="op", is_staff=True, is_superuser=True)
    user.set_password("a-long-password")
    user.save()
    browser = Client(enforce_csrf_checks=True, HTTP_HOST="api.example.com", HTTP_X_FORWARDED_PROTO="https")
    form = browser.get("/admin/login/")
    assert form.cookies["csrftoken"]["secure"] is True
    login = browser.post(
        "/admin/login/?next=/admin/",
        {"username": "op", "password": "a-long-password", "csrfmiddlewaretoken": form.cookies["csrftoken"].value},
        HTTP_ORIGIN="https://api.example.com",
    )
    assert (login.status_code, login["Location"]) == (302, "/admin/")
    assert login.cookies["sessionid"]["secure"] is True


@pytest.mark.parametrize("prefix", ["\x00aaaaaaa", "aaaa.aaa", "aaa\u00e9aaaa", "aaaa'aaa"])
def test_a_key_with_a_prefix_outside_its_alphabet_is_401_and_never_looked_up(anon, db, prefix):
    """A NUL in the prefix made PostgreSQL refuse the lookup: a 500 instead of a 401
    (gunicorn drops such a header; other servers in front may not)."""
    with CaptureQueriesContext(connection) as queries:
        response = anon.get("/v1/polls", key=f"sk_{prefix}_{'a' * 32}")
    assert not [query for query in queries.captured_queries if "apikey" in query["sql"]]
    assert response.status_code == 401
    assert response.body["error"]["code"] == "UNAUTHORIZED"


def test_a_request_id_with_a_final_newline_is_replaced_not_echoed(anon, db):
    """`^...$` let "abc\\n" through, and echoing it in the X-Request-ID header crashed the
    response (header injection refused by Django, as a 500)."""
    response = anon.get("/v1/openapi", headers={"X-Request-ID": "abc\n"})
    assert response.status_code == 200
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
