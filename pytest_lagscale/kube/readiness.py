"""One readiness probe of a control-plane process (:class:`~pytest_lagscale.kube.commands.Readiness`).

An HTTP(S) GET with the run's CA and, when the check names one, a client certificate of the
run's PKI. The poll loop with its timeout is the managed control plane's
(:class:`~pytest_lagscale.kube.control_plane.ControlPlane`); this is the single attempt it repeats.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from .certs import Pki
from .commands import Readiness


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe.

    Attributes:
        ok: status 200 and, when the check expects one, the body (whitespace stripped).
        detail: ``"200 ok"``, ``"503 [-]etcd failed"``, or the connection error, for the
            readiness-timeout message (first 200 characters of a body).
    """

    ok: bool
    detail: str


def ssl_context(check: Readiness, pki: Pki) -> ssl.SSLContext | None:
    """The TLS context of an https check: verify with ``check.ca``, present ``check.client``.

    Returns:
        None for an http URL.
    """
    if not check.url.startswith("https://"):
        return None
    ctx = ssl.create_default_context(cafile=str(check.ca) if check.ca else None)
    if check.client:
        ctx.load_cert_chain(str(pki.crt(check.client)), str(pki.key(check.client)))
    return ctx


def probe(check: Readiness, pki: Pki, timeout_s: float = 1.0) -> ProbeResult:
    """GET ``check.url`` once (``timeout_s`` seconds at most); never raises for I/O errors."""
    try:
        with urllib.request.urlopen(check.url, timeout=timeout_s,
                                    context=ssl_context(check, pki)) as resp:
            body = resp.read(4096).decode("utf-8", "replace").strip()
            ok = resp.status == 200 and (check.body is None or body == check.body)
            return ProbeResult(ok, f"{resp.status} {body[:200]}")
    except urllib.error.HTTPError as exc:
        body = exc.read(4096).decode("utf-8", "replace").strip()
        return ProbeResult(False, f"{exc.code} {body[:200]}")
    except (urllib.error.URLError, OSError, ValueError, ssl.SSLError) as exc:
        return ProbeResult(False, f"{type(exc).__name__}: {exc}")
