"""The layering of docs/architecture.md, kept by import-linter's contracts (.importlinter):
`lint-imports` passes, and each contract breaks on the import it exists to refuse (added to
the real import graph)."""

import copy
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.application import use_cases
from importlinter.configuration import configure
from importlinter.domain.contract import registry

from tests.contracts import named_packages, private_imports

ROOT = Path(__file__).resolve().parents[1]


def test_lint_imports_keeps_every_contract():
    checked = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"], cwd=ROOT,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 broken" in checked.stdout


@pytest.fixture(scope="module")
def contracts(monkeypatch_module):
    """The contracts of .importlinter by id, and the real import graph they check."""
    configure()
    monkeypatch_module.chdir(ROOT)
    options = use_cases.read_user_options(str(ROOT / ".importlinter"))
    use_cases._register_contract_types(options)
    graph = grimp.build_graph(*options.session_options["root_packages"], include_external_packages=True,
                              cache_dir=None)
    found = {
        contract_options["id"]: registry.get_contract_class(contract_options["type"])(
            name=contract_options["name"], session_options=options.session_options, contract_options=contract_options)
        for contract_options in options.contracts_options
    }
    return found, graph


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def kept(contracts, contract_id: str, *extra: tuple[str, str]) -> bool:
    found, graph = contracts
    graph = copy.deepcopy(graph)
    for importer, imported in extra:
        for module in (importer, imported):
            if module not in graph.modules:
                graph.add_module(module)
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")
    return found[contract_id].check(graph, verbose=False).kept


@pytest.mark.parametrize("contract_id, importer, imported", [
    ("layers", "core.formats", "polls.services"),           # core imports no app
    ("layers", "spaces.models", "webhooks.models"),         # an app imports only the apps below it
    ("layers", "polls.views", "pages.views"),               # no app imports pages
    ("layers", "core.ids", "config.settings"),              # nor config
    ("beside", "polls.services", "ratelimit.keyed"),
    ("beside", "webhooks.dispatch", "ratelimit.limiter"),
    ("layers", "pages.views", "privateapi.views"),          # the private API and pages stand apart
    ("privateapi", "privateapi.views", "webhooks.models"),
    ("pages", "pages.views", "polls.serializers"),          # pages never use the API's HTTP layer
    ("pages", "pages.views", "core.api.errors"),
    ("pages", "pages.views", "rest_framework"),
    ("pages", "pages.views", "webhooks.models"),
    ("no-http", "polls.services", "polls.serializers"),      # services speak no HTTP
    ("no-http", "polls.selectors", "core.api.errors"),
    ("no-http", "ratelimit.limiter", "core.api.errors"),
    ("no-http", "webhooks.models", "rest_framework"),
    ("no-cycles", "core.errors", "core.paging"),             # core.paging imports core.errors
    ("no-cycles", "polls.models", "polls.services"),         # polls.services imports polls.models
])
def test_each_contract_refuses_its_import(contracts, contract_id, importer, imported):
    assert kept(contracts, contract_id)
    assert not kept(contracts, contract_id, (importer, imported))


def test_tests_and_migrations_are_left_out(contracts):
    assert kept(contracts, "layers", ("core.tests.test_x", "polls.services"))
    assert kept(contracts, "no-http", ("polls.tests.test_x", "polls.serializers"))


def test_the_source_rules_find_their_violations():
    apps = {"core", "spaces", "polls", "webhooks", "ratelimit", "idempotency", "pages", "privateapi", "config"}
    assert private_imports("polls.x", "from spaces.management.commands._base import GroupCommand", apps) == [
        "polls.x imports _base of spaces.management.commands._base"]
    assert private_imports("polls.x", "from spaces.admin import _report", apps) == [
        "polls.x imports _report of spaces.admin"]
    assert private_imports("polls.x", "from polls.admin import _report\nfrom urllib3 import _x", apps) == []
    assert named_packages('target_class = "spaces.authentication.ApiKeyAuthentication"', apps) == ["spaces"]
    assert named_packages('"""Polls and spaces in prose are fine."""\nTABLE = "spaces_serviceswitch"', apps) == []


def test_every_periodic_job_is_a_function_of_its_apps_jobs_module(settings):
    """docs/architecture.md: a periodic job is a function in its app's `jobs.py`, named in
    PERIODIC_JOBS as `<app>.<job>`; Celery beat runs each through core.tasks.run_job."""
    from django.utils.module_loading import import_string

    for name, (path, interval) in settings.PERIODIC_JOBS.items():
        app, module, function = path.split(".")
        assert (module, name.split(".")[0]) == ("jobs", app), name
        assert callable(import_string(path)) and interval > 0
        assert settings.CELERY_BEAT_SCHEDULE[name]["task"] == "core.tasks.run_job"
