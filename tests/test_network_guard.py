import socket

import pytest


def test_outbound_connections_are_refused():
    with socket.socket() as sock, pytest.raises(RuntimeError, match="must not reach the network"):
        sock.connect(("203.0.113.7", 443))


def test_loopback_connections_are_allowed():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.socket() as client:
            client.connect(server.getsockname())
            conn, _ = server.accept()
            conn.close()
