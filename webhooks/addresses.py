"""The addresses webhooks may never reach: an explicit table, not the interpreter's.

Python's `ipaddress` flags (`is_private`, `is_global`, ...) change between versions and
missed ranges such as 192.0.0.0/24 and 3fff::/20 in the version this service runs on. The
table below follows the IANA IPv4 and IPv6 Special-Purpose Address Registries: every entry
that is not globally reachable (or has no such attribute) is refused, with these choices:

- Whole blocks are refused where the registry lists a few globally reachable anycast
  services inside them (192.0.0.0/24 holds 192.0.0.9 and 192.0.0.10; 2001::/23 holds
  2001:1::1-3, 2001:3::/32, 2001:4:112::/48, 2001:20::/28 and 2001:30::/28): they are
  protocol infrastructure, never a webhook receiver.
- IPv6 outside the global unicast space 2000::/3 is refused (IPv4-mapped and -compatible
  forms, multicast, ULA, link-local, site-local, discard, reserved), except the NAT64
  well-known prefix 64:ff9b::/96, judged by the IPv4 address it carries.
- Transition prefixes that embed another address (6to4 2002::/16, Teredo 2001::/32) are
  refused whole: what they lead to depends on relays outside our control.
"""

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class SpecialRange:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    source: str


def _table(*rows: tuple[str, str, str]) -> tuple[SpecialRange, ...]:
    return tuple(SpecialRange(ipaddress.ip_network(network), name, source) for network, name, source in rows)


IPV4_FORBIDDEN = _table(
    ("0.0.0.0/8", "this network", "RFC 791"),
    ("10.0.0.0/8", "private use", "RFC 1918"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598"),
    ("127.0.0.0/8", "loopback", "RFC 1122"),
    ("169.254.0.0/16", "link-local (cloud metadata services)", "RFC 3927"),
    ("172.16.0.0/12", "private use", "RFC 1918"),
    ("192.0.0.0/24", "IETF protocol assignments", "RFC 6890"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737"),
    ("192.88.99.0/24", "6to4 relay anycast (deprecated)", "RFC 7526"),
    ("192.168.0.0/16", "private use", "RFC 1918"),
    ("198.18.0.0/15", "benchmarking", "RFC 2544"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737"),
    ("224.0.0.0/4", "multicast", "RFC 5771"),
    ("255.255.255.255/32", "limited broadcast", "RFC 919"),
    ("240.0.0.0/4", "reserved", "RFC 1112"),
)

IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")  # RFC 4291
IPV6_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: judged by the IPv4 address it carries

IPV6_FORBIDDEN = _table(
    # Outside 2000::/3, listed so that the refusal names them (everything else there is
    # refused as outside the global unicast space).
    ("::/128", "unspecified", "RFC 4291"),
    ("::1/128", "loopback", "RFC 4291"),
    ("::ffff:0:0/96", "IPv4-mapped", "RFC 4291"),
    ("::/96", "IPv4-compatible (deprecated)", "RFC 4291"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", "RFC 8215"),
    ("100::/64", "discard-only", "RFC 6666"),
    ("100:0:0:1::/64", "dummy prefix", "RFC 9780"),
    ("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602"),
    ("fc00::/7", "unique local", "RFC 4193"),
    ("fe80::/10", "link-local", "RFC 4291"),
    ("fec0::/10", "site-local (deprecated)", "RFC 3879"),
    ("ff00::/8", "multicast", "RFC 4291"),
    # Inside 2000::/3.
    ("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)", "RFC 2928"),
    ("2001:db8::/32", "documentation", "RFC 3849"),
    ("2002::/16", "6to4", "RFC 3056"),
    ("3fff::/20", "documentation", "RFC 9637"),
)


def forbidden_reason(address: IPAddress) -> str | None:
    """Why webhooks may not connect to `address`, or None if it is globally reachable."""
    if address.version == 4:
        table = IPV4_FORBIDDEN
    else:
        if address in IPV6_NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
            reason = forbidden_reason(embedded)
            return f"{reason} (translated from {address}, NAT64)" if reason else None
        table = IPV6_FORBIDDEN
    for special in table:
        if address in special.network:
            return f"{address} is in {special.network}: {special.name} ({special.source})"
    if address.version == 6 and address not in IPV6_GLOBAL_UNICAST:
        return f"{address} is outside the IPv6 global unicast space {IPV6_GLOBAL_UNICAST} (RFC 4291)"
    return None
