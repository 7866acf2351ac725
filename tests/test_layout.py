"""The project's layout: no module over 400 lines (one that grows past it is split by topic,
tests included), and every folder of tests is one that `bin/test` runs."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def project_modules():
    """Every .py file under the project's root, but in hidden folders (.venv, .git) and var/."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if not any(part.startswith(".") for part in parts) and parts[0] != "var":
            yield path


def test_no_module_is_over_400_lines():
    modules = list(project_modules())
    assert ROOT / "core" / "tests" / "test_bulkhead.py" in modules and ROOT / "manage.py" in modules
    too_long = {str(path.relative_to(ROOT)): lines for path in modules
                if (lines := len(path.read_text().splitlines())) > MAX_LINES}
    assert not too_long, f"split by topic, each under {MAX_LINES} lines: {too_long}"


def test_every_folder_of_tests_is_in_testpaths():
    """An app's `tests/` left out of pytest.ini's `testpaths` would never run in `bin/test`."""
    config = configparser.ConfigParser()
    config.read(ROOT / "pytest.ini")
    testpaths = set(config["pytest"]["testpaths"].split())
    folders = {path.parent.relative_to(ROOT).parts[0] for path in project_modules() if path.name.startswith("test_")}
    assert {"tests", "core", "polls"} <= folders
    assert folders <= testpaths, f"add to testpaths in pytest.ini: {sorted(folders - testpaths)}"
