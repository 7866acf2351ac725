"""Participants answer on the invite page in a real headless Chromium (Debian's package,
driven by Playwright), against the service started the README's way (`bin/serve`): the API
creates the poll, the browser answers, a local webhook receiver gets the events and the
API's results show the votes.

Needs /usr/bin/chromium (or CHROMIUM=/path): without it these tests are deselected with a
note, or fail under CI (conftest.py)."""

import json
import re
import subprocess
import time

import pytest

from tests.browser import ROOT, api, mails, serve, text_of
from tests.waiting import wait_until

pytestmark = pytest.mark.browser

PER_POLL_PER_MINUTE = 4  # answers and comments a poll takes a minute in these tests


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("pages"), PAGES_LIMIT_PER_POLL_PER_MINUTE=str(PER_POLL_PER_MINUTE),
               PAGES_LIMIT_PER_ADDRESS_PER_MINUTE="1000", PAGES_LIMIT_PER_ADDRESS_PER_DAY="10000") as served:
        yield served


@pytest.fixture
def new_page(open_page):
    """`new_page(width=1280, zone=...)`: a page of its own (tests/conftest.py), collecting
    the console's errors in `page.console_errors`."""
    def make(width: int = 1280, zone: str = "Europe/Berlin", javascript: bool = True, locale: str = "en-US"):
        page = open_page(width, timezone_id=zone, java_script_enabled=javascript, locale=locale)
        page.console_errors = []
        page.on("console", lambda message: page.console_errors.append(message.text) if message.type == "error" else None)
        return page

    return make


def create_poll(served, **fields) -> dict:
    base, key, _ = served
    status, created = api(base, key, "POST", "/v1/polls", {
        "title": "Kick-off call", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
        "options": [{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}], **fields})
    assert status == 201, created
    return created["data"]


def wait_for_event(receiver, kind: str, participant_count: int | None = None, timeout: float = 30) -> dict:
    def arrived() -> dict | None:
        return next((body for body in (json.loads(request.get_data()) for request, _ in list(receiver.log))
                     if body["type"] == kind), None)

    return wait_until(arrived, timeout, interval=0.2, message=f"no {kind} arrived")


def choose(page, option_id: str, vote: str) -> None:
    page.check(f"input[name='{option_id}'][value='{vote}']")


def test_a_participant_answers_changes_and_removes_in_the_browser(served, receiver, new_page):
    base, key, _ = served
    receiver.expect_request("/hook").respond_with_data("ok")
    status, _ = api(base, key, "POST", "/v1/webhooks", {"url": receiver.url_for("/hook")})
    assert status == 201
    poll = create_poll(served)
    first, second = (option["id"] for option in poll["options"])

    page = new_page()
    page.goto(poll["inviteUrl"].replace("http://localhost", "http://127.0.0.1"))
    assert page.title() == "Kick-off call · Scheduling Poll"
    assert "09:00–09:30" in page.inner_text("table.grid")
    page.fill("#id_name", "Ada")
    # Keyboard only: from the e-mail field past the grid's scroll region (focusable, so that
    # arrow keys scroll it) to the first option's radios; Space picks "Yes".
    page.focus("#id_email")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('role')") == "region"
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    assert page.is_checked(f"input[name='{first}'][value='yes']")
    choose(page, second, "ifNeedBe")
    page.click("button.primary")
    page.wait_for_selector("#you")
    assert "Thank you, your answer is saved." in page.inner_text("main")
    created = wait_for_event(receiver, "poll.participant.created")
    assert created["data"]["poll"]["id"] == poll["id"]
    status, results = api(base, key, "GET", f"/v1/polls/{poll['id']}/results")
    assert [[v["count"] for v in option["votes"]] for option in results["data"]["options"]] == [[1, 0, 0], [0, 1, 0]]
    edit_link = page.input_value("#edit-link")
    assert f"/invite/{poll['id']}/edit/" in edit_link
    assert page.console_errors == []  # the script ran under the CSP

    # Another browser holding nothing cannot change Ada's answer.
    stranger = new_page()
    stranger.goto(f"{base}/invite/{poll['id']}")
    assert "You answered as" not in stranger.inner_text("main")
    token = stranger.input_value("form.answer input[name=csrfmiddlewaretoken]")
    forged = stranger.request.post(f"{base}/invite/{poll['id']}", form={
        "csrfmiddlewaretoken": token, "action": "update", "name": "Mallory", first: "no"},
        headers={"Origin": base, "Referer": f"{base}/invite/{poll['id']}"})
    assert forged.status == 403 and "Not your answer" in forged.text()

    # The edit link, opened in a third browser, changes and then removes the answer.
    phone = new_page(width=360)
    phone.goto(edit_link.replace("http://localhost", "http://127.0.0.1"))
    assert "You answered as Ada" in phone.inner_text("main")
    choose(phone, second, "yes")
    phone.click("button.primary")
    phone.wait_for_selector("text=Your answer is updated.")
    wait_for_event(receiver, "poll.participant.updated")
    status, results = api(base, key, "GET", f"/v1/polls/{poll['id']}/results")
    assert results["data"]["options"][1]["votes"][0]["count"] == 1
    phone.click("text=Remove my answer")
    phone.wait_for_selector("h1:has-text('Remove your answer?')")  # a second step, no script needed
    phone.click("text=Yes, remove my answer")
    phone.wait_for_selector("text=Your answer is removed.")
    wait_for_event(receiver, "poll.participant.deleted")
    assert api(base, key, "GET", f"/v1/polls/{poll['id']}/participants")[1]["data"] == []


def test_the_viewers_own_time_zone(served, new_page):
    poll = create_poll(served, disableComments=False)
    page = new_page(zone="America/New_York")
    page.goto(f"{served[0]}/invite/{poll['id']}")  # the script remembers the browser's zone and reloads once
    page.wait_for_function("(document.querySelector('#tz') || {}).value === 'America/New_York'")
    assert "03:00–03:30" in page.inner_text("table.grid")
    # A zone chosen in the picker stays through saving, the redirect and commenting.
    page.fill("#tz", "Asia/Tokyo")
    page.click("form.tz button:has-text('Show')")
    page.wait_for_url("**tz=Asia*")
    assert "16:00–16:30" in page.inner_text("table.grid")
    page.click("text=Use my time zone (America/New_York)")  # offered beside the choice
    page.wait_for_function("(document.querySelector('#tz') || {}).value === 'America/New_York'")
    page.fill("#tz", "Asia/Tokyo")
    page.press("#tz", "Enter")
    page.wait_for_url("**tz=Asia*")
    page.fill("#id_name", "Ada")
    page.click("button.primary")
    page.wait_for_selector("#you")
    assert "16:00–16:30" in page.inner_text("table.grid") and "tz=" not in page.url
    page.fill("#c-name", "Ada")
    page.fill("#c-text", "Tokyo here")
    page.click("text=Post comment")
    page.wait_for_selector("article.comment")
    assert "16:00–16:30" in page.inner_text("table.grid") and "(Asia/Tokyo)" in page.inner_text("article.comment")
    # Without JavaScript: the poll's own zone, named.
    plain = new_page(zone="America/New_York", javascript=False)
    plain.goto(f"{served[0]}/invite/{poll['id']}")
    assert "09:00–09:30" in plain.inner_text("table.grid") and plain.input_value("#tz") == "Europe/Berlin"


def test_the_edit_link_copied_emailed_and_sent_again(served, new_page, tmp_path_factory):
    base = served[0]
    folder = next(path for path in tmp_path_factory.getbasetemp().iterdir() if path.name.startswith("pages"))
    poll = create_poll(served)
    page = new_page()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page.goto(f"{base}/invite/{poll['id']}")
    page.fill("#id_name", "Grace")
    page.fill("#id_email", "grace@example.com")
    page.click("button.primary")
    page.wait_for_selector("#you")
    link = page.input_value("#edit-link")
    page.click("#you button:has-text('Copy link')")
    page.wait_for_selector("#you [role=status]:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == link
    token = link.rsplit("/", 1)[1]
    assert edit_links(folder, poll["id"], token)  # e-mailed too (bin/serve prints the console backend's mail)

    other = new_page(width=360)  # another browser: asks for the link again
    other.goto(f"{base}/invite/{poll['id']}")
    other.fill("#lost-email", "grace@example.com")
    other.click("text=Send me my link")
    other.wait_for_selector("text=a new private link is on its way")
    new = edit_links(folder, poll["id"], token, after=True)
    other.goto(new.replace("http://localhost", "http://127.0.0.1"))
    assert "You answered as Grace" in other.inner_text("main")
    page.goto(link.replace("http://localhost", "http://127.0.0.1"))
    assert page.inner_text("h1") == "Link not valid"  # the old link stopped working


def edit_links(folder, poll_id: str, token: str, after: bool = False) -> str:
    """The edit link e-mailed with `token` (or, `after`, the newest one e-mailed after it), from
    the e-mails bin/serve printed (the console backend)."""
    def found() -> str | None:
        links = [link for message in mails(folder / "serve.log")
                 for link in re.findall(rf"http://\S+/invite/{poll_id}/edit/[A-Za-z0-9_-]{{32}}", text_of(message))]
        tokens = [link.rsplit("/", 1)[1] for link in links]
        if token in tokens and (not after or tokens[-1] != token):
            return links[-1] if after else links[tokens.index(token)]
        return None

    return wait_until(found, 15, interval=0.2, message="no edit link in bin/serve's e-mails")


def manage_py(env, *args) -> dict:
    done = subprocess.run([".venv/bin/python", "manage.py", *args, "--json"], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout)


def sign_in_links(folder, poll_id: str) -> list[str]:
    """The sign-in links of the e-mails bin/serve printed (the console backend), oldest first."""
    return [link for message in mails(folder / "serve.log")
            for link in re.findall(rf"http://\S+/poll/{poll_id}/sign-in/[A-Za-z0-9_-]+", text_of(message))]


def sign_in_link(folder, poll_id: str, seen: int) -> str:
    """The newest sign-in link e-mailed after the first `seen` ones."""
    return wait_until(lambda: sign_in_links(folder, poll_id)[seen:], 15, interval=0.2,
                      message="no new sign-in link in bin/serve's e-mails")[-1]


def ask_for_link(page, base: str, poll_id: str, email: str) -> str:
    page.goto(f"{base}/poll/{poll_id}")
    page.fill("#id_email", email)
    page.click("text=Send me a sign-in link")
    page.wait_for_selector("h1:has-text('Check your e-mail')")
    return page.inner_text("main")


def test_an_organizer_runs_the_poll(served, receiver, new_page, tmp_path_factory):
    base, key, env = served
    folder = next(path for path in tmp_path_factory.getbasetemp().iterdir() if path.name.startswith("pages"))
    receiver.expect_request("/organizer-hook").respond_with_data("ok")
    assert api(base, key, "POST", "/v1/webhooks", {"url": receiver.url_for("/organizer-hook")})[0] == 201
    poll = create_poll(served, disableComments=False)
    invite = new_page()
    invite.goto(f"{base}/invite/{poll['id']}")
    invite.fill("#id_name", "Grace")
    invite.fill("#id_email", "grace@example.com")
    choose(invite, poll["options"][0]["id"], "yes")
    invite.click("button.primary")
    invite.wait_for_selector("#you")

    page = new_page()
    seen = len(sign_in_links(folder, poll["id"]))
    known = ask_for_link(page, base, poll["id"], "demo@example.com")
    assert known == ask_for_link(new_page(), base, poll["id"], "nobody@example.com")  # the same answer
    link = sign_in_link(folder, poll["id"], seen).replace("http://localhost", "http://127.0.0.1")
    page.goto(link)
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("text=Signed in as demo@example.com")
    assert "grace@example.com" in page.inner_text("main")  # organizers see e-mail addresses

    for button, kind in (("Close the poll", "poll.closed"), ("Reopen", "poll.reopened")):
        page.click(f"button:has-text('{button}')")
        page.wait_for_selector(".notice.ok")
    page.locator("button:has-text('Schedule')").first.click()  # each asks first
    page.click("h1:has-text('Schedule the poll at this option?') ~ form button:has-text('Schedule')")
    page.wait_for_selector("text=Scheduled for")
    page.click("button:has-text('Call off the event')")
    page.click("h1:has-text('Call off the event?') ~ form button:has-text('Call off the event')")
    page.wait_for_selector("text=The event was called off")
    page.click("button:has-text('Reopen')")
    page.wait_for_selector("text=Open: participants can answer")
    received = {}
    for kind in ("poll.closed", "poll.reopened", "poll.scheduled", "poll.canceled"):
        received[kind] = wait_for_event(receiver, kind)
    assert received["poll.closed"]["data"]["reason"] == "manual"

    page.check("text=Hide participants' names and answers from each other")
    page.click("text=Save changes")
    page.wait_for_selector("text=Your changes are saved.")
    stranger = new_page()
    stranger.goto(f"{base}/invite/{poll['id']}")
    assert "Grace" not in stranger.inner_text("main")  # the invite page follows the setting

    with page.expect_download() as download:
        page.click("text=Download answers (CSV)")
    content = open(download.value.path(), encoding="utf-8").read()
    assert content.startswith("Name,E-mail,") and "Grace,grace@example.com," in content

    page.locator("tr", has=page.locator("th", has_text="Grace")).locator("button:has-text('Remove')").click()
    page.click("button:has-text('Remove the participant')")
    page.wait_for_selector("text=The participant is removed.")
    wait_for_event(receiver, "poll.participant.deleted")

    # The link is used up; another space's poll stays out of reach.
    used = new_page()
    used.goto(link)
    assert used.inner_text("h1") == "Link not valid"
    manage_py(env, "spaces", "create", "--name", "Other team", "--owner-email", "other@example.com", "--pro")
    other_space = manage_py(env, "spaces", "list")
    other_id = next(space["id"] for space in other_space if space["name"] == "Other team")
    other_key = manage_py(env, "keys", "create", other_id)["key"]
    status, foreign = api(base, other_key, "POST", "/v1/polls",
                          {"title": "Not yours", "kind": "date", "options": [{"date": "2031-01-01"}]})
    assert status == 201
    page.goto(f"{base}/poll/{foreign['data']['id']}")
    assert "Send me a sign-in link" in page.inner_text("main")
    token = page.input_value("input[name=csrfmiddlewaretoken]")
    refused = page.request.post(f"{base}/poll/{foreign['data']['id']}/act",
                                form={"csrfmiddlewaretoken": token, "action": "close"},
                                headers={"Origin": base, "Referer": f"{base}/poll/{foreign['data']['id']}"})
    assert refused.status == 403
    assert api(base, other_key, "GET", f"/v1/polls/{foreign['data']['id']}")[1]["data"]["status"] == "open"

    page.goto(f"{base}/poll/{poll['id']}")
    page.click("button:has-text('Sign out')")
    page.wait_for_selector("text=Send me a sign-in link")
