"""Test support: a real pathd (PATHD_BIN, else the workspace's debug build) on a free port,
and a TCP proxy in front of it whose connections a test can cut."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Set

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
ADMIN_TOKEN = "scenario-admin-token"


class Server:
    def __init__(self, url: str, port: int):
        self.url, self.port = url, port


@pytest.fixture
def pathd() -> Iterator[Server]:
    binary = os.environ.get("PATHD_BIN") or str(REPO / "target/debug/pathd")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PATHD_LOG_FORMAT="json", RUST_LOG="warn,pathd=info")
        proc = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:0", "--maps-dir", str(REPO / "maps"),
             "--data-dir", f"{tmp}/data", "--admin-token", ADMIN_TOKEN, "--pool-threads", "2",
             # One event kept per subscription: a reconnect after two events gets a resync.
             "--subscription-event-buffer", "1"],
            env=env, stdout=subprocess.PIPE, text=True)
        try:
            addr = None
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("message") == "pathd listening":
                    addr = rec["addr"]
                    break
            assert addr, "pathd exited before listening"
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
            url = f"http://{addr}"
            until("pathd ready", lambda: _ready(url))
            yield Server(url, int(addr.rsplit(":", 1)[1]))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz").status_code == 200
    except httpx.HTTPError:
        return False


class Proxy:
    """Forwards TCP to the server; ``cut()`` drops every open connection."""

    def __init__(self, port: int):
        self._target = port
        self._lock = threading.Lock()
        self._conns: Set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._conns |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                self._drop(s)

    def _drop(self, s: socket.socket) -> None:
        with self._lock:
            self._conns.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def cut(self) -> int:
        with self._lock:
            conns = list(self._conns)
        for s in conns:
            self._drop(s)
        return len(conns)

    def close(self) -> None:
        self._listener.close()
        self.cut()


@pytest.fixture
def proxy(pathd: Server) -> Iterator[Proxy]:
    p = Proxy(pathd.port)
    yield p
    p.close()


def until(what: str, cond: Callable[[], bool]) -> None:
    """Polls ``cond`` every 20 ms (at most 30 s): waits for a state, never times one."""
    for _ in range(1500):
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
