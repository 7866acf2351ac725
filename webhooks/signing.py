"""Endpoint secrets and request signatures.

`X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed with the
endpoint's whole secret (`whsec_...`, as UTF-8) over `"<t>.<body>"`: the scheme Stripe
uses, so receivers can verify with the libraries they already have.
"""

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """`whsec_` and 43 base64url characters (256 random bits)."""
    return SECRET_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def signature_header(*, secret: str, body: str, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"
