"""The SECRET_KEY of an installation that sets none: random, made once, kept in a file.

No key is written in the source, so no two installations share one and nobody can look it
up. Every process of the installation (gunicorn workers, the jobs loop, `manage.py`) reads
the same file; the first to start writes it, atomically. Several machines must share one
key: set `SECRET_KEY` in the environment there.
"""

import os
import secrets
import tempfile
from pathlib import Path


def installation_secret_key(path: Path) -> str:
    """The key kept in `path` (readable by its owner only), created on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(50))
            os.link(temporary, path)  # fails if another process made it first: theirs is kept
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    return path.read_text().strip()
