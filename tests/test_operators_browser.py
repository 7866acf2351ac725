"""What integrators and operators see in a real headless Chromium (Debian's package) against
the service started the README's way (`bin/serve`): the API reference at `/docs` (every
operation and webhook event, from the service's own assets), and the back office's audit
history, delete confirmation and lists at 1280 pixels."""

import json
import re
import time
import urllib.request

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, api
from tests.test_backoffice_browser import PASSWORD, pick_space, served  # noqa: F401 (served: the bin/serve fixture)
from tests.waiting import wait_until

pytestmark = pytest.mark.browser


def test_the_reference_renders_every_operation_and_the_webhooks(served, tmp_path_factory):  # noqa: F811
    from playwright.sync_api import sync_playwright

    base, _ = served
    with urllib.request.urlopen(f"{base}/v1/openapi", timeout=10) as response:
        document = json.loads(response.read())
    operations = [op for ops in document["paths"].values() for op in ops.values()]
    events = list(document["webhooks"])
    assert len(operations) >= 15 and "poll.created" in events

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            foreign = []
            # Fetched from elsewhere (Redoc's own logo is refused by the page's CSP: never fetched).
            page.on("requestfinished", lambda r: foreign.append(r.url) if not r.url.startswith((base, "data:", "blob:")) else None)
            page.goto(f"{base}/docs")
            page.wait_for_selector("[data-section-id^='operation/']")
            page.screenshot(path=str(tmp_path_factory.getbasetemp() / "docs.png"))
            for op in operations:
                section = page.locator(f"[data-section-id='operation/{op['operationId']}']")
                assert section.count() == 1, op["operationId"]
                assert op["summary"] in section.inner_text()
            text = page.inner_text("body")
            assert "Webhooks" in text or "WEBHOOKS" in text
            for event in events:
                summary = next(iter(document["webhooks"][event].values()))["summary"]
                assert summary in text, event
            assert foreign == []
        finally:
            browser.close()


@pytest.fixture(scope="module")
def staff_page(served, tmp_path_factory):  # noqa: F811
    """A logged-in back-office page, 1280 pixels wide."""
    from playwright.sync_api import sync_playwright

    base, _ = served
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", "staff")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_selector("#site-name")
        try:
            yield page
        finally:
            browser.close()


def screenshot(page, tmp_path_factory, name: str) -> None:
    page.screenshot(path=str(tmp_path_factory.getbasetemp() / f"{name}.png"), full_page=True)


def new_poll(served, title: str) -> str:  # noqa: F811
    base, key = served
    status, created = api(base, key, "POST", "/v1/polls",
                          {"title": title, "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
                           "options": [{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}]})
    assert status == 201, created
    return created["data"]["id"]


def test_delete_asks_first_and_the_history_says_who_deleted(served, staff_page, tmp_path_factory):  # noqa: F811
    base, key = served
    page = staff_page
    poll_id = new_poll(served, "Browser offsite")
    page.goto(f"{base}/admin/polls/poll/{poll_id}/change/")
    # Times in the poll's zone beside UTC, and the vote totals.
    assert "Mon 2031-06-02 09:00 Europe/Berlin" in page.inner_text("body")
    assert page.locator("table.vote-totals tr").count() == 3
    screenshot(page, tmp_path_factory, "poll-page")
    page.click("a:has-text('Delete…')")
    page.wait_for_selector("text=Yes, delete")
    screenshot(page, tmp_path_factory, "confirm-delete")
    assert api(base, key, "GET", f"/v1/polls/{poll_id}")[0] == 200  # asking deleted nothing
    page.click("input[value='Yes, delete']")
    page.wait_for_selector(".messagelist")
    assert f"Deleted: {poll_id}" in page.inner_text(".messagelist")
    assert api(base, key, "GET", f"/v1/polls/{poll_id}")[0] == 404
    page.goto(f"{base}/admin/polls/poll/{poll_id}/history/")
    rows = page.inner_text("#change-history")
    screenshot(page, tmp_path_factory, "history")
    assert re.search(r"staff\s+Deleted", rows), rows
    # The default list leaves it out; "Deleted" lists it.
    page.goto(f"{base}/admin/polls/poll/")
    assert poll_id not in page.inner_text("#changelist")
    page.goto(f"{base}/admin/polls/poll/?deleted=yes")
    assert "Browser offsite" in page.inner_text("#result_list")


def test_a_ban_from_the_user_list_is_in_the_users_history(served, staff_page):  # noqa: F811
    base, _ = served
    page = staff_page
    page.goto(f"{base}/admin/spaces/user/")
    page.locator("#result_list tbody tr").first.locator("input.action-select").check()
    page.select_option("select[name=action]", "ban")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")
    page.locator("#result_list tbody tr").first.locator("th a").click()
    page.click("a.historylink")
    assert re.search(r"staff\s+Banned", page.inner_text("#change-history"))
    page.go_back()
    page.go_back()
    page.locator("#result_list tbody tr").first.locator("input.action-select").check()
    page.select_option("select[name=action]", "unban")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")


def no_horizontal_scroll(page) -> bool:
    """Neither the page nor the list's own scrolling box (the admin's `.results`) is wider
    than the window."""
    return page.evaluate("""() => [document.documentElement, document.querySelector('#changelist .results')]
        .every(box => box.scrollWidth <= box.clientWidth)""")


def column_in_view(page, title: str) -> bool:
    """The column's heading and its first cell are inside the list's visible box."""
    visible = page.locator("#changelist .results").bounding_box()
    heading = page.locator("#result_list thead th", has_text=title).first
    index = heading.evaluate("th => th.cellIndex")
    cell = page.locator(f"#result_list tbody tr:first-child > *:nth-child({index + 1})").bounding_box()
    right = min(visible["x"] + visible["width"], 1280)
    return all(box["x"] + box["width"] <= right + 1 for box in (heading.bounding_box(), cell))


def test_delivery_and_key_lists_fit_1280_pixels(served, staff_page, tmp_path_factory):  # noqa: F811
    base, key = served
    page = staff_page
    # A receiver that refuses connections: every attempt fails with a long error.
    dead = f"{base.rsplit(':', 1)[0]}:9/{'a-long-path/' * 8}hook"
    status, _ = api(base, key, "POST", "/v1/webhooks", {"url": dead})
    assert status == 201
    new_poll(served, "Deliveries at 1280")
    page.goto(f"{base}/admin/spaces/apikey/add/")
    pick_space(page, "Demo space")
    page.fill("#id_name", "a key with a rather long name for the CI pipeline of the mobile app")
    page.click("input[name=_save]")

    def failed_delivery_listed() -> bool:
        page.goto(f"{base}/admin/webhooks/delivery/")
        return "connection" in page.inner_text("#result_list").lower()

    wait_until(failed_delivery_listed, 60, interval=1)
    screenshot(page, tmp_path_factory, "deliveries-1280")
    assert no_horizontal_scroll(page)
    for title in ("Status", "Attempts", "Last error"):
        assert column_in_view(page, title), title
    page.goto(f"{base}/admin/spaces/apikey/")
    screenshot(page, tmp_path_factory, "keys-1280")
    assert no_horizontal_scroll(page)
    for title in ("State", "Last used", "Expires"):
        assert column_in_view(page, title), title
