"""Every state of the invite and organizer pages in a real headless Chromium (Debian's, driven by
Playwright) against the service started the README's way: axe-core (the script that
axe-playwright-python ships) finds no violation in the light or the dark colour scheme, and no
page is wider than a 360-pixel phone.

Needs /usr/bin/chromium (or CHROMIUM=/path), as tests/test_pages_browser.py does."""

import re
import subprocess

import pytest

from tests.browser import ROOT, api, mails, serve, text_of
from tests.waiting import wait_until

pytestmark = pytest.mark.browser

PHONE = 360


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("a11y")
    with serve(folder, PAGES_LIMIT_PER_POLL_PER_MINUTE="1000", PAGES_LIMIT_PER_ADDRESS_PER_MINUTE="1000",
               PAGES_LIMIT_PER_ADDRESS_PER_DAY="10000", PAGES_LIMIT_PER_POLL_PER_DAY="10000") as (base, key, env):
        yield base, key, env, folder


@pytest.fixture(scope="module")
def page(chromium):
    """One page for the whole module, at 1280 x 900 (Checker narrows it to a phone and back)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, timezone_id="Europe/Berlin")
    context.set_default_timeout(20_000)
    try:
        yield context.new_page()
    finally:
        context.close()


class Checker:
    """Runs axe-core and the width check on the page as it is; collects what fails."""

    def __init__(self, page, folder):
        from axe_playwright_python.sync_playwright import Axe

        self.page, self.folder, self.axe, self.failures, self.seen = page, folder, Axe(), [], []

    def __call__(self, state: str) -> None:
        page = self.page
        self.seen.append(state)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            self._axe(f"{state} ({scheme}, 1280 px)")
        page.set_viewport_size({"width": PHONE, "height": 800})
        try:
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE:
                self.failures.append(f"{state}: {width} px wide on a {PHONE} px phone")
            self._axe(f"{state} (dark, {PHONE} px)")
            name = re.sub(r"\W+", "-", state)
            page.screenshot(path=str(self.folder / f"{len(self.seen):02d}-{name}.png"), full_page=True)
        finally:
            page.set_viewport_size({"width": 1280, "height": 900})
            page.emulate_media(color_scheme="light")

    def _axe(self, label: str) -> None:
        results = self.axe.run(self.page)
        if results.violations_count:
            self.failures.append(f"{label}: {results.generate_report()}")


def manage_py(env, *args) -> None:
    subprocess.run([".venv/bin/python", "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True)


def new_poll(served, **fields) -> dict:
    base, key, _, _ = served
    body = {"title": "Kick-off call", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
            "description": "Bring ideas.", "location": "Room 4",
            "options": [{"startTime": f"2031-06-0{day}T{hour}:00:00"} for day in (2, 3) for hour in (10, 14)],
            "allowTentativeVotes": True, "disableComments": False, **fields}
    status, created = api(base, key, "POST", "/v1/polls", {k: v for k, v in body.items() if v is not None})
    assert status == 201, created
    return created["data"]


def answer(page, base: str, poll: dict, name: str, votes: dict, email: str = "") -> None:
    """An answer posted from the page's own form (its CSRF token), without opening it in this tab."""
    page.goto(f"{base}/invite/{poll['id']}")
    token = page.input_value("form.answer input[name=csrfmiddlewaretoken]")
    response = page.request.post(f"{base}/invite/{poll['id']}", form={
        "csrfmiddlewaretoken": token, "action": "create", "name": name, "email": email, **votes},
        headers={"Origin": base, "Referer": f"{base}/invite/{poll['id']}"}, max_redirects=0)
    assert response.status == 302, response.text()
    page.context.clear_cookies(name=f"answer_{poll['id']}")


def sign_in_link(folder, poll_id: str) -> str:
    """The newest sign-in link of the e-mails bin/serve printed (the console backend)."""
    def links() -> list[str]:
        return [link for message in mails(folder / "serve.log")
                for link in re.findall(rf"http://\S+/poll/{poll_id}/sign-in/[A-Za-z0-9_-]+", text_of(message))]

    return wait_until(links, 15, interval=0.2, message="no sign-in link in bin/serve's e-mails")[-1].replace(
        "http://localhost", "http://127.0.0.1")


def test_no_violation_and_no_wider_than_a_phone_in_any_state(served, page, tmp_path_factory):
    base, _, env, folder = served
    check = Checker(page, tmp_path_factory.mktemp("a11y-shots"))
    poll = new_poll(served)
    options = [option["id"] for option in poll["options"]]
    kinds = ("yes", "ifNeedBe", "no", "")
    for n in range(17):  # two pages of the grid
        answer(page, base, poll, f"Participant {n} with a long name", {
            option: kinds[(n + i) % 4] for i, option in enumerate(options) if kinds[(n + i) % 4]},
            email=f"p{n}@example.com" if n == 0 else "")
    invite = f"{base}/invite/{poll['id']}"

    page.goto(invite)
    check("invite, a newcomer")
    # Others' answers are words to a screen reader (the symbols are the stylesheet's, with no text alternative).
    assert page.get_by_role("cell", name="Yes", exact=True).count() > 10
    assert page.get_by_role("cell", name="If need be", exact=True).count() > 10
    assert page.get_by_role("cell", name="✓").count() == 0
    # A phone gets a list per option instead of the participants' columns; a desk the columns.
    assert page.locator("th.who-col").first.is_visible() and not page.locator("tr.said").first.is_visible()
    page.set_viewport_size({"width": PHONE, "height": 800})
    assert not page.locator("th.who-col").first.is_visible() and page.locator("tr.said").first.is_visible()
    assert "Yes: Participant" in page.locator("tr.said").first.inner_text()
    page.set_viewport_size({"width": 1280, "height": 900})
    # The dark scheme follows the system's setting.
    backgrounds = set()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        backgrounds.add(page.evaluate("getComputedStyle(document.documentElement).backgroundColor"))
    page.emulate_media(color_scheme="light")
    assert len(backgrounds) == 2
    page.fill("#c-name", "Ada")
    page.fill("#c-text", "Works for me, " * 20)
    page.click("text=Post comment")
    page.wait_for_selector("article.comment")
    check("invite, a comment posted")
    page.evaluate("document.querySelector('form.answer').noValidate = true")
    page.fill("#id_email", "not an address")
    page.click("button.primary")
    page.wait_for_selector(".notice.bad")
    check("invite, an answer refused")
    page.goto(f"{invite}?tz=Mars/Olympus")
    check("invite, not a time zone")
    page.goto(f"{invite}?page=2")
    page.fill("#id_name", "Grace")
    page.check(f"input[name='{options[0]}'][value='yes']")
    page.check(f"input[name='{options[1]}'][value='ifNeedBe']")
    page.click("button.primary")
    page.wait_for_selector("#you")
    check("invite, answered, with the edit link")
    page.click("text=Remove my answer")
    page.wait_for_selector("h1:has-text('Remove your answer?')")
    check("invite, removing asks first")
    page.goto(invite)
    page.context.clear_cookies(name=f"answer_{poll['id']}")
    page.goto(invite)
    page.fill("#lost-email", "p0@example.com")
    page.click("text=Send me my link")
    page.wait_for_selector("text=a new private link is on its way")
    check("invite, link sent")

    for fields, state in (({"hideScores": True}, "hidden totals"), ({"hideParticipants": True}, "hidden names"),
                          ({"kind": "date", "options": [{"date": "2031-06-02"}, {"date": "2031-06-03"}],
                            "timeZone": None, "duration": None}, "a date poll")):
        other = new_poll(served, **fields)
        answer(page, base, other, "Linus", {other["options"][0]["id"]: "yes"})
        page.goto(f"{base}/invite/{other['id']}")
        check(f"invite, {state}")

    page.goto(f"{base}/invite/nopenopenope")
    check("invite, not found")

    # The organizer's pages.
    manage = f"{base}/poll/{poll['id']}"
    page.goto(manage)
    check("organizer, sign in")
    page.fill("#id_email", "demo@example.com")
    page.click("text=Send me a sign-in link")
    page.wait_for_selector("h1:has-text('Check your e-mail')")
    check("organizer, link sent")
    page.goto(sign_in_link(folder, poll["id"]))
    check("organizer, the link's button")
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("text=Signed in as")
    check("organizer, open poll")
    page.locator("button:has-text('Schedule')").first.click()
    page.wait_for_selector("form button.primary, form button.danger")
    check("organizer, a confirmation step")
    page.locator("main form button[type=submit]").first.click()
    page.wait_for_selector("text=Scheduled for")
    check("organizer, scheduled")
    page.goto(invite)
    check("invite, scheduled")
    manage_py(env, "polls", "cancel", poll["id"])
    page.goto(invite)
    check("invite, canceled")
    manage_py(env, "polls", "reopen", poll["id"])
    manage_py(env, "polls", "close", poll["id"])
    page.goto(invite)
    check("invite, closed")
    page.goto(manage)
    check("organizer, closed")
    page.goto(f"{base}/poll/{poll['id']}/sign-in/{'x' * 32}")
    check("organizer, a dead link")

    assert len(check.seen) >= 20
    assert check.failures == [], "\n\n".join(check.failures)
