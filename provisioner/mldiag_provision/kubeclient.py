"""Reaching a Kubernetes API with the official client: a kubeconfig checked before the
client library reads it, and a timeout on every request.

A leaf module (it imports nothing of the package but :mod:`mldiag_provision.errors`): the
stack's workloads stage (:mod:`mldiag_provision.stack.kube`), ``verify`` and the live cluster
reader of ``lint --kubeconfig`` (:mod:`mldiag_provision.cluster.from_live`) share it.
"""

from __future__ import annotations

import os
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

    def request(method: str, url: str, *args: Any, _request_timeout: Any = None,
                **kwargs: Any) -> Any:
        return original(method, url, *args, _request_timeout=_request_timeout or timeout,
                        **kwargs)

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
    return isinstance(exc, (ReadTimeoutError, ConnectTimeoutError, TimeoutError))


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
            raise UsageError(f"kubeconfig {p}: not UTF-8 text (byte {exc.start})",
                             hint=hint) from None
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
