"""Broker outages on demand, for the tests and ``benchmarks/reliability.py``: a TCP proxy in front of a
broker that can be cut and restored.

The bundled broker keeps its data in memory, so restarting it is not an outage but a new, empty
broker. A real Kafka that restarts comes back with its topics and committed offsets; what its
clients see meanwhile is connections reset and refused. The proxy gives them exactly that while the
broker behind it keeps its state: ``cut()`` closes every connection and refuses new ones (the port
stays bound, so nothing else takes it); ``restore()`` lets them through again. The broker must
advertise the proxy's address (``EmbeddedBroker(advertised_port=...)``), or clients would reach it
directly once they have read its metadata.
"""

from __future__ import annotations

import asyncio
import threading

from .broker import free_port


class FaultProxy:
    def __init__(self, target_port: int, port: int | None = None, host: str = "127.0.0.1"):
        self.host, self.target_port = host, target_port
        self.port = port or free_port()
        self.up = True
        self.connections = 0  # accepted while up, in all
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "FaultProxy":
        self._thread.start()
        self._call(self._start())
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:  # refused: the client sees its connection reset at once
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._writers.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while self.up and (data := await reader.read(65536)):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    def cut(self) -> None:
        """The broker goes away: every open connection is reset, new ones are refused."""
        self._call(self._cut())

    async def _cut(self) -> None:
        self.up = False
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def restore(self) -> None:
        self.up = True

    def stop(self) -> None:
        async def close():
            await self._cut()
            if self._server is not None:
                self._server.close()
        if self._thread.is_alive():
            self._call(close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def _call(self, coroutine) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
