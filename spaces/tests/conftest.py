import json
from io import StringIO

import pytest
from django.core.management import call_command


class Run:
    """`manage.py` in-process: `run("keys", "list", space_id)` returns the parsed `--json`
    output; `run.text(...)` the plain output. `run.stderr` holds the last stderr."""

    stderr = ""

    def __call__(self, *args):
        return json.loads(self._call(*args, "--json"))

    def text(self, *args) -> str:
        return self._call(*args)

    def _call(self, *args) -> str:
        out, err = StringIO(), StringIO()
        try:
            call_command(*args, stdout=out, stderr=err)
        finally:
            self.stderr = err.getvalue()
        return out.getvalue()


@pytest.fixture
def run(db):
    return Run()


@pytest.fixture
def superuser_client(db, client):
    """A test client logged in as a superuser (without password hashing: it is slow)."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create(username="operator", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client
