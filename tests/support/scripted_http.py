"""A scripted HTTP server in a thread, for the answers a healthy server does not give on demand
(garbage, 5xx then success, silence): each path answers by a function of its request count and
query, and every request is logged."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# (status, body, headers) from the number of earlier requests to the same path, and the query
Answer = tuple[int, bytes, dict[str, str]]
Script = Callable[[int, dict[str, str]], Answer]


@dataclass
class Scripted:
    """The server's base URL, its scripts by path, the requests seen (path, query) and an event
    that releases handlers waiting on it (set when the server stops)."""

    url: str
    scripts: dict[str, Script]
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)


def always(status: int, body: bytes, content_type: str = "application/octet-stream") -> Script:
    return lambda _n, _query: (status, body, {"Content-Type": content_type})


@contextmanager
def scripted_server(scripts: dict[str, Script]) -> Iterator[Scripted]:
    """Serve ``scripts`` on 127.0.0.1 (a free port) while the block runs; unknown paths 404."""
    state = Scripted("", scripts)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            parts = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parts.query))
            with lock:
                earlier = state.count(parts.path)
                state.requests.append((parts.path, query))
            script = state.scripts.get(parts.path)
            status, body, headers = (
                script(earlier, query) if script else (404, b"404 page not found\n", {})
            )
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
