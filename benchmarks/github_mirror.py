"""A stand-in for raw.githubusercontent.com on 127.0.0.1: every original of `keras_match.datasets.sources`, served
as `OWNER/REPO/COMMIT/PATH` from a copy of the data folder (gunzipped where the data folder gzip'd an original).

Point `$KERAS_MATCH_GITHUB_URL` at it to walk through a fresh machine without the internet:

    python benchmarks/github_mirror.py --data-dir ../shared/data --port 8765 &
    KERAS_MATCH_GITHUB_URL=http://127.0.0.1:8765 keras-match data download all

The tests and `benchmarks/fresh_machine.py` use `serve()`; its handler's `faults` break one file on purpose
(`"damage"`: one byte changed, `"truncate"`: the connection closes half way through the announced length,
`"404"`), and its `requests` list every path asked for.
"""

import argparse
import contextlib
import http.server
import threading


class GitHubRaw(http.server.BaseHTTPRequestHandler):
    """`GET /OWNER/REPO/COMMIT/PATH` -> the original's bytes (see the module docstring for `faults`)."""

    files: dict = {}
    faults: dict = {}
    requests: list = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).requests.append(self.path)
        body, fault = self.files.get(self.path), self.faults.get(self.path)
        if body is None or fault == "404":
            self.send_error(404, "Not Found")
            return
        if fault == "damage":
            body = bytes([body[0] ^ 1]) + body[1:]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if fault == "truncate" else body)
        if fault == "truncate":
            self.close_connection = True

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def running(handler, port=0):
    """Serves the request handler class `handler` on 127.0.0.1:`port` (0: a free port) from a thread until the
    block ends. Yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def unused_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (a refused connection, for the tests of a failed fetch)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(data_dir, names=None, port=0):
    """Serve the originals of datasets `names` (default: all) from `data_dir`.

    Yields:
        `(base URL, handler class)`: the handler's `faults` and `requests` are this server's own.
    """
    import pathlib

    from keras_match.datasets import sources
    from keras_match.datasets.download import original_bytes

    data_dir = pathlib.Path(data_dir)
    handler = type("Handler", (GitHubRaw,), {"files": {}, "faults": {}, "requests": []})
    for name in names or sources.SOURCES:
        for entry in sources.source(name).originals:
            handler.files[f"/{entry.repo}/{entry.commit}/{entry.origin_path}"] = original_bytes(data_dir, entry)
    with running(handler, port) as url:
        yield url, handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True, help="a copy of the data folder")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    with serve(args.data_dir, port=args.port) as (url, handler):
        print(f"serving {len(handler.files)} originals at {url} (Ctrl-C stops)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
