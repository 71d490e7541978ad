"""What went wrong with a registry, in words, with the advice that fits where it is.

Every registry error names the registry and the cause without Python class names
('nothing answers there', not 'ConnectionRefusedError'), and says what to do: a loopback
registry that does not answer is started with scripts/services.sh up; a registry that
refuses credentials wants `docker login <host>`; a TLS problem is called one.
"""

from __future__ import annotations

import http.client
import socket
import ssl

from build_graph.errors import RegistryError
from build_graph.log import shown
from build_graph.oci.hosts import INSECURE_ENV, is_loopback

START_LOCAL = "start it: scripts/services.sh up"


def cause(exc: BaseException) -> str:
    """The cause of a failed request, in words."""
    match exc:
        case ssl.SSLCertVerificationError():
            return f"TLS: its certificate could not be verified ({exc.verify_message})"
        case ssl.SSLError() if "WRONG_VERSION_NUMBER" in str(exc):
            return "TLS: it does not answer HTTPS (a plain-HTTP registry?)"
        case ssl.SSLError():
            return f"TLS: the secure connection failed ({exc.reason or exc})"
        case ConnectionRefusedError():
            return "nothing answers there (connection refused)"
        case socket.gaierror():
            return "its name does not resolve"
        case TimeoutError():
            return "it did not answer in time"
        case http.client.RemoteDisconnected() | ConnectionResetError() | BrokenPipeError():
            return "it closed the connection"
        case http.client.IncompleteRead():
            return f"the connection ended {exc.expected} bytes before the body did"
        case http.client.HTTPException():
            return "its answer is not valid HTTP"
        case OSError() if exc.strerror:
            return exc.strerror.lower()
    return str(exc) or "the request failed"


def advice(host: str, exc: BaseException) -> str:
    """What to do about `exc`, a failure to reach `host`."""
    if isinstance(exc, http.client.IncompleteRead):
        return "run again (a blob read starts over); if it keeps happening, see the network"
    if isinstance(exc, ssl.SSLError):
        if "WRONG_VERSION_NUMBER" in str(exc):
            return f"if {host} is a plain-HTTP registry you trust, list it in {INSECURE_ENV}"
        return f"check {host}'s certificate, or the CA bundle this machine trusts"
    if is_loopback(host):
        return START_LOCAL
    return (
        "check the registry address (images.toml's [stack] registry, or the tier's "
        "`from`) and the network"
    )


def hint(host: str, said: str = "") -> str:
    """Advice for a failure the Docker daemon reports about `host` (`said`: its words)."""
    if "x509:" in said or "tls:" in said:
        return (
            "the Docker daemon does not trust a certificate on the way: a registry's CA "
            f"goes in its /etc/docker/certs.d/{host}/ca.crt, a token service's in the "
            "system trust store of the daemon's machine (or its SSL_CERT_DIR)"
        )
    if is_loopback(host):
        return f"is it running? ({START_LOCAL})"
    return f"are you logged in (`docker login {host}`), and does it answer?"


def unreachable(host: str, exc: BaseException) -> RegistryError:
    """The error for a request to `host` that got no usable answer."""
    return RegistryError(f"cannot ask the registry {host}: {cause(exc)}; {advice(host, exc)}")


def status_advice(host: str, status: int) -> str:
    if status in (401, 403):
        return f"it refused the credentials; run `docker login {host}`"
    if status >= 500:
        return f"the registry itself failed (HTTP {status}); see {host}'s logs"
    if status == 429:
        return "it limits the request rate; wait and run again"
    return f"check the request and {host}'s logs"


def refused(host: str, what: str, status: int, body: bytes = b"") -> RegistryError:
    """The error for an HTTP answer that is neither success nor a definite 'absent'."""
    text = shown(body[:200].decode("utf-8", "replace")).strip()  # the registry's words
    said = f" (it said: {text})" if text else ""
    return RegistryError(
        f"the registry {host} answered HTTP {status} to {what}{said}; {status_advice(host, status)}"
    )
