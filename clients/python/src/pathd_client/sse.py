"""Server-Sent Events: a frame parser, and an event stream that resumes with
``Last-Event-ID`` after a dropped connection."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Generic, Iterable, Iterator, Optional, TypeVar

import httpx

from .errors import PathdConnectionError, PathdError

if TYPE_CHECKING:
    from .client import Client

FINAL = frozenset({"deleted", "map_deleted", "map_replaced", "profile_removed", "expired"})

E = TypeVar("E")


@dataclass
class Frame:
    """One event as read off the wire."""

    data: str
    id: Optional[str] = None
    event: Optional[str] = None
    retry: Optional[int] = None  # milliseconds


def read_frames(lines: Iterable[str]) -> Iterator[Frame]:
    """Frames from lines (without their line ends); frames without data are skipped."""
    data: Optional[list] = None
    frame = Frame(data="")
    for line in lines:
        if line == "":
            if data is not None:
                frame.data = "\n".join(data)
                yield frame
            data, frame = None, Frame(data="")
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data = (data or []) + [value]
        elif field == "id":
            frame.id = value
        elif field == "event":
            frame.event = value
        elif field == "retry" and value.isdigit():
            frame.retry = int(value)


class EventStream(Generic[E]):
    """An event stream that survives dropped connections: iterate it. It reconnects with
    ``Last-Event-ID`` (the last ``seq`` it yielded), so no event is missed: the server
    replays the missed ones or sends one ``resync`` event with the full state. Iteration
    ends after a final event (``deleted``, ``map_deleted``, ``map_replaced``, ``expired``)
    or ``close()`` (which another thread may call)."""

    def __init__(self, client: "Client", path: str, last_event_id: Optional[int] = None):
        self._client = client
        self._path = path
        self.last_event_id = last_event_id
        """The ``seq`` of the last event yielded (sent as ``Last-Event-ID`` on a reconnect)."""
        self.reconnects = 0
        """How many times the stream reconnected."""
        self._closed = False
        self._response: Optional[httpx.Response] = None
        self._delay = client.reconnect_delay

    def close(self) -> None:
        """Stops the stream; an iteration in progress (in another thread too) ends."""
        self._closed = True
        r = self._response
        if r is None:
            return
        # A read blocked in another thread only wakes up when its socket shuts down; the
        # iterating thread then closes the response itself.
        stream = r.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            r.close()

    def __enter__(self) -> "EventStream[E]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[E]:
        failures = 0
        while not self._closed:
            try:
                self._response = self._client._open_stream(self._path, self.last_event_id)
            except PathdError as e:
                if not e.retryable or failures >= self._client.max_reconnect_failures:
                    raise
                failures += 1
                self._pause(e.retry_after or 0)
                continue
            except PathdConnectionError:
                if self._closed:
                    return
                if failures >= self._client.max_reconnect_failures:
                    raise
                failures += 1
                self._pause(self._delay / 1000)
                continue
            try:
                for frame in read_frames(self._response.iter_lines()):
                    failures = 0
                    if frame.retry is not None:
                        self._delay = frame.retry
                    ev: Dict[str, Any] = json.loads(frame.data)
                    self.last_event_id = ev["seq"]
                    yield ev  # type: ignore[misc]
                    if ev.get("reason") in FINAL:
                        self._closed = True
                        return
            except (httpx.HTTPError, httpx.StreamError, OSError):
                pass  # dropped: reconnect below
            finally:
                self._response.close()
            if self._closed:
                return
            self._pause(self._delay / 1000)

    def _pause(self, seconds: float) -> None:
        self._client._sleep(seconds)
        self.reconnects += 1
