"""No module of the project over 400 lines: one that grows past it is split by topic, tests
included."""

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
