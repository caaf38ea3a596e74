"""The HTTP server the sandbox's doubles serve on (the Kubernetes API server, the Google API
stand-in, the Cloud Storage double): a client that hangs up mid-answer (a command stopped with
Ctrl-C, a closed kubectl) ends its connection quietly instead of printing socketserver's
traceback on the user's terminal. Other errors are reported as before."""

from __future__ import annotations

import ssl
import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """:class:`http.server.ThreadingHTTPServer`, quiet about clients that went away."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError, TimeoutError)):
            return
        super().handle_error(request, client_address)
