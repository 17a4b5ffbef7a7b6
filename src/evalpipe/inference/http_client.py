"""A lean asyncio HTTP/1.1 client for the OpenAI-compatible backend: keep-alive connections, one
request in flight per connection, responses parsed by httptools (llhttp, as uvicorn uses it).

A request and its reply cost a fraction of the client CPU that aiohttp's or httpx's machinery
takes (httpx's pool also scans every waiting request for each one it assigns, so it slows down
as the concurrency rises; docs/inference.md has the measurements). The backend bounds the
requests in flight itself (one worker task per concurrent request), so the pool only keeps idle
connections per server for reuse, and never waits.

What it does not do, because an OpenAI-compatible API does not need it: redirects, cookies,
compression (no ``Accept-Encoding`` is sent), proxies (it connects straight to the URL's host),
HTTP/2. ``https://`` URLs use the system's certificate store.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httptools


class TransportError(Exception):
    """No answer: the connection was refused, dropped or timed out, or the reply was not HTTP."""


@dataclass(frozen=True)
class Reply:
    """A server's answer, read whole: status, headers (names lower-cased) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass(frozen=True)
class Origin:
    """Where a URL's requests go: scheme, host and port, and the ``Host`` header to send."""

    scheme: str
    host: str
    port: int
    host_header: bytes = field(compare=False)

    @staticmethod
    def split(url: str) -> tuple[Origin, str]:
        """The origin of ``url`` and its path (with the query), e.g. ``/v1/chat/completions``."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http(s) URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        if parts.port:
            shown += f":{parts.port}"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return Origin(parts.scheme, host, port, shown.encode("idna")), path


class _Connection(asyncio.Protocol):
    """One keep-alive connection; ``request`` sends one request and waits for its whole reply."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Reply] | None = None
        self.closed = False
        self.used = False
        self.received = False
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._unframed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(TransportError(f"not an HTTP reply ({exc})"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is None and self._unframed and self.waiter is not None and not self.waiter.done():
            # a reply with neither Content-Length nor chunks ends with its connection
            status = self.parser.get_status_code()
            self.waiter.set_result(Reply(status, self._headers, b"".join(self._body)))
        self._fail(TransportError(f"connection dropped ({exc or 'closed by the server'})"))

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._headers, self._body, self._unframed = {}, [], False

    def on_headers_complete(self) -> None:
        self._unframed = not {"content-length", "transfer-encoding"} & self._headers.keys()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if not self.parser.should_keep_alive():
            self.close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(Reply(status, self._headers, b"".join(self._body)))

    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def request(self, head: bytes, body: bytes) -> Reply:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.used, self.received = True, False
        self.transport.write(head + body)
        try:
            return await self.waiter
        finally:
            self.waiter = None


class Client:
    """Keep-alive connections per origin, reused last-in first-out; use inside one event loop.

    Parameters
    ----------
    headers:
        Sent with every request (e.g. ``Authorization``).
    timeout_s:
        Seconds for connecting, sending and reading one whole reply.
    """

    def __init__(self, headers: dict[str, str], *, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._extra = b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers.items())
        self._idle: defaultdict[Origin, list[_Connection]] = defaultdict(list)
        self._ssl: ssl.SSLContext | None = None

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = None
        if origin.scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            tls = self._ssl
        try:
            _, conn = await loop.create_connection(_Connection, origin.host, origin.port, ssl=tls)
        except OSError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        return conn

    def _head(self, method: bytes, origin: Origin, path: str, length: int) -> bytes:
        return b"".join(
            (
                method,
                b" ",
                path.encode("latin-1"),
                b" HTTP/1.1\r\nHost: ",
                origin.host_header,
                b"\r\nUser-Agent: evalpipe\r\nAccept: application/json\r\n",
                b"Content-Type: application/json\r\n" if length else b"",
                b"Content-Length: %d\r\n" % length,
                self._extra,
                b"\r\n",
            )
        )

    async def request(self, method: str, url: str, body: bytes = b"") -> Reply:
        """Send one request and read its reply; :class:`TransportError` when there is none.

        A reused connection that the server closed while it was idle (keep-alive timeouts) is
        replaced once, silently: the request never reached the server.
        """
        origin, path = Origin.split(url)
        head = self._head(method.encode("ascii"), origin, path, len(body))
        try:
            async with asyncio.timeout(self.timeout_s):
                for _ in range(2):
                    conn = self._take(origin) or await self._connect(origin)
                    reused = conn.used
                    try:
                        reply = await conn.request(head, body)
                    except TransportError:
                        conn.close()
                        if reused and not conn.received:
                            continue
                        raise
                    except BaseException:  # timed out or cancelled: the reply may still come
                        conn.close()
                        raise
                    if not conn.closed:
                        self._idle[origin].append(conn)
                    return reply
                raise TransportError("connection dropped twice before the request was sent")
        except TimeoutError as exc:
            raise TransportError(f"TimeoutError: no reply within {self.timeout_s:g} s") from exc

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
