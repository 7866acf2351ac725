"""A manage.py command imports what it uses, not the whole service: no back-office modules,
no HTTP client, no delivery services, no API views, no Celery (they cost seconds on a loaded
machine). Checked in a fresh process by what it imported, never by how long it took. A
process that enqueues a task imports the project's Celery app then, with the receivers that
carry the request's log context into the task."""

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
                "rest_framework.views", "drf_spectacular.openapi", "config.celery", "celery", "kombu"}
    assert unwanted & modules == set()
    assert [name for name in modules if name.startswith(("celery.", "kombu."))] == []


ENQUEUE = """
import json, sys
import django
django.setup()
before = sorted(name for name in sys.modules if name == "celery" or name.startswith("config.celery"))
from core.logging import bind
from webhooks import dispatch
bind(request_id="req-1", trace_id="0af7651916cd43dd8448eb211c80319c")
dispatch.work_waiting(None, delivery_id="d-1")  # as a request's commit does
from config.celery import app
with app.connection() as connection:
    message = connection.SimpleQueue("celery").get(timeout=5)
print(json.dumps({"before": before, "headers": message.headers, "args": message.payload[0]}))
"""


def test_a_process_that_enqueues_a_task_loads_the_celery_app_and_its_log_context_receivers(tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
           "REDIS_URL": "", "CELERY_BROKER_URL": "memory://", "WEBHOOKS_DISPATCH": "celery", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", ENQUEUE], cwd=ROOT, env=env, check=True, capture_output=True,
                            text=True)
    sent = json.loads(result.stdout.strip().splitlines()[-1])
    assert sent["before"] == []  # setting Django up imported no Celery
    assert (sent["headers"]["task"], sent["args"]) == ("webhooks.deliver", ["d-1"])  # through the project's app
    assert sent["headers"]["log_context"] == {"request_id": "req-1", "trace_id": "0af7651916cd43dd8448eb211c80319c"}
