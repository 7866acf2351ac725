"""Endpoint secrets and request signatures.

`X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed with the
endpoint's whole secret (`whsec_...`, as UTF-8) over `"<t>.<body>"`: the scheme Stripe
uses, so receivers can verify with the libraries they already have. For 24 hours after a
secret is rotated the replaced secret signs too: `t=<t>,v1=<new>,v1=<old>`, and a receiver
accepts the request if any `v1` matches a secret it holds.

Beside it, the Standard Webhooks headers (https://www.standardwebhooks.com):
`webhook-id` (the event id, the same for every retry), `webhook-timestamp` (the same
`t`) and `webhook-signature: v1,<base64 HMAC-SHA256>` over `"<id>.<t>.<body>"`, keyed with
the secret's 32 random bytes (the base64url text after `whsec_`, decoded); during a
rotation one `v1,...` per secret, separated by a space. The `standardwebhooks` libraries
decode the key as standard base64, so a receiver hands them the key bytes, or the secret
re-encoded: `standard_key` below (docs/webhooks.md).
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


def key_bytes(secret: str) -> bytes:
    """The Standard Webhooks signing key of a secret: the bytes its base64url text encodes."""
    text = secret.removeprefix(SECRET_PREFIX)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def standard_key(secret: str) -> str:
    """The same key as the `whsec_<standard base64>` text the `standardwebhooks` libraries
    take (our secrets are base64url: `-` and `_` where standard base64 has `+` and `/`)."""
    return SECRET_PREFIX + base64.b64encode(key_bytes(secret)).decode()


def standard_signature_header(*, secret: str | Sequence[str], msg_id: str, body: str, timestamp: int) -> str:
    """`webhook-signature`: `v1,<base64>` per secret (newest first), space-separated."""
    keys = [secret] if isinstance(secret, str) else list(secret)
    signed = f"{msg_id}.{timestamp}.{body}".encode()
    return " ".join(
        "v1," + base64.b64encode(hmac.new(key_bytes(key), signed, hashlib.sha256).digest()).decode() for key in keys
    )


def signature_header(*, secret: str | Sequence[str], body: str, timestamp: int) -> str:
    """The header value; `secret` may be several secrets (newest first), one `v1` each."""
    keys = [secret] if isinstance(secret, str) else list(secret)
    signed = f"{timestamp}.{body}".encode()
    macs = ",".join(f"v1={hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()}" for key in keys)
    return f"t={timestamp},{macs}"
