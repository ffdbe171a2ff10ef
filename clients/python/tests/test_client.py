"""The client's own behaviour against scripted answers: retries honouring Retry-After,
typed errors, tokens, timeouts, cancelling a stream, connection errors, the SSE parser."""

from __future__ import annotations

import json
import socket
import threading
from typing import Callable, List

import httpx
import pytest

from pathd_client import (
    Client,
    Frame,
    PathdConnectionError,
    PathdError,
    PathdTimeout,
    read_frames,
)

ORIGIN = {"start": (0, 0), "goal": (0, 0)}
FOUND = {"status": "found", "path": [[0, 0]], "cost": 0.0}


def overloaded(retry_after: str = "") -> httpx.Response:
    headers = {"retry-after": retry_after} if retry_after else {}
    return httpx.Response(503, headers=headers, json={"error": {"code": "overloaded", "message": "busy"}})


def scripted(*answers: httpx.Response, **kw) -> tuple:
    queue: List[httpx.Response] = list(answers)
    seen: List[httpx.Request] = []
    slept: List[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    c = Client("http://pathd.test", transport=httpx.MockTransport(handler), sleep=slept.append, **kw)
    return c, seen, slept, queue


def test_a_503_with_retry_after_is_retried_after_that_time():
    c, seen, slept, _ = scripted(overloaded("2"), overloaded("1"), httpx.Response(200, json=FOUND))
    assert c.find_path("m", ORIGIN)["status"] == "found"
    assert slept == [2.0, 1.0]
    assert len(seen) == 3


def test_retries_stop_and_the_error_carries_code_and_retry_after():
    c, _, slept, _ = scripted(overloaded("3"), overloaded("3"), retries=1)
    with pytest.raises(PathdError) as e:
        c.find_path("m", ORIGIN)
    assert (e.value.status, e.value.code, e.value.retry_after, e.value.retryable) == (503, "overloaded", 3, True)
    assert slept == [3.0]


def test_the_wait_is_capped_and_a_503_without_retry_after_is_not_retried():
    c, _, slept, queue = scripted(overloaded("60"), httpx.Response(200, json=FOUND),
                                  httpx.Response(503, json={"error": {"code": "map_damaged", "message": "d"}}),
                                  max_retry_delay=0.5)
    c.find_path("m", ORIGIN)
    assert slept == [0.5]
    with pytest.raises(PathdError) as e:
        c.get_map("m")
    assert (e.value.code, e.value.retryable) == ("map_damaged", False)
    assert queue == []


def test_error_answers_are_typed():
    c, _, _, _ = scripted(httpx.Response(404, json={"error": {"code": "map_not_found", "message": "no map named m"}}))
    with pytest.raises(PathdError) as e:
        c.get_map("m")
    assert (e.value.status, e.value.code, e.value.message) == (404, "map_not_found", "no map named m")
    assert str(e.value) == "404 map_not_found: no map named m"


def test_tokens_admin_on_writes_query_on_reads_and_secrets():
    c, seen, _, _ = scripted(
        httpx.Response(200, json={"version": 2, "changed_cells": 1, "affected_subscriptions": 0}),
        httpx.Response(200, json=FOUND), httpx.Response(204), httpx.Response(204),
        admin_token="A", query_token="Q")
    c.patch_map("m", {"cells": [{"x": 0, "y": 0, "cost": 0}], "if_version": 1})
    c.find_path("m", ORIGIN)
    c.delete_subscription("s", "SECRET")
    c.delete_subscription("s")
    got = [(r.method, r.headers.get("authorization"), r.headers.get("x-subscription-secret")) for r in seen]
    assert got == [("PATCH", "Bearer A", None), ("POST", "Bearer Q", None),
                   ("DELETE", "Bearer Q", "SECRET"), ("DELETE", "Bearer A", None)]
    assert json.loads(seen[0].content) == {"cells": [{"x": 0, "y": 0, "cost": 0}], "if_version": 1}


def silent_server(answer: Callable[[socket.socket], None] = lambda s: None):
    """A TCP server that reads the request and then does `answer` (default: nothing)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    held: List[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            conn.recv(65536)
            answer(conn)

    threading.Thread(target=serve, daemon=True).start()

    def close() -> None:
        stop.set()
        listener.close()
        for s in held:
            s.close()

    return f"http://127.0.0.1:{listener.getsockname()[1]}", close


def test_a_request_without_an_answer_times_out():
    url, close = silent_server()
    try:
        with pytest.raises(PathdTimeout):
            Client(url, timeout=0.1).get_map("m")
    finally:
        close()


def test_a_stream_is_cancelled_by_close_from_another_thread():
    def one_event(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
                     b'id: 1\ndata: {"seq": 1, "reason": "initial"}\n\n')

    url, close = silent_server(one_event)
    try:
        stream = Client(url).subscription_events("s")
        events = iter(stream)
        assert next(events)["reason"] == "initial"
        threading.Timer(0.05, stream.close).start()
        assert next(events, None) is None
        assert stream.last_event_id == 1
    finally:
        close()


def test_an_unreachable_server_is_a_connection_error():
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(PathdConnectionError):
        Client(f"http://127.0.0.1:{port}").health()


def test_the_sse_parser():
    lines = [": keep-alive", "id: 1", 'data: {"a":', "data: 1}", "", "retry: 250", "id: 2",
             "data: x", "", ": only a comment", ""]
    assert list(read_frames(lines)) == [Frame(data='{"a":\n1}', id="1"), Frame(data="x", id="2", retry=250)]
