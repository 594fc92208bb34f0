"""Where the navigator may connect: the address policy of every URL it fetches or calls (ADR 0032).

One policy, checked twice:

- when a URL is stored — an operator's endpoint or machine URL, a node's advertised URL
  (``Destinations.check_url``): ``http`` or ``https``; no user name or password (a server's
  credentials live on its node, SPEC §10); a host in its one canonical form — a DNS name, a
  dotted-quad IPv4 address or a bracketed IPv6 address, never a numeric form a resolver reads as
  another address (``0x7f000001``, ``127.1``, ``2130706433``, ``0177.0.0.1``); an address written
  in it inside the allowed networks; and not the navigator's own listen address.
- when a connection is opened (``GuardedBackend``, the network backend of every outbound client):
  the host is resolved here and only an allowed address is connected to, then the peer actually
  reached is checked again. A name that resolved to an allowed address when it was registered
  and to a forbidden one since (DNS rebinding) reaches nothing forbidden.

An address is allowed when it is in one of ``MESHNAV_ENDPOINT_NETWORKS`` (default every
address: ``0.0.0.0/0,::/0``) and in none of ``NEVER`` — link-local (where the clouds' metadata
services answer), the metadata addresses outside it, unspecified, multicast and reserved — which
no setting opens. An IPv6 address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by
that IPv4 address too.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2

from navigator.errors import InvalidArguments, error_chain
from navigator.nodes import sdk

__all__ = [
    "ANY_NETWORK",
    "NEVER",
    "REFUSED_AT_CONNECT",
    "DestinationRefused",
    "Destinations",
    "GuardedBackend",
    "HostUnresolved",
    "caused_by",
    "parse_networks",
]

logger = logging.getLogger("meshnav.navigator.destinations")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: Resolves a host name to the addresses a connection may be made to.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

#: The default of ``MESHNAV_ENDPOINT_NETWORKS``: every address, loopback and private networks
#: included (a mesh runs on them), less ``NEVER``.
ANY_NETWORK = "0.0.0.0/0,::/0"

#: Addresses never connected to, whatever the setting says.
NEVER: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(text)
    for text in (
        "0.0.0.0/8",  # "this network": 0.0.0.0 reaches the navigator's own machine
        "169.254.0.0/16",  # link-local: 169.254.169.254 is AWS's, GCP's, Azure's metadata
        "100.100.100.200/32",  # Alibaba Cloud's metadata service
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/128",  # unspecified
        "fe80::/10",  # link-local
        "fd00:ec2::254/128",  # AWS's metadata service over IPv6
        "ff00::/8",  # multicast
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_DOTTED_QUAD = re.compile(
    r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z"
)
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
#: A last label a URL parser reads as an IPv4 number (WHATWG URL: decimal, ``0x`` hex, octal).
_NUMERIC_LABEL = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)\Z")

NETWORKS_SETTING = "MESHNAV_ENDPOINT_NETWORKS"
_CREDENTIALS = (
    "The URL holds a user name or password; a server's credentials stay on its node: give the"
    " URL without them."
)
_NOT_CANONICAL = (
    "The URL's host is not in its canonical form: give a DNS name, a dotted-quad IPv4 address or"
    " a bracketed IPv6 address."
)
_NEVER_REACHED = (
    "The URL's address is one the navigator never connects to (link-local, cloud metadata,"
    " multicast, unspecified or reserved)."
)
_UNSPECIFIED = (
    "The URL's address is a listen-all one, no address to connect to: give the one the"
    " navigator reaches the server at (a node's --advertise URL)."
)
_OUTSIDE = (
    f"The URL's address is outside the networks the navigator may connect to; an operator allows"
    f" it in {NETWORKS_SETTING}."
)
_OWN = "The URL is the navigator's own: give the node's or the server's."
#: A server registered by URL whose host resolves only to refused addresses (``pull_tools``).
REFUSED_AT_CONNECT = (
    "The endpoint's host resolves only to addresses the navigator may not connect to; an"
    f" operator allows its network in {NETWORKS_SETTING}, or gives the server's address."
)


def parse_networks(text: str) -> tuple[IPNetwork, ...]:
    """``MESHNAV_ENDPOINT_NETWORKS``: networks (``10.0.0.0/8``) or addresses, comma- or
    space-separated; ``ValueError`` without repeating the text."""
    networks = []
    for item in text.replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{NETWORKS_SETTING} holds an item that is no network") from None
    if not networks:
        raise ValueError(f"{NETWORKS_SETTING} names no network")
    return tuple(networks)


def _embedded(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and reaches: mapped, NAT64 or 6to4."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


async def system_resolve(host: str, port: int) -> Sequence[str]:
    """The system resolver's addresses for ``host``, in its order."""
    found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(entry[4][0]) for entry in found]


class HostUnresolved(httpcore2.ConnectError):
    """The host name did not resolve. A type of its own, since httpcore's pool re-raises a
    connection's failure ``from None``: the resolver's own error does not survive as a cause."""


class DestinationRefused(httpcore2.ConnectError):
    """A connection to an address the policy refuses (raised before one byte is sent)."""


def caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``error``, a group it holds, or an error it was raised from or during is a
    ``kind`` (the MCP client wraps a transport's errors in groups and its own errors)."""
    return any(isinstance(current, kind) for current in error_chain(error))


@dataclass(frozen=True, slots=True)
class Destinations:
    """The policy: the allowed networks, and the navigator's own listen address."""

    networks: tuple[IPNetwork, ...] = field(default_factory=lambda: parse_networks(ANY_NETWORK))
    #: The navigator's own ``(host, port)``: a URL or a connection to it is refused.
    own: tuple[str, int] | None = None
    resolve: Resolver = system_resolve

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be connected to, or ``None`` when it may."""
        judged = [address, *filter(None, [_embedded(address)])]
        if any(a.is_unspecified or a in _THIS_NETWORK for a in judged):
            return _UNSPECIFIED
        if any(a in n for a in judged for n in NEVER if a.version == n.version):
            return _NEVER_REACHED
        reached = judged[-1]
        if not any(reached in n for n in self.networks if reached.version == n.version):
            return _OUTSIDE
        return None

    def is_own(self, address: IPAddress, port: int, local: IPAddress | None = None) -> bool:
        """Whether ``address:port`` is the navigator itself: its listen port on loopback, on its
        listen address, or on the address the connection leaves from (``local``: this machine)."""
        if self.own is None or port != self.own[1]:
            return False
        reached = _embedded(address) or address
        return reached.is_loopback or str(reached) == self.own[0] or reached == local

    def check_url(self, url: str, pointer: str) -> str:
        """``url`` as stored; ``InvalidArguments`` (at ``pointer``) naming the rule it breaks."""
        parts = urlsplit(url)
        if "@" in parts.netloc:
            raise InvalidArguments(_CREDENTIALS, extra={"pointer": pointer})
        try:
            host = (parts.hostname or "").lower()
            if httpx2.URL(url).raw_host.decode("ascii").lower() != host:  # what is connected to
                raise ValueError("read as two hosts")
            address = _literal(parts.netloc, host)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except (ValueError, httpx2.InvalidURL):
            raise InvalidArguments(_NOT_CANONICAL, extra={"pointer": pointer}) from None
        if address is not None:
            reason = _OWN if self.is_own(address, port) else self.refusal(address)
            if reason is not None:
                raise InvalidArguments(reason, extra={"pointer": pointer})
        elif host.rstrip(".") == "localhost" and self.is_own(ipaddress.ip_address("::1"), port):
            raise InvalidArguments(_OWN, extra={"pointer": pointer})
        return url

    def transport(
        self, *, verify: ssl.SSLContext | bool, limits: httpx2.Limits
    ) -> httpx2.AsyncHTTPTransport:
        """An HTTP transport (the environment's proxies not read) that connects as this policy
        allows: ``GuardedBackend`` under its connection pool."""
        return _GuardedTransport(self, verify=verify, limits=limits)


def _literal(netloc: str, host: str) -> IPAddress | None:
    """The address the URL's host writes, ``None`` for a DNS name; ``ValueError`` for a host in
    any other form."""
    if netloc.startswith("["):
        if "%" in host:  # a zone (``%25eth0``) names an interface of the navigator's machine
            raise ValueError("a zone")
        return ipaddress.IPv6Address(host)
    if _DOTTED_QUAD.match(host):
        return ipaddress.IPv4Address(host)
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if (
        not host.isascii()
        or len(host) > 253
        or not all(_LABEL.match(label) for label in labels)
        or _NUMERIC_LABEL.match(labels[-1])
    ):
        raise ValueError("not a DNS name")
    return None


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses ``destinations`` allows: a host name is resolved here and each
    allowed address tried in turn, by address, so that what is checked is what is reached; the
    peer and the connection's own end are checked again once connected (the navigator itself)."""

    def __init__(self, destinations: Destinations) -> None:
        self._destinations = destinations
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        policy = self._destinations
        try:
            candidates = [ipaddress.ip_address(host)]
        except ValueError:
            candidates = await self._resolve(host, port, timeout)
        allowed = [a for a in candidates if policy.refusal(a) is None]
        if not allowed:
            logger.warning("refused a connection: the host's addresses are outside the policy")
            raise DestinationRefused("the address is outside the navigator's endpoint policy")
        failure: Exception | None = None
        for address in allowed:
            try:
                stream = await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as error:
                failure = error
                continue
            await self._check_peer(stream, port)
            return stream
        assert failure is not None
        raise failure

    async def _resolve(self, host: str, port: int, within: float | None) -> list[IPAddress]:
        """``host``'s addresses, resolved within the connection's own timeout."""
        with anyio.move_on_after(within) as scope:
            try:
                found = await self._destinations.resolve(host, port)
                return [ipaddress.ip_address(a.partition("%")[0]) for a in found]
            except (OSError, ValueError):
                raise HostUnresolved("the host name did not resolve") from None
        assert scope.cancelled_caught
        raise httpcore2.ConnectTimeout("the host name did not resolve in time")

    async def _check_peer(self, stream: httpcore2.AsyncNetworkStream, port: int) -> None:
        peer, local = (
            _address_of(stream.get_extra_info(k)) for k in ("server_addr", "client_addr")
        )
        policy = self._destinations
        if peer is None or policy.refusal(peer) is not None or policy.is_own(peer, port, local):
            logger.warning("refused a connection: its peer is outside the policy, or the navigator")
            await stream.aclose()
            raise DestinationRefused("the peer is outside the navigator's endpoint policy")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise DestinationRefused("the navigator connects to no unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _address_of(info: object) -> IPAddress | None:
    if isinstance(info, tuple) and info:
        try:
            return ipaddress.ip_address(str(info[0]).partition("%")[0])
        except ValueError:
            return None
    return None


class _GuardedTransport(httpx2.AsyncHTTPTransport):
    """``httpx2``'s own transport over a pool whose network backend is ``GuardedBackend``
    (httpx2 takes no backend itself; its pool does)."""

    def __init__(
        self, destinations: Destinations, *, verify: ssl.SSLContext | bool, limits: httpx2.Limits
    ) -> None:
        context = httpx2.create_ssl_context(verify=verify, trust_env=False)  # a context: itself
        super().__init__(verify=context, trust_env=False, limits=limits)
        pool = httpcore2.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(destinations),
        )
        sdk.use_pool(self, pool)
