"""A Kafka broker stand-in whose group coordinator answers every OffsetFetch "not coordinator".

It speaks just enough of the Kafka protocol for a client to ask a group's committed offsets:
ApiVersions (v0-v3), Metadata (v0-v4: one broker, node 1 = itself, and one topic), FindCoordinator
(v0-v2: itself) and OffsetFetch (v0-v5), whose answer carries no partitions and the group-level
error NOT_COORDINATOR (16), as a real broker answers while its group coordinator moves (a broker
starved of CPU and fenced by its controller). Other requests close the connection.

Source: apache/kafka 4.1 clients/src/main/resources/common/message/{ApiVersions,Metadata,
FindCoordinator,OffsetFetch}{Request,Response}.json (field order per version).
"""

from __future__ import annotations

import socket
import struct
import threading

API_VERSIONS, METADATA, FIND_COORDINATOR, OFFSET_FETCH = 18, 3, 10, 9
#: ``{api key: (min version, max version)}`` advertised in ApiVersions; none is flexible except
#: ApiVersions v3 itself, whose response body is.
SUPPORTED = {API_VERSIONS: (0, 3), METADATA: (0, 4), FIND_COORDINATOR: (0, 2),
             OFFSET_FETCH: (0, 5)}
NOT_COORDINATOR = 16
NODE_ID = 1


def _i16(value: int) -> bytes:
    return struct.pack(">h", value)


def _i32(value: int) -> bytes:
    return struct.pack(">i", value)


def _string(value: str | None) -> bytes:
    if value is None:
        return _i16(-1)
    data = value.encode()
    return _i16(len(data)) + data


def _array(items: list[bytes]) -> bytes:
    return _i32(len(items)) + b"".join(items)


def _uvarint(value: int) -> bytes:
    out = b""
    while value > 0x7F:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


class NotCoordinatorBroker:
    """Listens on an ephemeral 127.0.0.1 port until :meth:`close`.

    Attributes:
        bootstrap_servers: ``127.0.0.1:<port>``.
        topic: the one topic its metadata lists (``partitions`` partitions, led by itself).
        requests: ``(api key, version)`` of every request answered, in order.
    """

    def __init__(self, topic: str = "events", partitions: int = 1):
        self.topic, self.partitions = topic, partitions
        self.requests: list[tuple[int, int]] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, name="not-coordinator-broker", daemon=True).start()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "NotCoordinatorBroker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while (size := _read(conn, 4)) is not None:
                request = _read(conn, struct.unpack(">i", size)[0])
                if request is None:
                    return
                key, version, correlation_id = struct.unpack(">hhi", request[:8])
                body = self._answer(key, version)
                if body is None:
                    return
                self.requests.append((key, version))
                message = _i32(correlation_id) + body  # response header v0 throughout
                conn.sendall(_i32(len(message)) + message)

    def _answer(self, key: int, version: int) -> bytes | None:
        if key == API_VERSIONS:
            if version >= 3:  # a flexible body: compact array, tagged fields
                apis = b"".join(_i16(k) + _i16(lo) + _i16(hi) + b"\0"
                                for k, (lo, hi) in SUPPORTED.items())
                return _i16(0) + _uvarint(len(SUPPORTED) + 1) + apis + _i32(0) + b"\0"
            apis = [_i16(k) + _i16(lo) + _i16(hi) for k, (lo, hi) in SUPPORTED.items()]
            return _i16(0) + _array(apis) + (_i32(0) if version >= 1 else b"")
        if key == METADATA:
            broker = (_i32(NODE_ID) + _string("127.0.0.1") + _i32(self.port)
                      + (_string(None) if version >= 1 else b""))
            partitions = [_i16(0) + _i32(p) + _i32(NODE_ID) + _array([_i32(NODE_ID)])
                          + _array([_i32(NODE_ID)]) for p in range(self.partitions)]
            topic = (_i16(0) + _string(self.topic) + (b"\0" if version >= 1 else b"")
                     + _array(partitions))
            return ((_i32(0) if version >= 3 else b"") + _array([broker])
                    + (_string("not-coordinator") if version >= 2 else b"")
                    + (_i32(NODE_ID) if version >= 1 else b"") + _array([topic]))
        if key == FIND_COORDINATOR:
            return ((_i32(0) if version >= 1 else b"") + _i16(0)
                    + (_string(None) if version >= 1 else b"")
                    + _i32(NODE_ID) + _string("127.0.0.1") + _i32(self.port))
        if key == OFFSET_FETCH:
            return ((_i32(0) if version >= 3 else b"") + _array([])
                    + (_i16(NOT_COORDINATOR) if version >= 2 else b""))
        return None


def _read(conn: socket.socket, n: int) -> bytes | None:
    """``n`` bytes from ``conn``; None once the client hung up (or crashed: a reset)."""
    data = b""
    while len(data) < n:
        try:
            chunk = conn.recv(n - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data
