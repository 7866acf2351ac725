"""A manage.py command imports what it uses, not the whole service: no back-office modules,
no HTTP client, no delivery services, no API views (they cost seconds on a loaded machine). Checked in a
fresh process by what it imported, never by how long it took."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
import django
django.setup()
from django.core.management import call_command
try:
    call_command("keys", "list", "nosuchspace", "--json")
except Exception:
    pass  # the space does not exist: the command ran all the same
print(json.dumps(sorted(sys.modules)))
"""


def test_an_operator_command_leaves_the_admin_and_the_web_stack_unimported(tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
           "REDIS_URL": "", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, capture_output=True)
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    modules = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert "spaces.management.commands.keys" in modules  # the probe did run the command
    unwanted = {"requests", "polls.admin", "webhooks.admin", "webhooks.services.delivery", "polls.views",
                "rest_framework.views", "drf_spectacular.openapi"}
    assert unwanted & modules == set()
