"""Where webhooks may go: URL rules when saving, address checks at connect time (DNS
rebinding), no proxies, TLS still verified against the URL's host name."""

import ipaddress
import socket
import ssl
import subprocess

import pytest
from pytest_httpserver import HTTPServer

from core.errors import ServiceError
from webhooks import sender, services, targets
from webhooks.models import Attempt, Endpoint
from webhooks.tests.fixtures import run_worker

# Each special-purpose range (webhooks.addresses), class by class: its first and last
# address are refused, and where its neighbours are public, the address just outside it on
# each side is allowed.
RANGES = [
    # (range, first inside, last inside, just outside below or None, just outside above or None)
    ("0.0.0.0/8", "0.0.0.0", "0.255.255.255", None, "1.0.0.0"),
    ("10.0.0.0/8", "10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"),
    ("100.64.0.0/10", "100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"),
    ("127.0.0.0/8", "127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"),
    ("169.254.0.0/16", "169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"),
    ("172.16.0.0/12", "172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"),
    ("192.0.0.0/24", "192.0.0.8", "192.0.0.100", "191.255.255.255", "192.0.1.0"),
    ("192.0.2.0/24", "192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"),
    ("192.88.99.0/24", "192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"),
    ("192.168.0.0/16", "192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"),
    ("198.18.0.0/15", "198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"),
    ("198.51.100.0/24", "198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"),
    ("203.0.113.0/24", "203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"),
    ("224.0.0.0/4", "224.0.0.1", "239.255.255.250", "223.255.255.255", None),
    ("240.0.0.0/4", "240.0.0.1", "255.255.255.254", None, None),
    ("255.255.255.255/32", "255.255.255.255", "255.255.255.255", None, None),
    ("::/128", "::", "::", None, None),
    ("::1/128", "::1", "::1", None, None),
    ("::ffff:0:0/96", "::ffff:127.0.0.1", "::ffff:8.8.8.8", None, None),
    ("::/96", "::127.0.0.1", "::8.8.8.8", None, None),
    ("64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", None, None),
    ("100::/64", "100::", "100::ffff:ffff:ffff:ffff", None, None),
    ("100:0:0:1::/64", "100:0:0:1::", "100:0:0:1:ffff:ffff:ffff:ffff", None, None),
    ("5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
    ("fc00::/7", "fc00::1", "fd12:3456::1", None, None),
    ("fe80::/10", "fe80::1", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
    ("fec0::/10", "fec0::1", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
    ("ff00::/8", "ff02::1", "ff0e::1", None, None),
    ("2001::/23", "2001::1", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::"),
    ("2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"),
    ("2002::/16", "2002:7f00:1::", "2002:808:808::1", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"),
    ("3fff::/20", "3fff::1", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::"),
]
OUTSIDE_GLOBAL_UNICAST = ["1::1", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "4000::1", "64:ff9a::1", "8000::1", "e000::1"]
NAT64_FORBIDDEN = {"64:ff9b::7f00:1": "127.0.0.0/8", "64:ff9b::a00:1": "10.0.0.0/8", "64:ff9b::a9fe:a9fe": "169.254.0.0/16"}
ALLOWED = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808", "2a00:1450:4001::1"]


@pytest.mark.parametrize("network,first,last,below,above", RANGES, ids=[row[0] for row in RANGES])
def test_every_special_purpose_range_is_refused_and_its_neighbours_are_not(network, first, last, below, above):
    for address in (first, last):
        reason = targets.forbidden_reason(ipaddress.ip_address(address))
        assert reason is not None and f" is in {network}: " in reason, (address, reason)
    for address in (below, above):
        if address is not None:
            assert targets.forbidden_reason(ipaddress.ip_address(address)) is None, address


def test_the_table_does_not_lean_on_the_interpreters_flags():
    """The addresses the issue found accepted: Python 3.11's ipaddress calls them global."""
    for address in ("192.0.0.8", "192.0.0.100", "3fff::1"):
        assert ipaddress.ip_address(address).is_global or address == "3fff::1"
        assert targets.forbidden_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", OUTSIDE_GLOBAL_UNICAST)
def test_ipv6_outside_the_global_unicast_space_is_refused(address):
    assert "outside the IPv6 global unicast space 2000::/3" in targets.forbidden_reason(ipaddress.ip_address(address))


@pytest.mark.parametrize("address,network", NAT64_FORBIDDEN.items())
def test_nat64_is_judged_by_the_ipv4_address_it_carries(address, network):
    reason = targets.forbidden_reason(ipaddress.ip_address(address))
    assert f" is in {network}: " in reason and "NAT64" in reason


@pytest.mark.parametrize("address", ALLOWED)
def test_public_unicast_addresses_are_allowed(address):
    assert targets.forbidden_reason(ipaddress.ip_address(address)) is None


@pytest.fixture
def dns(monkeypatch):
    """Fake DNS answers for chosen names; every other name resolves as usual."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if host in answers:
            return [
                (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (ip, port, 0, 0) if ":" in ip else (ip, port))
                for ip in answers[host]
            ]
        if host.endswith(".test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, family, type, proto, flags)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def refused(space, url: str) -> str:
    with pytest.raises(ServiceError) as info:
        services.create_endpoint(space=space, url=url)
    assert Endpoint.objects.count() == 0
    return str(info.value)


@pytest.mark.parametrize("address", ["10.0.0.1", "127.0.0.1", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]",
                                     "[fe80::1]", "0.0.0.0", "[2002:7f00:1::]"])
def test_saving_refuses_an_address_literal_that_is_special(space, address):
    message = refused(space, f"https://{address}/hook")
    assert message.startswith("url: ") and "webhooks are only sent to public addresses" in message


def test_saving_refuses_a_name_that_resolves_to_a_special_address(space, dns):
    dns["intranet.test"] = ["10.0.0.7"]
    assert refused(space, "https://intranet.test/hook") == (
        "url: 10.0.0.7 is in 10.0.0.0/8: private use (RFC 1918); webhooks are only sent to public addresses"
    )


def test_saving_refuses_localhost(space):
    assert "127.0.0.0/8: loopback" in refused(space, "https://localhost/hook")


def test_one_special_answer_among_public_ones_is_enough_to_refuse(space, dns):
    dns["mixed.test"] = ["93.184.216.34", "::1"]
    assert "::1 is in ::1/128: loopback" in refused(space, "https://mixed.test/hook")


@pytest.mark.parametrize(
    "url,message",
    [
        ("http://hooks.test/x", "url: the URL must start with https://"),
        ("ftp://hooks.test/x", "url: the URL must start with https://"),
        ("https://user:pass@hooks.test/x", "url: the URL must not contain a user name or password"),
        ("https://token@hooks.test/x", "url: the URL must not contain a user name or password"),
        ("https://hooks.test/" + "a" * 2030, "url: the URL is longer than 2048 characters"),
        ("https:///x", "url: the URL has no host"),
        ("", "url: the URL is empty"),
        ("https://hooks.test/a b", "url: the URL contains spaces or control characters"),
        ("https://hooks.test:99999/x", "url: the URL is not valid (Port out of range 0-65535)"),
        ("https://nowhere.test/x", "url: the host 'nowhere.test' cannot be resolved"),
    ],
)
def test_saving_refuses_bad_urls(space, dns, url, message):
    dns["hooks.test"] = ["93.184.216.34"]
    assert refused(space, url).startswith(message)


def test_a_public_https_url_is_saved(space, dns):
    dns["hooks.test"] = ["93.184.216.34", "2606:4700:4700::1111"]
    url = "https://hooks.test/" + "a" * (2048 - len("https://hooks.test/"))
    endpoint, _ = services.create_endpoint(space=space, url=url)
    assert endpoint.url == url


def test_dns_rebinding_is_stopped_at_connect_time(space, dns, raw_receiver, make_space):
    """Saved while the name pointed to a public address; at send time it points to a
    loopback address where something listens: nothing is sent there."""
    dns["rebind.test"] = ["93.184.216.34"]
    endpoint, _ = services.create_endpoint(space=space, url=f"https://rebind.test:{raw_receiver.port}/hook")
    dns["rebind.test"] = ["127.0.0.1"]
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    attempt = Attempt.objects.get()
    assert not attempt.succeeded
    assert attempt.error == ("refused: 127.0.0.1 is in 127.0.0.0/8: loopback (RFC 1122); webhooks are only sent to "
                             "public addresses (WEBHOOKS_ALLOW_PRIVATE_URLS is off in the sending process)")
    assert raw_receiver.connections == 0


def test_a_url_saved_under_the_development_switch_is_refused_once_it_is_off(hook, receiver, space, settings):
    receiver.expect_request("/hook").respond_with_data("ok")
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    assert receiver.log == []
    assert Attempt.objects.get().error == (
        "refused: the URL must start with https:// (WEBHOOKS_ALLOW_PRIVATE_URLS is off in the sending process)"
    )


def test_every_failed_attempt_is_logged_with_what_happens_next(hook, receiver, space, settings, caplog):
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    event = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    with caplog.at_level("WARNING", logger="service.webhooks"):
        run_worker()
    [record] = [r for r in caplog.records if r.getMessage() == "webhook attempt failed"]
    delivery = Attempt.objects.get().delivery
    assert record.levelname == "WARNING"
    assert (record.endpoint, record.event, record.event_type, record.delivery, record.attempt_number) == (
        hook[0].pk, event.pk, "poll.created", delivery.pk, 1)
    assert (record.status_code, record.error) == (500, "HTTP 500")
    assert record.then.startswith("retry at ") and record.then.endswith("Z")


def test_an_endpoint_that_needs_the_development_switch_is_flagged_where_it_is_added(space, settings, capsys):
    from io import StringIO

    from django.core.management import call_command

    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    assert targets.private_switch_needed("http://127.0.0.1:9001/hook")
    assert targets.private_switch_needed("https://10.1.2.3/hook")
    assert not targets.private_switch_needed("https://93.184.216.34/hook")
    err = StringIO()
    call_command("webhooks", "add", space.pk, "http://127.0.0.1:9001/hook", stdout=StringIO(), stderr=err)
    assert "Warning: this URL is accepted only because WEBHOOKS_ALLOW_PRIVATE_URLS=true here" in err.getvalue()
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    assert not targets.private_switch_needed("http://127.0.0.1:9001/hook")  # refused outright instead


def test_the_sender_connects_to_the_address_it_vetted(dns, receiver, make_endpoint, space):
    """With the development switch on, a name is sent to the address our own resolution
    gave, and the Host header still names the host."""
    dns["hooks.test"] = ["127.0.0.1"]
    receiver.expect_request("/hook").respond_with_data("ok")
    make_endpoint(f"http://hooks.test:{receiver.port}/hook")
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    [(request, _)] = receiver.log
    assert request.headers["Host"] == f"hooks.test:{receiver.port}"
    assert Attempt.objects.get().succeeded


def test_proxies_from_the_environment_are_ignored(monkeypatch, receiver, hook, space, raw_receiver):
    receiver.expect_request("/hook").respond_with_data("ok")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, raw_receiver.url(""))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    assert raw_receiver.connections == 0
    assert len(receiver.log) == 1 and Attempt.objects.get().succeeded


# --- TLS: the certificate is checked against the URL's name, not the address we dial ---


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A throwaway CA and a certificate for `hooks.test`, made with the openssl tool."""
    folder = tmp_path_factory.mktemp("tls")

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Webhook test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=hooks.test")
    (folder / "san.ext").write_text("subjectAltName=DNS:hooks.test\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return folder


@pytest.fixture
def tls_receiver(tls_files, monkeypatch):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files / "server.pem", tls_files / "server.key")
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.start()
    monkeypatch.setattr(sender, "VERIFY", str(tls_files / "ca.pem"))
    yield server
    server.clear()
    server.stop()


def test_https_delivery_verifies_the_certificate_for_the_host_name(tls_receiver, dns, make_endpoint, space):
    dns["hooks.test"] = ["127.0.0.1"]
    dns["other.test"] = ["127.0.0.1"]
    tls_receiver.expect_request("/hook").respond_with_data("ok")
    make_endpoint(f"https://hooks.test:{tls_receiver.port}/hook")
    make_endpoint(f"https://other.test:{tls_receiver.port}/hook")
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    outcomes = {a.delivery.endpoint.url.split(":")[1]: a for a in Attempt.objects.select_related("delivery__endpoint")}
    assert outcomes["//hooks.test"].succeeded
    assert not outcomes["//other.test"].succeeded
    assert outcomes["//other.test"].error == (
        "TLS error: certificate not accepted (Hostname mismatch, certificate is not valid for 'other.test'.)"
    )
    assert len(tls_receiver.log) == 1
