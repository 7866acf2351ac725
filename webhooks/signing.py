"""Endpoint secrets and request signatures.

`X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed with the
endpoint's whole secret (`whsec_...`, as UTF-8) over `"<t>.<body>"`: the scheme Stripe
uses, so receivers can verify with the libraries they already have. For 24 hours after a
secret is rotated the replaced secret signs too: `t=<t>,v1=<new>,v1=<old>`, and a receiver
accepts the request if any `v1` matches a secret it holds.
"""

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """`whsec_` and 43 base64url characters (256 random bits)."""
    return SECRET_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def signature_header(*, secret: str | Sequence[str], body: str, timestamp: int) -> str:
    """The header value; `secret` may be several secrets (newest first), one `v1` each."""
    keys = [secret] if isinstance(secret, str) else list(secret)
    signed = f"{timestamp}.{body}".encode()
    macs = ",".join(f"v1={hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()}" for key in keys)
    return f"t={timestamp},{macs}"
