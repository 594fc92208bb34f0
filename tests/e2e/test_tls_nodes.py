"""A node serving TLS (SPEC §6: "``https`` URLs work, with the node serving TLS when given a
certificate and key") is reached by a navigator that trusts its certificate's CA, given with
``--node-ca`` / ``MESHNAV_NODE_CA``; a navigator that does not trust it answers
``node_unavailable`` rather than calling it unverified."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.harness import (
    MeshHarness,
    NodeProcess,
    _wait_http,
    free_port,
    mcp_client,
    serving,
    stop,
    tool_result,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "meshnav test node")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "node.pem", directory / "node.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_a_tls_node_is_called_by_a_navigator_that_trusts_its_ca(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    mesh = MeshHarness(tmp_path / "run")
    trusting = None
    try:
        agent = mesh.principal("agent")
        mesh.grant("agent", "*/*/*")
        mesh.start_navigator()
        port = free_port()
        arguments = ["node", "serve", "--name", "tls1", "--navigator", mesh.navigator_url]
        arguments += ["--listen", f"127.0.0.1:{port}", "--advertise", f"https://127.0.0.1:{port}"]
        arguments += ["--tls-cert", str(cert), "--tls-key", str(key), "--module", "node"]
        token = mesh.principal("node-tls1", ["mesh:node"])
        process = mesh._spawn(arguments, "node-tls1.log", {"MESHNAV_TOKEN": token})
        mesh.nodes["tls1"] = NodeProcess("tls1", port, arguments, process)
        mesh.wait_registered("tls1", process)

        trusting_port = free_port()
        listen = f"127.0.0.1:{trusting_port}"
        trusting = mesh._spawn(
            ["navigator", "serve", "--listen", listen, "--database", mesh.database_url],
            "navigator-trusting.log",
            {"MESHNAV_NODE_CA": str(cert)},
        )
        trusting_url = f"http://127.0.0.1:{trusting_port}"
        _wait_http(trusting_url + "/healthz", trusting, mesh.root / "navigator-trusting.log")

        call = {"address": "tls1/node/uptime"}
        async with mcp_client(trusting_url, agent) as client:
            trusted = await client.call_tool_mcp("call", call)
        async with mcp_client(mesh.navigator_url, agent) as client:
            untrusted = tool_result(await client.call_tool_mcp("call", call))
        assert not trusted.is_error, trusted
        assert untrusted["error"] == "node_unavailable"
    finally:
        if trusting is not None:
            stop(trusting)
        mesh.close()


async def test_a_tls_server_registered_by_url_is_read_with_the_same_trust(tmp_path: Path) -> None:
    """``register --endpoint https://…`` pulls the server's tools with the trust its calls use:
    with ``--node-ca`` given, a server with that CA's certificate was callable but could not be
    registered."""
    from fastmcp import FastMCP

    from navigator.catalog.upstream import pull_tools
    from navigator.errors import NodeUnavailable
    from navigator.settings import NavigatorSettings

    cert, key = _self_signed(tmp_path)
    server_app = FastMCP("tls-upstream")

    @server_app.tool
    def hello() -> str:
        """Say hello."""
        return "hi"

    settings = NavigatorSettings(database_url="sqlite://", node_ca=str(cert))
    async with serving(server_app.http_app(), ssl_certfile=str(cert), ssl_keyfile=str(key)) as port:
        url = f"https://127.0.0.1:{port}/mcp"
        pulled = await pull_tools(url, settings.node_trust())
        with pytest.raises(NodeUnavailable) as untrusted:
            await pull_tools(url)  # the system's CAs alone
    assert [tool["name"] for tool in pulled] == ["hello"]
    # the operator is told it is the certificate's trust, and where to give it (ADR 0036)
    assert untrusted.value.extra["cause"] == "tls"
    assert "--node-ca" in untrusted.value.message
