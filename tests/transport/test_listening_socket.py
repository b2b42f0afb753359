"""The socket `handrail serve` listens on: its accepted connections send each answer at
once (TCP_NODELAY), so a kept-alive client does not wait for its own delayed ACK."""

from __future__ import annotations

import asyncio
import socket

import pytest

from handrail.transport.http import bind


async def _nodelay_of_an_accepted_connection(host: str) -> int:
    """Serves `bind()`'s socket the way uvicorn does (loop.create_server with sock=) and
    reads TCP_NODELAY on the server's side of one accepted connection."""
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Record(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    listening = bind(host, 0)
    server = await asyncio.get_running_loop().create_server(Record, sock=listening)
    try:
        port = listening.getsockname()[1]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(accepted, 10)
        finally:
            writer.close()
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connections_accepted_on_the_served_socket_send_without_waiting(host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("this machine has no IPv6")
    try:
        nodelay = asyncio.run(_nodelay_of_an_accepted_connection(host))
    except OSError as exc:
        if host == "::1":
            pytest.skip(f"IPv6 loopback unavailable here: {exc}")
        raise
    assert nodelay != 0
