"""Where a registry host is, and so how it may be spoken to: the one rule for plain HTTP and
for where credentials may go. Everything that asks 'is this loopback?' asks here.

Plain HTTP is for real loopback addresses only, parsed, never matched by prefix (a prefix
match gave `localhost.evil.com` and `127.example.com` plain HTTP with credentials):
`localhost`, 127.0.0.0/8 and `[::1]`, with any port; plus the hosts the user lists,
comma-separated, in BUILD_GRAPH_INSECURE_REGISTRIES (compared as written, host:port). That is
the Docker daemon's own default (it treats 127.0.0.0/8 as insecure and wants the rest listed).
A loopback registry that speaks TLS (a tunnel to a cloud registry, a local TLS mirror) is
listed in BUILD_GRAPH_TLS_REGISTRIES and spoken to over HTTPS, as any other host.

Credentials travel only where nobody else can read them: over HTTPS, or to a real loopback
address. A listed insecure registry that is not loopback is spoken to anonymously.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse

INSECURE_ENV = "BUILD_GRAPH_INSECURE_REGISTRIES"
TLS_ENV = "BUILD_GRAPH_TLS_REGISTRIES"


def hostname(host: str) -> str | None:
    """'127.0.0.1:5000' -> '127.0.0.1', '[::1]:5000' -> '::1', 'Reg.example' ->
    'reg.example'; None when `host` is not a host[:port] at all."""
    if not host or any(c in host for c in "/?#@\\ \t\r\n"):
        return None
    try:
        parts = urllib.parse.urlsplit(f"//{host}")
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        return None
    return parts.hostname or None


def is_loopback(host: str) -> bool:
    """Whether `host` ('name[:port]', '[v6][:port]') is this machine's loopback interface."""
    name = hostname(host)
    if name is None:
        return False
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a name other than 'localhost': DNS decides where it goes, not us
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def is_internal(host: str) -> bool:
    """Loopback, or a link-local address (169.254.0.0/16, fe80::/10: where a cloud machine's
    metadata service answers). Names other than 'localhost' are not resolved here."""
    if is_loopback(host):
        return True
    name = hostname(host)
    try:
        return name is not None and ipaddress.ip_address(name).is_link_local
    except ValueError:
        return False


def listed(variable: str = INSECURE_ENV) -> frozenset[str]:
    """The hosts the user listed in `variable` (comma-separated host:port)."""
    raw = os.environ.get(variable, "")
    return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())


def listed_insecure() -> frozenset[str]:
    """The hosts the user listed in BUILD_GRAPH_INSECURE_REGISTRIES."""
    return listed(INSECURE_ENV)


def plain_http(host: str) -> bool:
    """Whether the registry at `host` is spoken to over plain HTTP (else HTTPS)."""
    if host.lower() in listed(TLS_ENV):
        return False
    return is_loopback(host) or host.lower() in listed_insecure()


def scheme(host: str) -> str:
    return "http" if plain_http(host) else "https"


def may_send_credentials(url: str) -> bool:
    """Whether credentials may be sent to the absolute `url` (a registry or a token realm):
    over HTTPS, or over HTTP to a real loopback address; never anywhere else."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.netloc)
    return parts.scheme == "http" and is_loopback(parts.netloc)
