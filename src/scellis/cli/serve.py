"""``scellis serve [--port] [--out]`` (cli layer): build the site if needed, serve it locally.

A plain static server on 127.0.0.1 (a secure context, so WebGPU and service workers are
allowed) with the MIME types Pyodide needs (``.wasm`` as application/wasm for streaming
compilation, ``.mjs`` as JavaScript).
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import click

from ..base.errors import ScellisError
from .site_build import build_site, site_is_current

MIME = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".whl": "application/zip",
    ".sml": "text/plain; charset=utf-8",
    ".json": "application/json",
}


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}

    def end_headers(self):
        # the service worker, not the HTTP cache, decides what is fresh
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):  # quiet: one line per request is noise here
        pass


def make_server(root: str | Path, port: int = 0, host: str = "127.0.0.1"):
    """A ThreadingHTTPServer serving ``root``; port 0 picks a free one (``server_port``)."""
    handler = functools.partial(_Handler, directory=str(root))
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as e:
        raise ScellisError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    except OverflowError:
        raise ScellisError(f"cannot listen on {host}:{port}: ports are 0 to 65535") from None


def serve_in_thread(root: str | Path, port: int = 0):
    """Start serving ``root`` in a daemon thread; returns the server (``shutdown()`` stops)."""
    server = make_server(root, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@click.command("serve", help="Build the site if needed and serve it on localhost.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--out", default=".scellis/site", show_default=True, metavar="DIR")
@click.option("--rebuild", is_flag=True, help="build even if the site looks current")
def command(port, out, rebuild):
    out = Path(out)
    if rebuild or not site_is_current(out):
        info = build_site(out)
        print(f"built {info['out']} ({info['bytes'] / 2**20:.1f} MiB)", flush=True)
    server = make_server(out, port)
    print(f"serving {out} on http://127.0.0.1:{server.server_port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
