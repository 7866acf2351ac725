"""The pages' languages in a real headless Chromium against the service started the README's
way (`bin/serve`): the browser's language picks the page's, the footer's menu changes it
(with or without JavaScript, from the keyboard) and the choice holds on every page after;
dates are written in the language, and the e-mailed edit link speaks it.

Needs /usr/bin/chromium (or CHROMIUM=/path): without it these tests are deselected with a
note, or fail under CI (conftest.py)."""

import re

import pytest

from tests.browser import api, serve, text_of, wait_for_mail

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("languages")
    with serve(folder) as (base, key, _):
        yield base, key, folder


@pytest.fixture
def new_page(open_page):
    """`new_page(locale, javascript=True)`: a page of its own (tests/conftest.py), whose
    Accept-Language the locale sets."""
    def make(locale: str, javascript: bool = True):
        return open_page(java_script_enabled=javascript, locale=locale)

    return make


def create_poll(served, title: str) -> dict:
    base, key, _ = served
    status, created = api(base, key, "POST", "/v1/polls", {
        "title": title, "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
        "options": [{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-03T10:00:00"}]})
    assert status == 201, created
    return created["data"]


def spoken(page) -> tuple[str, str, str]:
    """(the page's language, its answer section's heading, its first option's day)."""
    return (page.get_attribute("html", "lang"), page.inner_text("#options-h"),
            re.match(r"\w+\.? \d+\.? \w+ \d{4}", " ".join(page.inner_text("tbody th").split())).group(0))


def test_the_browsers_language_then_the_menus_kept_on_every_page(served, new_page):
    base, _, folder = served
    poll, other = create_poll(served, "Sprint review"), create_poll(served, "Retro")
    page = new_page("fr-FR")
    page.goto(f"{base}/invite/{poll['id']}")
    assert spoken(page) == ("fr", "Vos disponibilités", "lun 2 juin 2031")

    page.select_option("#language", "de")  # then the menu's button, from the keyboard
    page.focus("form.language button")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{base}/invite/{poll['id']}"  # back on the same page
    assert spoken(page) == ("de", "Ihre Verfügbarkeit", "Mo 2. Jun 2031")
    page.fill("#id_name", "Jana")
    page.fill("#id_email", "jana@example.com")
    page.check("tbody tr:first-child input[value=yes]")
    page.click("button.primary")
    page.wait_for_selector("text=Danke, Ihre Antwort ist gespeichert.")
    mail = wait_for_mail(folder / "serve.log", lambda message: message["To"] == "jana@example.com")
    assert mail["Subject"] == "Ihr privater Link zu „Sprint review“" and text_of(mail).startswith("Hallo,")

    page.goto(f"{base}/invite/{other['id']}")  # the choice, not the browser's French, on every page after
    assert spoken(page)[:2] == ("de", "Ihre Verfügbarkeit")
    page.goto(f"{base}/poll/{other['id']}")
    assert page.get_attribute("html", "lang") == "de" and page.inner_text("h1")


def test_the_menu_without_javascript(served, new_page):
    base = served[0]
    poll = create_poll(served, "Planning")
    page = new_page("es-ES", javascript=False)
    page.goto(f"{base}/invite/{poll['id']}")
    assert spoken(page) == ("es", "Tu disponibilidad", "lun 2 junio 2031")
    page.select_option("#language", "en")
    page.click("text=Cambiar")
    page.wait_for_selector("html[lang=en]")
    assert spoken(page) == ("en", "Your availability", "Mon 2 Jun 2031")


def test_moving_through_the_menu_with_the_keyboard_leaves_the_page_alone(served, new_page):
    """Arrow keys on the closed menu change its choice at once in Chromium: the page stays
    (WCAG 3.2.2, no change of context on input) until the button is pressed."""
    base = served[0]
    poll = create_poll(served, "Offsite")
    page = new_page("en-GB")
    page.goto(f"{base}/invite/{poll['id']}")
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url) if frame == page.main_frame else None)
    page.focus("#language")
    page.keyboard.press("ArrowDown")
    assert page.input_value("#language") == "de"  # the next language is chosen...
    page.keyboard.press("Tab")  # ...and the button, next in the tab order, sends it
    assert page.evaluate("document.activeElement.closest('form.language') !== null")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert navigations == [page.url] and re.search(r"/invite/", page.url)
    assert spoken(page)[:2] == ("de", "Ihre Verfügbarkeit")
