"""What staff do in the back office, in a real headless Chromium (Debian's package, driven
by Playwright), against the service started the README's way (`bin/serve`).

Needs /usr/bin/chromium (or CHROMIUM=/path): without it these tests are deselected with a
note, or fail under CI (conftest.py)."""

import re
import subprocess

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, ROOT, api, serve

pytestmark = pytest.mark.browser

PASSWORD = "browser-test-password"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """bin/serve with a staff login, and the demo key it printed."""
    with serve(tmp_path_factory.mktemp("backoffice")) as (base, key, env):
        subprocess.run([".venv/bin/python", "manage.py", "createsuperuser", "--noinput", "--username", "staff",
                        "--email", "staff@example.com"], cwd=ROOT, check=True, capture_output=True,
                       env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD})
        yield base, key


@pytest.fixture(scope="module")
def page(served, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(20_000)
        page = context.new_page()
        page.static_answers = []
        page.on("response", lambda r: page.static_answers.append((r.url, r.status, r.headers.get("content-type", "")))
                if "/static/" in r.url else None)
        try:
            yield page
        finally:
            page.screenshot(path=str(tmp_path_factory.getbasetemp() / "backoffice-last.png"), full_page=True)
            browser.close()


def pick_space(page, name: str) -> None:
    """Choose a space in the admin's autocomplete (select2) picker by typing its name."""
    page.click("#id_space + .select2 .select2-selection")
    page.fill(".select2-search__field", name[:4])
    page.click(f".select2-results__option:has-text('{name}')")


def test_staff_log_in_to_a_styled_back_office(served, page):
    base, _ = served
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "staff")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    assert page.title() == "Spaces, polls, webhooks and limits | Scheduling Poll back office"
    assert page.inner_text("#site-name") == "Scheduling Poll back office"
    # Styled: the admin's stylesheets arrived, and the header wears their colours.
    css = [answer for answer in page.static_answers if answer[0].endswith(".css")]
    assert css and all(status in (200, 304) and "text/css" in kind for _, status, kind in css), css
    header = page.eval_on_selector("#header", "element => getComputedStyle(element).backgroundColor")
    assert header not in ("rgba(0, 0, 0, 0)", "transparent"), header


def test_staff_add_an_api_key_through_the_space_picker(served, page):
    base, _ = served
    page.goto(f"{base}/admin/spaces/apikey/add/")
    pick_space(page, "Demo space")
    page.fill("#id_name", "made in the browser")
    page.click("input[name=_save]")
    message = page.inner_text(".messagelist")
    new_key = re.search(r"The new API key is (sk_\S+)\.", message).group(1)
    assert api(base, new_key, "GET", "/v1/polls")[0] == 200


def test_staff_add_a_webhook_endpoint(served, page):
    base, _ = served
    page.goto(f"{base}/admin/webhooks/endpoint/add/")
    pick_space(page, "Demo space")
    page.fill("#id_url", f"{base}/browser-hook")
    page.click("input[name=_save]")
    message = page.inner_text(".messagelist")
    assert re.search(r"The endpoint's signing secret is whsec_\S+\.", message), message
    assert f"{base}/browser-hook" in page.inner_text("#result_list")


def test_staff_close_a_poll_with_its_lifecycle_button(served, page):
    base, key = served
    status, created = api(base, key, "POST", "/v1/polls",
                          {"title": "Browser lunch", "kind": "date", "options": [{"date": "2031-05-02"}]})
    assert status == 201, created
    poll_id = created["data"]["id"]
    page.goto(f"{base}/admin/polls/poll/{poll_id}/change/")
    close = page.locator("button:has-text('Close')")
    assert close.get_attribute("formmethod") == "post"
    close.click()
    page.wait_for_load_state()
    assert f"Closed: {poll_id}" in page.inner_text(".messagelist")
    assert "csrfmiddlewaretoken" not in page.url  # posted, not put in the URL
    status, poll = api(base, key, "GET", f"/v1/polls/{poll_id}")
    assert (status, poll["data"]["status"]) == (200, "closed")
