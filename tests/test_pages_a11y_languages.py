"""The states tests/test_pages_a11y.py does not walk, and the pages in German, French and
Spanish (longer words, other dates), in a real headless Chromium against bin/serve: axe-core
finds no violation in the light or the dark scheme, and no page is wider than a 360-pixel
phone. Screenshots go to pytest's basetemp (a11y-languages-shots*).

Needs /usr/bin/chromium (or CHROMIUM=/path), as tests/test_pages_browser.py does."""

import pytest

from tests.browser import serve
from tests.test_pages_a11y import Checker, answer, new_poll, page, sign_in_link

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("a11y-languages")
    with serve(folder, PAGES_LIMIT_PER_POLL_PER_MINUTE="1000", PAGES_LIMIT_PER_ADDRESS_PER_MINUTE="1000",
               PAGES_LIMIT_PER_ADDRESS_PER_DAY="10000", PAGES_LIMIT_PER_POLL_PER_DAY="10000",
               PAGES_SIGN_IN_LIMIT_PER_POLL_PER_MINUTE="2",
               PAGES_READ_LIMIT_PER_ADDRESS_PER_MINUTE="10000") as (base, key, env):
        yield base, key, env, folder


def speak(page, base: str, language: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": language, "url": base}])


def test_every_language_and_the_remaining_states(served, page, tmp_path_factory):
    base, _, _, folder = served
    check = Checker(page, tmp_path_factory.mktemp("a11y-languages-shots"))
    poll = new_poll(served)
    options = [option["id"] for option in poll["options"]]
    for n in range(16):  # a second page of the invite grid
        answer(page, base, poll, f"Teilnehmerin {n} mit einem langen Namen", {options[n % 4]: "yes"})
    invite, manage = f"{base}/invite/{poll['id']}", f"{base}/poll/{poll['id']}"

    # Sign in (in English), then every language sees the same states.
    page.goto(manage)
    page.fill("#id_email", "demo@example.com")
    page.click("button.primary")
    page.wait_for_selector("h1:has-text('Check your e-mail')")
    page.goto(sign_in_link(folder, poll["id"]))
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("text=Signed in as")
    page.goto(f"{invite}?page=2")
    page.fill("#id_name", "Grace")
    page.check(f"input[name='{options[0]}'][value='yes']")
    page.click("button.primary")
    page.wait_for_selector("#you")
    edit_link = page.input_value("#edit-link").replace("http://localhost", "http://127.0.0.1")

    for language in ("de", "fr", "es"):
        speak(page, base, language)
        page.goto(invite)
        assert page.get_attribute("html", "lang") == language
        check(f"{language}: invite, answered")
        page.goto(f"{invite}?page=2")
        check(f"{language}: invite, the grid's second page")
        page.click("form.remove button.danger")
        page.wait_for_selector("form button.danger")
        check(f"{language}: invite, removing asks first")
        page.goto(manage)
        check(f"{language}: organizer, open poll")
        yes = {"de": "Ja", "fr": "Oui", "es": "Sí"}[language]  # others' answers spoken as words, in the language
        assert page.locator("table.answers").get_by_role("cell", name=yes, exact=True).count() == 17
        page.goto(f"{manage}/confirm?action=delete")
        check(f"{language}: organizer, deleting asks first")
        page.goto(f"{base}/invite/nopenopenope")
        check(f"{language}: not found")

    speak(page, base, "en")
    page.goto(edit_link)
    check("invite, opened from the edit link")
    page.goto(f"{edit_link[:-4]}xxxx")
    check("invite, an edit link not valid")
    other, session = new_poll(served), page.context.cookies()
    page.context.clear_cookies()  # signed out: the sign-in form
    for _ in range(3):  # past the poll's sign-in requests a minute
        page.goto(f"{base}/poll/{other['id']}")
        page.fill("#id_email", "nobody@example.com")
        page.click("button.primary")
    page.wait_for_selector("h1:has-text('Too many requests')")
    check("organizer, too many requests")
    page.context.add_cookies(session)

    page.goto(manage)
    page.fill("#closes_at", "2031-05-30T18:00")
    page.click("text=Set a deadline")
    page.wait_for_selector("text=The deadline is set.")
    check("organizer, a deadline")
    page.goto(invite)
    check("invite, a deadline")
    page.goto(manage)
    page.evaluate("document.querySelector('form.change-options input[name=add_day]').type = 'text'")
    page.locator("form.change-options input[name=add_day]").first.fill("2031-02-30")
    page.locator("form.change-options input[name=add_time]").first.fill("09:00")
    page.click("form.change-options button[type=submit]")
    page.wait_for_selector(".notice.bad")
    check("organizer, an option refused")
    page.goto(manage)
    page.evaluate("document.querySelector('form.details').noValidate = true")
    page.fill("form.details input[name=title]", "")
    page.click("form.details button[type=submit]")
    page.wait_for_selector(".errorlist, .notice.bad")
    check("organizer, details refused")
    page.goto(manage)
    page.click("form:has(input[value=duplicate]) button[type=submit]")
    page.wait_for_selector("text=This is the new poll")
    check("organizer, a duplicate")
    page.click("text=Delete this poll")
    page.click("main form button.danger")
    page.wait_for_selector("h1")
    check("organizer, deleted")

    assert len(check.seen) == 27
    assert check.failures == [], "\n\n".join(check.failures)
