"""The layering of docs/architecture.md, read from the source: which app may import which,
no app reaching into another's private modules or names, and services that speak no HTTP.
Tests and migrations are left out (tests may use anything; migrations are generated)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# app -> the apps it may import (config, on top, may import any of them).
MAY_IMPORT = {
    "core": set(),
    "spaces": {"core"},
    "ratelimit": {"core", "spaces"},
    "idempotency": {"core", "spaces"},
    "webhooks": {"core", "spaces", "idempotency"},
    "polls": {"core", "spaces", "webhooks", "idempotency"},
    # The app's pages: the same services and selectors as the API, never its HTTP layer.
    "pages": {"core", "spaces", "polls", "ratelimit"},
}
APPS = set(MAY_IMPORT) | {"config"}
# Modules of business logic: they raise ServiceErrors, never HTTP errors.
NO_HTTP = {"services", "selectors", "rules", "jobs", "models", "limiter", "spans"}  # modules, or packages of modules
HTTP_MODULES = ("rest_framework", "core.api", "drf_spectacular")
API_MODULES = (".serializers", ".views", ".presenters", ".schema", ".openapi")  # an app's HTTP side


def source_files():
    for path in sorted(ROOT.glob("*/**/*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in APPS and "tests" not in parts and "migrations" not in parts:
            yield path


def imports(source: str):
    """(module, names) of every absolute import in the source, at any depth."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [alias.name for alias in node.names]


def named_apps(source: str) -> list[str]:
    """The apps that code (not prose: docstrings and comments are left out) names in a
    string as a dotted path (`"spaces.authentication.ApiKeyAuthentication"`). A plain word
    that happens to be an app's name (a label such as "pages") is no reference."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
        and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    names = set(MAY_IMPORT) - {"core"}
    return [
        node.value.split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        and "." in node.value and node.value.split(".")[0] in names
    ]


def problems(relative: Path, source: str) -> list[str]:
    """What breaks the layering in one file (`relative` to the repository root)."""
    app, found = relative.parts[0], []
    if app == "core":
        found += [f"{name}: core names an app" for name in named_apps(source)]
    for module, names in imports(source):
        top = module.split(".")[0]
        if NO_HTTP & {relative.stem, *relative.parts[1:-1]} and (module.startswith(HTTP_MODULES) or module.endswith((".serializers", ".views"))):
            found.append(f"{module}: {relative.name} speaks no HTTP")
        if app == "pages" and (module.startswith(HTTP_MODULES) or (top != "pages" and module.endswith(API_MODULES))):
            found.append(f"{module}: pages never import the API's HTTP layer")
        if top not in APPS or top == app:
            continue
        if app != "config" and top not in MAY_IMPORT[app]:
            found.append(f"{module}: {app} may not import {top}")
        private = [part for part in module.split(".")[1:] if part.startswith("_") and part != "__init__"]
        private += [name for name in names if name.startswith("_")]
        if private:
            found.append(f"{module}: private {', '.join(private)} of another app")
    return list(dict.fromkeys(found))


FILES = list(source_files())


@pytest.mark.parametrize("path", FILES, ids=[str(path.relative_to(ROOT)) for path in FILES])
def test_imports_follow_the_layers(path):
    relative = path.relative_to(ROOT)
    assert problems(relative, path.read_text()) == [], relative


def test_each_rule_finds_its_violation():
    assert problems(Path("core/x.py"), "from polls import services") == ["polls: core may not import polls"]
    assert problems(Path("webhooks/x.py"), "import polls.models") == ["polls.models: webhooks may not import polls"]
    assert problems(Path("polls/x.py"), "from spaces.management.commands._base import GroupCommand") == [
        "spaces.management.commands._base: private _base of another app"]
    assert problems(Path("polls/x.py"), "from spaces.admin import _report") == [
        "spaces.admin: private _report of another app"]
    assert problems(Path("polls/services.py"), "def f():\n    from polls.serializers import SETTINGS") == [
        "polls.serializers: services.py speaks no HTTP"]
    assert problems(Path("polls/selectors.py"), "from core.api import errors") == [
        "core.api: selectors.py speaks no HTTP"]
    assert problems(Path("polls/services/editing.py"), "from rest_framework import serializers") == [
        "rest_framework: editing.py speaks no HTTP"]
    assert problems(Path("config/urls.py"), "from polls import views") == []
    assert problems(Path("core/api/schema.py"), 'target_class = "spaces.authentication.ApiKeyAuthentication"') == [
        "spaces: core names an app"]
    assert problems(Path("core/x.py"), '"""Polls and spaces in prose are fine."""\nTABLE = "spaces_serviceswitch"') == []
    assert problems(Path("ratelimit/limiter.py"), "from core.api import errors") == ["core.api: limiter.py speaks no HTTP"]
    assert problems(Path("pages/views.py"), "from core.api.errors import json_404") == [
        "core.api.errors: pages never import the API's HTTP layer"]
    assert problems(Path("pages/views.py"), "from polls.serializers import SETTINGS") == [
        "polls.serializers: pages never import the API's HTTP layer"]
    assert problems(Path("pages/views.py"), "from pages.views import error_page") == []
    assert problems(Path("polls/views.py"), "from pages import views") == ["pages: polls may not import pages"]


def test_every_periodic_job_is_a_function_of_its_apps_jobs_module(settings):
    """docs/architecture.md: a periodic job is a function in its app's `jobs.py`, named in
    PERIODIC_JOBS as `<app>.<job>`; Celery beat runs each through core.tasks.run_job."""
    from django.utils.module_loading import import_string

    for name, (path, interval) in settings.PERIODIC_JOBS.items():
        app, module, function = path.split(".")
        assert (module, name.split(".")[0]) == ("jobs", app), name
        assert callable(import_string(path)) and interval > 0
        assert settings.CELERY_BEAT_SCHEDULE[name]["task"] == "core.tasks.run_job"
