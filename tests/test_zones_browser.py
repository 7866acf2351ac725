"""Time zones on the invite page in a real headless Chromium against bin/serve: a zone chosen
in the searchable picker holds through answering, changing, the edit link and removing (the
confirmation step too), and date options never move, whatever the browser's zone or the
one asked for.

Needs /usr/bin/chromium (or CHROMIUM=/path): without it these tests are deselected with a
note, or fail under CI (conftest.py)."""

import pytest

from tests.browser import api, serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("zones")) as (base, key, _):
        yield base, key


@pytest.fixture
def new_page(open_page):
    """`new_page(zone)`: a page of its own (tests/conftest.py) in that time zone."""
    def make(zone: str):
        return open_page(timezone_id=zone, locale="en-GB")

    return make


def create_poll(served, **fields) -> dict:
    base, key = served
    body = {"title": "Kick-off call", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
            "options": [{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}], **fields}
    status, created = api(base, key, "POST", "/v1/polls", {name: value for name, value in body.items() if value is not None})
    assert status == 201, created
    return created["data"]


def shown(page) -> tuple[str, str]:
    """(the zone the page names, its first option's time)."""
    return page.input_value("#tz"), page.inner_text("tbody tr:first-child .time")


def test_a_chosen_zone_holds_through_answering_changing_and_removing(served, new_page):
    base = served[0]
    poll = create_poll(served)
    first, second = (option["id"] for option in poll["options"])
    invite = f"{base}/invite/{poll['id']}"
    page = new_page("America/New_York")
    page.goto(invite)  # the script remembers the browser's zone and reloads once
    page.wait_for_function("(document.querySelector('#tz') || {}).value === 'America/New_York'")
    assert shown(page) == ("America/New_York", "03:00–03:30")
    offered = page.locator("datalist#zones option")  # the picker's suggestions as one types: IANA zones
    assert offered.count() > 300 and page.locator("datalist#zones option[value='Asia/Tokyo']").count() == 1
    page.fill("#tz", "Asia/Tokyo")
    page.press("#tz", "Enter")
    page.wait_for_url("**tz=Asia*")
    assert shown(page) == ("Asia/Tokyo", "16:00–16:30")

    page.fill("#id_name", "Ada")
    page.check(f"input[name='{first}'][value=yes]")
    page.click("button.primary")
    page.wait_for_selector("#you")
    assert shown(page) == ("Asia/Tokyo", "16:00–16:30") and "tz=" not in page.url
    edit_link = page.input_value("#edit-link").replace("http://localhost", "http://127.0.0.1")
    page.check(f"input[name='{second}'][value=yes]")
    page.click("button.primary")
    page.wait_for_selector("text=Your answer is updated.")
    assert shown(page) == ("Asia/Tokyo", "16:00–16:30")
    page.goto(edit_link)
    assert "You answered as Ada" in page.inner_text("main") and shown(page) == ("Asia/Tokyo", "16:00–16:30")
    page.click("text=Remove my answer")
    page.wait_for_selector("h1:has-text('Remove your answer?')")
    page.click("text=Yes, remove my answer")
    page.wait_for_selector("text=Your answer is removed.")
    assert shown(page) == ("Asia/Tokyo", "16:00–16:30")
    page.goto(f"{base}/invite/{create_poll(served)['id']}")  # another poll: the same zone
    assert shown(page) == ("Asia/Tokyo", "16:00–16:30")


def test_date_options_never_move(served, new_page):
    base = served[0]
    poll = create_poll(served, kind="date", timeZone=None, duration=None,
                       options=[{"date": "2031-06-02"}, {"date": "2031-06-03"}])
    invite = f"{base}/invite/{poll['id']}"
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):  # UTC+14 and UTC-11
        page = new_page(zone)
        for url in (invite, f"{invite}?tz=Asia/Tokyo"):
            page.goto(url)
            days = [" ".join(row.split()) for row in page.locator("tbody th").all_inner_texts()[:2]]
            assert days[0].startswith("Mon 2 Jun 2031") and days[1].startswith("Tue 3 Jun 2031"), (zone, url, days)
            assert page.locator("#tz").count() == 0  # no zone to name: days are days
