"""The rendered API reference at `/docs` and the way to it from `/`."""

import re
import subprocess
import sys
from pathlib import Path

from django.contrib.staticfiles import finders


def test_docs_serves_redoc_over_the_openapi_document_from_our_own_static_files(client):
    response = client.get("/docs")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert 'spec-url="/v1/openapi"' in page or 'Redoc.init("/v1/openapi"' in page
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert scripts == ["/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"]
    assert finders.find(scripts[0].removeprefix("/static/"))
    # Nothing from another host (no CDN, no web fonts).
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "img-src 'self' data:;" in response["Content-Security-Policy"]


def test_docs_answers_other_methods_with_the_json_404(anon):
    response = anon.post("/docs", {})
    assert response.status_code == 404 and response.body["error"]["code"] == "NOT_FOUND"


def test_the_404_of_the_root_points_to_the_reference(anon):
    response = anon.get("/")
    assert response.status_code == 404
    assert response.body["error"]["code"] == "NOT_FOUND"
    assert "/docs" in response.body["error"]["message"] and "/v1/openapi" in response.body["error"]["message"]
    assert anon.get("/nothing-here").body["error"]["message"] != response.body["error"]["message"]


# --- What the deploy docs promise ----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def test_honcho_runs_the_procfile_with_the_pinned_version_the_docs_install():
    pin = re.search(r"^honcho==(\S+)", (ROOT / "requirements-dev.txt").read_text(), re.M).group(1)
    for doc in ("README.md", "docs/deploy.md"):
        assert set(re.findall(r"honcho==(\S+)", (ROOT / doc).read_text())) == {pin}, doc
    checked = subprocess.run([str(Path(sys.executable).parent / "honcho"), "check"], cwd=ROOT, capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stderr
    assert "web, worker, beat" in checked.stderr + checked.stdout


def test_the_docs_list_the_ci_stages_in_the_order_ci_runs_them():
    script = (ROOT / ".ci" / "run").read_text()
    calls = re.findall(r"^(run_lint|run_schemathesis|run_pytest \w+)(?!\(\))(?:$| )", script, re.M)
    assert calls == ["run_lint", "run_schemathesis", "run_pytest sqlite", "run_pytest postgresql"]
    words = ["ruff", "schemathesis", "SQLite", "PostgreSQL"]
    for doc, start in (("README.md", "CI runs `.ci/run`"), ("docs/deploy.md", "`.ci/run` runs")):
        text = (ROOT / doc).read_text()
        sentence = text[text.index(start):text.index(".", text.index("PostgreSQL", text.index(start)))]
        positions = [sentence.index(word) for word in words]
        assert positions == sorted(positions), (doc, sentence)


# --- The docs themselves -------------------------------------------------------------------

DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_the_docs_are_read_in_an_hour():
    """README.md at most 180 lines, docs/performance.md at most 150, all of docs/ under 1,600."""
    lines = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines()) for path in [ROOT / "README.md", *DOCS]}
    assert lines["README.md"] <= 180
    assert lines["docs/performance.md"] <= 150
    assert sum(count for name, count in lines.items() if name.startswith("docs/")) < 1600, lines


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_docs_leads_to_a_file_and_a_heading_that_exist():
    broken = []
    for doc in [ROOT / "README.md", *DOCS]:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # another site
            path, _, fragment = target.partition("#")
            linked = (doc.parent / path).resolve() if path else doc
            if not linked.exists():
                broken.append(f"{doc.name}: {target}")
            elif fragment and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.M)
                if fragment not in {anchor(heading) for heading in headings}:
                    broken.append(f"{doc.name}: {target}")
    assert not broken


def test_every_setting_the_service_reads_is_in_the_deploy_guides_settings_table():
    read = set()
    for path in (ROOT / "config").rglob("*.py"):
        read |= set(re.findall(r"\benv\.\w+\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']", path.read_text()))
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    table = deploy[deploy.index("## Settings"):deploy.index("\n## ", deploy.index("## Settings") + 1)]
    assert read and read <= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table)), read - set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
