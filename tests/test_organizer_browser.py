"""The organizer's page in a real headless Chromium (Debian's package, driven by Playwright)
against the service started the README's way (`bin/serve`, e-mail into files): each action
of issue 78 (confirmation steps, the answers grid, the deadline, options, duplicating,
notifications, the decision e-mails), with and without JavaScript."""

import re
import time

import pytest

from tests.browser import api, mails, serve, text_of, wait_for_mail

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("organizer")
    (folder / "mail").mkdir()
    with serve(folder, EMAIL_URL=f"filemail:///{folder / 'mail'}", PAGES_LIMIT_PER_POLL_PER_MINUTE="1000",
               PAGES_LIMIT_PER_ADDRESS_PER_MINUTE="1000", PAGES_LIMIT_PER_ADDRESS_PER_DAY="10000") as (base, key, env):
        yield base, key, env, folder / "mail"


@pytest.fixture
def new_page(open_page):
    """`new_page(width=1280, script=True, locale="en-GB")`: a page of its own (tests/conftest.py;
    the locale is its Accept-Language)."""
    def make(width: int = 1280, script: bool = True, locale: str = "en-GB"):
        return open_page(width, java_script_enabled=script, locale=locale)

    return make


def create_poll(served, **fields) -> dict:
    base, key = served[:2]
    status, created = api(base, key, "POST", "/v1/polls", {
        "title": "Kick-off call", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
        "options": [{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}], **fields})
    assert status == 201, created
    return created["data"]


def sign_in(page, served, poll_id: str) -> None:
    base, folder = served[0], served[3]
    page.goto(f"{base}/poll/{poll_id}")
    page.fill("#id_email", "demo@example.com")
    started = time.time()
    page.click("text=Send me a sign-in link")
    page.wait_for_selector("h1:has-text('Check your e-mail')")
    message = wait_for_mail(folder, lambda m: f"/poll/{poll_id}/sign-in/" in text_of(m)
                            and m["Date"] and m["Date"].datetime.timestamp() >= int(started))
    link = re.search(r"http://\S+/sign-in/\S+", text_of(message)).group(0)
    page.goto(link.replace("http://localhost", "http://127.0.0.1"))
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("text=Signed in as demo@example.com")


def answer(page, base: str, poll: dict, name: str, votes: list[str], email_address: str = "") -> None:
    page.goto(f"{base}/invite/{poll['id']}")
    page.fill("#id_name", name)
    if email_address:
        page.fill("#id_email", email_address)
    for option, vote in zip(poll["options"], votes, strict=False):
        page.check(f"input[name='{option['id']}'][value='{vote}']")
    page.click("button.primary")
    page.wait_for_selector("#you")


@pytest.mark.parametrize("script", [True, False], ids=["javascript", "no-javascript"])
def test_confirmation_steps_the_grid_and_the_deadline(served, new_page, script):
    base, key = served[:2]
    poll = create_poll(served, disableComments=False)
    guest = new_page()
    answer(guest, base, poll, "Grace", ["yes", "ifNeedBe"], "grace@example.com")
    guest.fill("#c-name", "Grace")
    guest.fill("#c-text", "Mornings suit me")
    guest.click("text=Post comment")
    guest.wait_for_selector("article.comment")

    page = new_page(script=script)
    sign_in(page, served, poll["id"])
    grid = page.inner_text("table.answers")
    assert "grace@example.com\t" in grid and "Yes\tIf need be" in grid  # who said what

    page.fill("#closes_at", "2031-05-30T18:00")
    page.click("button:has-text('Set a deadline')")
    page.wait_for_selector("text=The deadline is set.")
    assert "Closes automatically on Friday 30 May 2031, 18:00 (Europe/Berlin)" in page.inner_text("main")
    guest.goto(f"{base}/invite/{poll['id']}")
    assert "Answers close on Friday 30 May 2031, 18:00 (Europe/Berlin)." in guest.inner_text("main")

    page.click("button:has-text('Remove comment')")
    page.wait_for_selector("h1:has-text('Remove this comment?')")
    page.click("text=Go back")  # changes nothing
    page.wait_for_selector("article.comment")
    page.click("button:has-text('Remove comment')")
    page.click("button:has-text('Remove the comment')")
    page.wait_for_selector("text=The comment is removed.")

    page.locator("tr", has=page.locator("th", has_text="Grace")).locator("button:has-text('Remove')").click()
    assert "Grace" in page.inner_text("p.what")
    page.click("button:has-text('Remove the participant')")
    page.wait_for_selector("text=No answers yet.")

    page.click("button:has-text('Delete this poll')")
    page.wait_for_selector("h1:has-text('Delete this poll?')")
    assert api(base, key, "GET", f"/v1/polls/{poll['id']}")[0] == 200  # not yet
    page.click("button:has-text('Delete the poll')")
    page.wait_for_selector("h1:has-text('Poll deleted')")
    assert api(base, key, "GET", f"/v1/polls/{poll['id']}")[0] == 404


def test_options_change_and_duplicate(served, new_page):
    base, key = served[:2]
    poll = create_poll(served)
    first = poll["options"][0]["id"]
    guest = new_page(width=360)
    answer(guest, base, poll, "Grace", ["yes", "no"])

    page = new_page()
    sign_in(page, served, poll["id"])
    page.check(f".change-options input[value='{first}']")
    page.locator(".change-options input[name=add_day]").first.fill("2031-06-03")
    page.locator(".change-options input[name=add_time]").first.fill("14:30")
    page.click("button:has-text('Save options')")
    page.wait_for_selector("text=The options are saved.")
    status, results = api(base, key, "GET", f"/v1/polls/{poll['id']}/results")
    assert [(o["startTime"], o["duration"], [v["count"] for v in o["votes"]]) for o in results["data"]["options"]] == [
        ("2031-06-02T08:00:00.000Z", 30, [0, 0, 1]), ("2031-06-03T12:30:00.000Z", 30, [0, 0, 0])]
    guest.goto(f"{base}/invite/{poll['id']}")
    assert "The options changed since your answer." in guest.inner_text("#you")

    page.fill("#copy-title", "Kick-off call, take two")
    page.click("button:has-text('Duplicate this poll')")
    page.wait_for_selector("text=This is the new poll")
    copy_id = page.url.split("/poll/", 1)[1].split("?", 1)[0]
    assert copy_id != poll["id"] and page.inner_text("h1") == "Kick-off call, take two"
    status, copy = api(base, key, "GET", f"/v1/polls/{copy_id}")
    assert status == 200 and copy["data"]["participantCount"] == 0
    assert [o["startTime"] for o in copy["data"]["options"]] == [o["startTime"] for o in results["data"]["options"]]


def test_the_organizer_is_told_of_answers_and_unsubscribes(served, new_page):
    base, folder = served[0], served[3]
    poll = create_poll(served, title="Notified call")
    guest = new_page()
    answer(guest, base, poll, "Linus", ["yes", "yes"])
    message = wait_for_mail(folder, lambda m: m["Subject"] == "“Notified call”: 1 answer")  # from the jobs loop
    assert "Linus answered" in text_of(message)
    assert "<strong>Linus</strong> answered" in message.get_body(preferencelist=("html",)).get_content()
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = message["List-Unsubscribe"].strip().strip("<>").replace("http://localhost", "http://127.0.0.1")

    page = new_page(script=False)
    page.goto(link)
    page.click("button:has-text('Stop the e-mails')")
    page.wait_for_selector("h1:has-text('No more e-mails about this poll')")
    sign_in(page, served, poll["id"])
    assert "No e-mails about answers and comments." in page.inner_text("main")
    page.click("button:has-text('E-mail the organizer about answers')")
    page.wait_for_selector("text=You will be e-mailed about answers and comments.")


def calendar_of(message):
    from icalendar import Calendar

    [part] = [part for part in message.walk() if part.get_content_type() == "text/calendar"]
    cal = Calendar.from_ical(part.get_payload(decode=True))
    return cal, cal.walk("VEVENT")[0]


@pytest.mark.parametrize("script", [True, False], ids=["javascript", "no-javascript"])
def test_the_decision_reaches_the_participants(served, new_page, script):
    base, folder = served[0], served[3]
    title = f"Decided call {'js' if script else 'plain'}"
    poll = create_poll(served, title=title)
    answer(new_page(), base, poll, "Ada", ["yes", "no"], "ada@example.com")
    answer(new_page(), base, poll, "Bob", ["yes", "yes"])

    page = new_page(script=script)
    sign_in(page, served, poll["id"])
    page.locator("button:has-text('Schedule')").first.click()
    assert "Monday 2 June 2031, 09:00–09:30 (Europe/Berlin)" in page.inner_text("p.what")
    assert page.is_checked("input[name=email]")
    page.click("h1 ~ form button:has-text('Schedule')")
    page.wait_for_selector("text=get the decision and a calendar invitation by e-mail")
    invite = wait_for_mail(folder, lambda m: m["To"] == "ada@example.com" and f"{title}”: Monday" in m["Subject"])
    assert "= Monday 2 June 2031, 07:00–07:30 (UTC)" in text_of(invite)
    cal, event = calendar_of(invite)
    assert str(cal["METHOD"]) == "REQUEST" and int(event["SEQUENCE"]) == 1
    assert str(event["UID"]).startswith(poll["id"] + "@")

    page.click("button:has-text('Call off the event')")
    assert "Monday 2 June 2031, 09:00–09:30 (Europe/Berlin)" in page.inner_text("p.what")  # which event
    assert page.is_checked("input[name=email]")
    page.click("h1 ~ form button:has-text('Call off the event')")
    page.wait_for_selector("text=Those invited get a cancellation by e-mail.")
    canceled = wait_for_mail(folder, lambda m: m["To"] == "ada@example.com" and "called off" in m["Subject"]
                             and title in m["Subject"])
    cal, event = calendar_of(canceled)
    assert (str(cal["METHOD"]), int(event["SEQUENCE"]), str(event["STATUS"])) == ("CANCEL", 2, "CANCELLED")


def test_reopening_clears_the_deadline_and_rescheduling_updates_the_event(served, new_page):
    base, folder = served[0], served[3]
    poll = create_poll(served, title="Rescheduled call")
    answer(new_page(locale="de-DE"), base, poll, "Jana", ["yes", "yes"], "jana@example.com")  # a German page

    page = new_page(script=False)
    sign_in(page, served, poll["id"])
    page.fill("#closes_at", "2031-05-30T18:00")
    page.click("button:has-text('Set a deadline')")
    page.wait_for_selector("text=The deadline is set.")
    page.click("button:has-text('Close the poll')")
    page.wait_for_selector("text=The poll is closed.")
    page.click("button:has-text('Reopen')")
    page.wait_for_selector("text=The poll is open again.")
    assert "Closes automatically" not in page.inner_text("main") and page.input_value("#closes_at") == ""

    page.locator("button:has-text('Schedule')").first.click()
    page.click("h1 ~ form button:has-text('Schedule')")
    page.wait_for_selector("text=get the decision and a calendar invitation by e-mail")
    first = wait_for_mail(folder, lambda m: m["To"] == "jana@example.com" and "call“: " in m["Subject"])
    assert first["Subject"].strip() == "„Rescheduled call“: Montag, 2. Juni 2031, 09:00–09:30"  # Jana's language
    assert "= Montag, 2. Juni 2031, 07:00–07:30 (UTC)" in text_of(first)
    assert "Hallo Jana," in first.get_body(preferencelist=("html",)).get_content()
    uid = str(calendar_of(first)[1]["UID"])

    page.click("button:has-text('Call off the event')")
    page.click("h1 ~ form button:has-text('Call off the event')")
    page.wait_for_selector("text=Those invited get a cancellation by e-mail.")
    page.click("button:has-text('Reopen')")
    page.locator("button:has-text('Schedule')").nth(1).click()
    assert "Monday 2 June 2031, 10:00–10:30 (Europe/Berlin)" in page.inner_text("p.what")
    page.click("h1 ~ form button:has-text('Schedule')")
    page.wait_for_selector("text=get the decision and a calendar invitation by e-mail")
    update = wait_for_mail(folder, lambda m: m["To"] == "jana@example.com" and "10:00" in m["Subject"])
    cal, event = calendar_of(update)
    assert (str(cal["METHOD"]), str(event["UID"]), int(event["SEQUENCE"])) == ("REQUEST", uid, 3)
    assert event.decoded("DTSTART").isoformat() == "2031-06-02T08:00:00+00:00"


def test_details_the_deadlines_removal_the_csv_and_signing_out(served, new_page):
    base, key = served[:2]
    poll = create_poll(served, title="Edited call")
    answer(new_page(), base, poll, "=Grace", ["yes", "no"], "grace@example.com")

    page = new_page()
    sign_in(page, served, poll["id"])
    page.fill("#id_title", "Edited call, moved")
    page.fill("#id_location", "Room 4")
    page.check("label:has-text('Hide the totals until a participant has answered') input")
    page.click("button:has-text('Save changes')")
    page.wait_for_selector("text=Your changes are saved.")
    data = api(base, key, "GET", f"/v1/polls/{poll['id']}")[1]["data"]
    assert (data["title"], data["location"], data["hideScores"]) == ("Edited call, moved", "Room 4", True)

    page.fill("#closes_at", "2031-05-30T18:00")
    page.click("button:has-text('Set a deadline')")
    page.wait_for_selector("text=The deadline is set.")
    page.click("button:has-text('Remove the deadline')")
    page.wait_for_selector("text=The deadline is removed.")
    assert "Closes automatically" not in page.inner_text("main")

    with page.expect_download() as download:
        page.click("text=Download answers (CSV)")
    rows = open(download.value.path(), encoding="utf-8").read().splitlines()
    assert rows[0].startswith("Name,E-mail,Answered at (UTC),") and len(rows) == 2
    assert rows[1].startswith("'=Grace,grace@example.com,") and rows[1].endswith(",yes,no")  # no formula

    page.click("button:has-text('Sign out')")
    page.wait_for_selector("button:has-text('Send me a sign-in link')")
    page.goto(f"{base}/poll/{poll['id']}")
    assert "Signed in as" not in page.inner_text("body")


def test_the_notice_speaks_the_language_the_organizer_page_was_run_in(served, new_page):
    base, folder = served[0], served[3]
    poll = create_poll(served, title="Besprechung")
    page = new_page(script=False)
    sign_in(page, served, poll["id"])
    page.select_option("#language", "de")
    page.click("form.language button")
    page.wait_for_selector("html[lang=de]")
    page.click("form.notify button")  # off, then on again: the page is run in German
    page.wait_for_selector("text=Sie bekommen keine E-Mails zu Antworten und Kommentaren.")
    page.click("form.notify button")
    page.wait_for_selector("text=Sie bekommen E-Mails zu Antworten und Kommentaren.")

    answer(new_page(locale="fr-FR"), base, poll, "Ada", ["yes", "no"])  # the participant's language is theirs
    message = wait_for_mail(folder, lambda m: m["Subject"] == "„Besprechung“: 1 Antwort")
    assert "Ada hat geantwortet" in text_of(message)
    html = message.get_body(preferencelist=("html",)).get_content()
    assert '<html lang="de">' in html and "<strong>Ada</strong> hat geantwortet" in html
