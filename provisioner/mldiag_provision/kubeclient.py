"""Reaching a Kubernetes API with the official client: a kubeconfig checked before the
client library reads it, and a timeout on every request.

A leaf module (it imports nothing of the package but :mod:`mldiag_provision.errors`): the
stack's workloads stage (:mod:`mldiag_provision.stack.kube`), ``verify`` and the live cluster
reader of ``lint --kubeconfig`` (:mod:`mldiag_provision.cluster.from_live`) share it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from mldiag_provision.errors import UsageError

REQUEST_TIMEOUT_S = 30
"""Default seconds one Kubernetes API request may take (``MLDIAG_REQUEST_TIMEOUT_S``)."""


def request_timeout_s() -> float:
    """Seconds one Kubernetes API request may take (connect, then each read), from
    ``MLDIAG_REQUEST_TIMEOUT_S`` (default :data:`REQUEST_TIMEOUT_S`); a server that accepts
    the connection and never answers costs at most this."""
    raw = os.environ.get("MLDIAG_REQUEST_TIMEOUT_S", "")
    try:
        value = float(raw) if raw.strip() else float(REQUEST_TIMEOUT_S)
    except ValueError:
        raise UsageError(f"MLDIAG_REQUEST_TIMEOUT_S={raw!r} is not a number of seconds",
                         hint="e.g. MLDIAG_REQUEST_TIMEOUT_S=30") from None
    if not 0 < value <= 3600:
        raise UsageError(f"MLDIAG_REQUEST_TIMEOUT_S={raw!r} must be between 0 and 3600 s")
    return value


class DeadlineExceeded(TimeoutError):
    """A request was not sent: the command's overall deadline (``--timeout``) had passed."""


class Deadline:
    """An overall deadline for a command that talks to a server (``--timeout SECONDS``), on
    top of the per-request timeout (:func:`request_timeout_s`): a server that answers each
    request just in time, or trickles its answer byte by byte (each read within the
    per-request timeout), still ends the command at the deadline.

    ``seconds``: the budget, from now (monotonic clock)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.end = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left (0 when passed)."""
        return max(0.0, self.end - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0


def set_deadline(api: Any, deadline: Deadline | None) -> Any:
    """Bound every later request of ``api`` (wrapped by :func:`with_timeouts`) by
    ``deadline``: its timeout is at most the time left, and once none is left a request is
    not sent (:class:`DeadlineExceeded`), except a DELETE (the clean-up of what the command
    created, each bounded by the per-request timeout). Returns ``api``."""
    api.rest_client._mldiag_deadline = deadline
    return api


def _capped(timeout: Any, left: float) -> Any:
    """``timeout`` (seconds, or a (connect, read) pair) lowered to ``left`` seconds."""
    if isinstance(timeout, (tuple, list)):
        return tuple(min(float(t), left) if t else left for t in timeout)
    return min(float(timeout), left) if timeout else left


def _path(url: str) -> str:
    """The path of a request's URL (no host, no query): what a message names."""
    from urllib.parse import urlsplit

    return urlsplit(str(url)).path or str(url)


def in_flight(api: Any) -> list[str]:
    """The requests of ``api`` (wrapped by :func:`with_timeouts`) sent and not yet answered,
    as ``"GET /api/v1/nodes"``."""
    return sorted(getattr(api.rest_client, "_mldiag_inflight", {}).values())


def bounded(api: Any, seconds: float, work: Callable[[], Any], what: str) -> Any:
    """``work()`` (which talks to the server through ``api``), ended at an overall deadline
    of ``seconds`` (:class:`Deadline`, :func:`set_deadline`): it runs in a daemon thread that
    is waited on only until the deadline, so a server that trickles its answers cannot hold
    the command. Returns what ``work`` returns; raises what it raises.

    Raises:
      DeadlineExceeded: the deadline passed first; the message names ``what`` was being
        done and the requests still unanswered.
    """
    import threading

    deadline = Deadline(seconds)
    set_deadline(api, deadline)
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    worker = threading.Thread(target=run, daemon=True, name=f"bounded {what}")
    worker.start()
    worker.join(deadline.remaining())
    if not box:
        last = getattr(api.rest_client, "_mldiag_last", None)
        # a request whose answer is read after it returns (``_preload_content=False``) is
        # still pending while its body arrives
        pending = in_flight(api) or ([f"{last} (its answer still arriving)"] if last else [])
        raise DeadlineExceeded(
            f"the overall deadline of {seconds:g} s (--timeout) passed while {what}"
            + (f"; still pending: {', '.join(pending)}" if pending else ""))
    ok, value = box[0]
    if not ok:
        raise value
    return value


def with_timeouts(api: Any, timeout_s: float | None = None) -> Any:
    """Give every request of ``api`` (a ``kubernetes.client.ApiClient``) a timeout unless the
    call sets its own, and no retry after a read timeout (a hung server stays hung).

    The official client sends requests with no timeout unless each call passes
    ``_request_timeout`` (kubernetes/client/rest.py, ``RESTClientObject.request``); this wraps
    that one method, so discovery, the dynamic client and every typed API are covered.
    Returns ``api``.
    """
    import urllib3

    timeout = timeout_s or request_timeout_s()
    rest = api.rest_client
    if getattr(rest, "_mldiag_timeout", None) is not None:
        return api
    original = rest.request
    inflight: dict[object, str] = {}  # the requests sent and not yet answered
    rest._mldiag_inflight = inflight

    def request(method: str, url: str, *args: Any, _request_timeout: Any = None,
                **kwargs: Any) -> Any:
        wanted = _request_timeout or timeout
        deadline: Deadline | None = getattr(rest, "_mldiag_deadline", None)
        if deadline is not None and str(method).upper() != "DELETE":
            left = deadline.remaining()
            if left <= 0:
                raise DeadlineExceeded(f"the overall deadline of {deadline.seconds:g} s "
                                       f"(--timeout) passed before {method} {_path(url)}")
            wanted = _capped(wanted, max(left, 0.01))
        token = object()
        inflight[token] = rest._mldiag_last = f"{method} {_path(url)}"
        try:
            return original(method, url, *args, _request_timeout=wanted, **kwargs)
        finally:
            inflight.pop(token, None)

    rest.request = request
    rest._mldiag_timeout = timeout
    rest.pool_manager.connection_pool_kw["retries"] = urllib3.Retry(
        total=2, connect=2, read=0, status=0, redirect=2)
    return api


def is_timeout(exc: BaseException) -> bool:
    """True when ``exc`` (as the Kubernetes client raises it) is a request that timed out."""
    from urllib3.exceptions import (
        ConnectTimeoutError,
        MaxRetryError,
        NewConnectionError,
        ReadTimeoutError,
    )

    if isinstance(exc, MaxRetryError):
        exc = exc.reason or exc
    if isinstance(exc, NewConnectionError):  # urllib3 2 subclasses it from ConnectTimeoutError
        return False
    return isinstance(exc, (ReadTimeoutError, ConnectTimeoutError, TimeoutError)) and not (
        isinstance(exc, DeadlineExceeded))


def _kubeconfig_paths(path: str | None) -> list[str]:
    if path:
        return [path]
    env = os.environ.get("KUBECONFIG", "")
    found = [p for p in env.split(os.pathsep) if p] if env else []
    return found or [os.path.expanduser("~/.kube/config")]


def check_kubeconfig(path: str | None) -> None:
    """Refuse a kubeconfig that is not a YAML mapping with list-valued ``clusters``,
    ``contexts`` and ``users`` (https://kubernetes.io/docs/concepts/configuration/
    organize-cluster-access-kubeconfig/), before the client library trips over it.

    Raises:
      UsageError: the file is missing, unreadable, not YAML, or not a kubeconfig's shape.
    """
    import yaml

    hint = ("pass --kubeconfig PATH of a kubeconfig file (`gcloud container clusters "
            "get-credentials` writes one)")
    for p in _kubeconfig_paths(path):
        try:
            with open(p, "rb") as fh:
                raw = fh.read(4 << 20)
            doc = yaml.safe_load(raw.decode("utf-8"))
        except FileNotFoundError:
            raise UsageError(f"kubeconfig {p}: no such file", hint=hint) from None
        except OSError as exc:
            raise UsageError(f"kubeconfig {p}: cannot be read ({exc.strerror})",
                             hint=hint) from None
        except UnicodeDecodeError as exc:
            from mldiag_provision.errors import not_utf8

            bad = not_utf8(str(p), raw, exc, "a kubeconfig")
            raise UsageError(f"kubeconfig {bad.message}", hint=bad.hint) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            what = getattr(exc, "problem", None) or "syntax error"
            raise UsageError(f"kubeconfig {p}: not YAML ({what}{where})", hint=hint) from None
        if not isinstance(doc, dict):
            shape = "empty" if doc is None else (
                "a YAML list" if isinstance(doc, list) else f"the scalar {str(doc)[:40]!r}")
            raise UsageError(f"kubeconfig {p}: the file is {shape}, not a kubeconfig (a "
                             "mapping with clusters, contexts and users)", hint=hint)
        for key in ("clusters", "contexts", "users"):
            if doc.get(key) is not None and not isinstance(doc[key], list):
                raise UsageError(f"kubeconfig {p}: {key} must be a list, not "
                                 f"{type(doc[key]).__name__}", hint=hint)
            for i, item in enumerate(doc.get(key) or []):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise UsageError(f"kubeconfig {p}: {key}[{i}] must be a mapping with a "
                                     "name", hint=hint)


def kubeconfig_client(path: str | None, context: str | None) -> Any:
    """An ``ApiClient`` from a kubeconfig (``path``, else ``$KUBECONFIG``, else
    ``~/.kube/config``) and context, with :func:`with_timeouts`.

    Raises:
      UsageError: the kubeconfig is missing, malformed or lacks the context.
    """
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    check_kubeconfig(path)
    try:
        # no path: $KUBECONFIG as it is now (the client library reads it once, at import)
        api = config.new_client_from_config(
            config_file=path or os.pathsep.join(_kubeconfig_paths(None)), context=context)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError,
            IndexError) as exc:
        raise UsageError(f"cannot load the kubeconfig: {' '.join(str(exc).split())[:300]}",
                         hint="pass --kubeconfig/--context, or -o DIR (the stack's work "
                              "directory)") from None
    return with_timeouts(api)
