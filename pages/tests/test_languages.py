"""The pages in English, German, French and Spanish: complete catalogues, compiled .mo files
that say what the .po files say, the language from Accept-Language or the menu's cookie, and
no English left on any page state or e-mail in another language. The API stays English."""

import gettext
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.test import Client

from pages.tests.conftest import answer, ask_link, csrf, poll_row, sign_in
from polls import services as poll_services

pytestmark = pytest.mark.django_db

LOCALE = Path(__file__).resolve().parents[1] / "locale"
LANGUAGES = ("de", "fr", "es")
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")


def catalogue(language: str) -> polib.POFile:
    return polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_string_is_translated_with_the_same_placeholders(language):
    po = catalogue(language)
    assert len(po) > 150 and po.percent_translated() == 100 and not po.fuzzy_entries() and not po.obsolete_entries()
    for entry in po:
        forms = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        wanted = set(PLACEHOLDER.findall(entry.msgid + (entry.msgid_plural or "")))
        assert set(PLACEHOLDER.findall("".join(forms))) == wanted, entry.msgid  # a singular may leave the count out
        for translated in forms:
            assert set(PLACEHOLDER.findall(translated)) <= wanted, entry.msgid
            assert translated.count("<strong>") == entry.msgid.count("<strong>"), entry.msgid


# The entries a language writes as English does: words both share, and date formats.
SPELLED_ALIKE = {"de": {"Name"}, "fr": {"Description", "Date", "Minutes", "E-mail", "%(count)d minute", "l j F Y",
                                        "l j F Y, H:i", "j M Y, H:i"},
                 "es": {"No", "(+%(days)d d)", "j M Y, H:i"}}


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_entry_left_as_in_english_but_those_spelled_alike(language):
    alike = {entry.msgid for entry in catalogue(language)
             if entry.msgid in ({entry.msgstr} | set(entry.msgstr_plural.values()))}
    assert alike == SPELLED_ALIKE[language]


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_compiled_catalogues_match_the_po_files(language):
    """The .mo files are committed (no GNU gettext needed to run the service); after editing a
    .po file, compile it again (docs/app.md#languages)."""
    with open(LOCALE / language / "LC_MESSAGES" / "django.mo", "rb") as compiled:
        mo = gettext.GNUTranslations(compiled)
    wanted = {}
    for entry in catalogue(language):
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        if entry.msgid_plural:
            wanted.update({(key, form): text for form, text in entry.msgstr_plural.items()})
        else:
            wanted[key] = entry.msgstr
    compiled = {key: text for key, text in mo._catalog.items() if key != ""}  # "": the header
    assert compiled == wanted  # every entry as the .po says it, and none the .po no longer has
    assert mo.info()["plural-forms"] == catalogue(language).metadata["Plural-Forms"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_gnu_gettext_reads_the_catalogues(language):
    """makemessages (GNU gettext) must be able to merge into them: no "#|" lines (the previous
    msgid of a fuzzy entry; none is fuzzy), and `msgfmt --check` passes where it is installed."""
    path = LOCALE / language / "LC_MESSAGES" / "django.po"
    assert not [line for line in path.read_text().splitlines() if line.startswith("#|")]
    if shutil.which("msgfmt"):
        checked = subprocess.run(["msgfmt", "--check", "-o", "/dev/null", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr


# --- Which language --------------------------------------------------------------------------


def test_the_language_from_accept_language_or_the_menus_cookie(make_poll):
    poll = make_poll()
    url = f"/invite/{poll['id']}"
    page = Client(HTTP_ACCEPT_LANGUAGE="fr-CH, fr;q=0.9, en;q=0.5").get(url)
    assert page["Content-Language"] == "fr" and '<html lang="fr">' in page.content.decode()
    assert "Vos disponibilités" in page.content.decode() and "Accept-Language" in page["Vary"]
    assert Client(HTTP_ACCEPT_LANGUAGE="pt-BR").get(url)["Content-Language"] == "en"  # not offered: English
    browser = Client(HTTP_ACCEPT_LANGUAGE="de")
    chosen = browser.get("/language", {"language": "es", "next": url})
    assert chosen.status_code == 302 and chosen["Location"] == url
    assert chosen.cookies["django_language"].value == "es" and chosen.cookies["django_language"]["samesite"] == "Lax"
    assert "Tu disponibilidad" in browser.get(url).content.decode()  # the cookie wins over the header
    away = browser.get("/language", {"language": "de", "next": "https://elsewhere.example/"})
    assert away["Location"] == "/"  # never off this site
    assert browser.get("/language", {"language": "xx", "next": url}).cookies.get("django_language") is None


def test_the_api_stays_english(api):
    response = api.get("/v1/polls/nopenopenope", headers={"Accept-Language": "de", "Cookie": "django_language=de"})
    assert response.status_code == 404 and "Content-Language" not in response
    assert response.body["error"]["message"] == "Poll not found."
    refused = api.post("/v1/polls", {"title": ""}, headers={"Accept-Language": "fr"})
    assert refused.status_code == 400 and "title" in refused.body["error"]["message"]
    assert "Ce champ" not in refused.body["error"]["message"]


def test_e_mails_in_the_pages_language(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Team lunch")
    german = Client(HTTP_ACCEPT_LANGUAGE="de")
    answer(german, poll, {}, email="ada@example.com")
    ask_link(german, poll, organizer_email)
    edit, sign_in_mail = mailoutbox
    assert edit.subject == "Ihr privater Link zu „Team lunch“" and "Hallo," in edit.body
    assert sign_in_mail.subject == "Anmelden, um „Team lunch“ zu verwalten" and "Minuten" in sign_in_mail.body
    for message in (edit, sign_in_mail):
        assert not english_left(message.subject + "\n" + message.body, "de")


# --- No English left ---------------------------------------------------------------------------


class Texts(HTMLParser):
    """What a page says: its text and the words in attributes people see or hear."""

    SPOKEN = ("placeholder", "aria-label", "title", "alt", "data-copy", "data-copied", "data-own")

    def __init__(self):
        super().__init__()
        self.found, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("datalist", "script", "style"):
            self.skip += 1
        self.found += [value for name, value in attrs if name in self.SPOKEN and value]

    def handle_endtag(self, tag):
        if tag in ("datalist", "script", "style"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.found.append(data)


def segments(html: str) -> set[str]:
    """The page's texts, and their clauses (a message may quote another's English after a colon)."""
    parser = Texts()
    parser.feed(html)
    texts = {" ".join(text.split()) for text in parser.found}
    return texts | {clause.strip() for text in texts for clause in re.split(r"[:;] ", text) if " " in clause.strip()}


# What the fixtures put on the pages (the same in every language), and what is not words.
DATA = {"Team lunch", "Bring snacks", "Room 4", "Ada", "Grace", "Linus", "Owner 1", "owner1@example.com",
        "See you there", "grace@example.com", "not an address", "Mars/Olympus", "Europe/Berlin", "UTC",
        "English", "Deutsch", "Français", "Español"}
NOT_WORDS = re.compile(r"^[\W\d_]*$|^https?://|/invite/|@example\.com|^\(?[A-Z][a-z]+/[A-Za-z_]+\)?\.?$|^\(UTC\)\.?$|^\d\d:\d\d–\d\d:\d\d")


def sentence(line: str) -> str:
    """A pattern of a catalogue line as a page or e-mail shows it: its placeholders filled."""
    pattern = PLACEHOLDER.sub("\x00", line.strip())
    return rf"(?<![\w-]){re.escape(pattern)}(?![\w-])".replace("\x00", r"[^<>\n]{1,200}?")


def english_left(text: str, language: str, english: set[str] | None = None) -> set[str]:
    """The English strings of the catalogue that `text` still holds (beyond those the
    language spells the same); with `english`, also the page's segments left as in English."""
    english_forms, same = set(), set()
    for entry in catalogue(language):
        forms = {entry.msgid, entry.msgid_plural} - {""}
        same |= forms & ({entry.msgstr} | set(entry.msgstr_plural.values()))
        english_forms |= forms if not entry.msgctxt else set()
    # Sentences anywhere (a single word may be the same word in both: segments catch those).
    msgids = {form for form in english_forms if " " in form.strip()} - same
    bare = re.sub(r"<(/?\w+)[^>]*>", r"<\1>", text)  # no attributes (their words: the segments below)
    left = {line for msgid in msgids for line in msgid.split("\n") if " " in line.strip()
            and re.search(sentence(line), bare)}
    if english is not None:
        left |= {part for part in segments(text) & english
                 if part not in DATA and part not in same and not NOT_WORDS.match(part)}
    return left


def states(make_poll, organizer_email, mailoutbox):
    """(name, request) for every state of the invite and organizer pages; each request may run
    again, in another language, and answers the same state."""
    poll = make_poll(title="Team lunch", description="Bring snacks", location="Room 4", kind="time",
                     timeZone="Europe/Berlin", duration=30, disableComments=False, allowTentativeVotes=True,
                     options=[{"startTime": "2030-06-03T09:00:00"}, {"startTime": "2030-06-03T23:30:00"}])
    first, second = (option["id"] for option in poll["options"])
    row = poll_row(poll)
    poll_services.create_response(poll=row, name="Grace", email="grace@example.com", votes={first: "yes", second: "ifNeedBe"})
    poll_services.add_comment(poll=row, name="Linus", text="See you there")
    url = f"/invite/{poll['id']}"
    mine = Client()
    answer(mine, poll, {first: "no"}, name="Ada")
    organizer = Client()
    sign_in(organizer, poll, organizer_email, mailoutbox)
    link = "/" + re.search(r"/(poll/\S+/sign-in/\S+)", ask_link(Client(), poll, organizer_email) and mailoutbox[-1].body).group(1)
    hidden = make_poll(title="Team lunch", hideScores=True, hideParticipants=True)
    closed, scheduled, canceled = (make_poll(title="Team lunch") for _ in range(3))
    poll_services.close_poll(poll=poll_row(closed))
    poll_services.schedule_poll(poll=poll_row(scheduled), option_id=scheduled["options"][0]["id"])
    poll_services.schedule_poll(poll=poll_row(canceled), option_id=canceled["options"][0]["id"])
    poll_services.cancel_poll(poll=poll_row(canceled))
    deleted = make_poll(title="Team lunch")

    def post(client, path, **data):
        return client.post(path, {"csrfmiddlewaretoken": csrf(client, url), **data})

    return [
        ("a newcomer", lambda c: c.get(url)),
        ("answered", lambda c: as_in(mine, c, url)),
        ("the done notices", lambda c: [c.get(f"{url}?done={done}") for done in
                                        ("saved", "updated", "removed", "commented", "link-sent")]),
        ("an answer refused", lambda c: post(c, url, name="", email="not an address", **{first: "maybe"})),
        ("a comment refused", lambda c: post(c, f"{url}/comments", name="Ada", text="")),
        ("a link refused", lambda c: post(c, f"{url}/send-link", email="not an address")),
        ("not a time zone", lambda c: c.get(f"{url}?tz=Mars/Olympus")),
        ("hidden totals and names", lambda c: c.get(f"/invite/{hidden['id']}")),
        ("closed", lambda c: c.get(f"/invite/{closed['id']}")),
        ("scheduled", lambda c: c.get(f"/invite/{scheduled['id']}")),
        ("canceled", lambda c: c.get(f"/invite/{canceled['id']}")),
        ("not found", lambda c: c.get("/invite/nopenopenope")),
        ("not your answer", lambda c: post(c, url, action="delete")),
        ("form expired", lambda c: expired(c, url)),
        ("removing asks first", lambda c: mine_post(mine, c, url)),
        ("sign in", lambda c: c.get(f"/poll/{poll['id']}")),
        ("sign-in link sent", lambda c: post(c, f"/poll/{poll['id']}/sign-in", email="nobody@example.com")),
        ("the sign-in button", lambda c: c.get(link)),
        ("a dead sign-in link", lambda c: c.get(f"/poll/{poll['id']}/sign-in/{'x' * 32}")),
        ("sign in first", lambda c: post(c, f"/poll/{poll['id']}/act", action="close")),
        ("the organizer's page", lambda c: as_in(organizer, c, f"/poll/{poll['id']}")),
        ("its notices", lambda c: [as_in(organizer, c, f"/poll/{poll['id']}?done={done}") for done in
                                   ("closed", "reopened", "scheduled", "canceled", "edited", "participant-removed",
                                    "comment-removed", "options", "deadline", "deadline-cleared")]),
        ("a scheduled poll", lambda c: as_in(organizer, c, f"/poll/{scheduled['id']}")),
        ("a confirmation step", lambda c: [as_in(organizer, c, f"/poll/{poll['id']}/confirm?{query}") for query in
                                           ("action=delete", f"action=schedule&option={first}")]),
        ("a deleted poll", lambda c: c.get(f"/invite/{deleted['id']}")),
    ]


def expired(c: Client, url: str):
    """A form posted without its CSRF token, in `c`'s language."""
    browser = Client(enforce_csrf_checks=True)
    browser.cookies["django_language"] = c.cookies["django_language"].value
    return browser.post(url, {"name": "Ada"})


def mine_post(mine: Client, c: Client, url: str):
    """The removal's confirmation page, as the participant's browser sees it in `c`'s language."""
    mine.cookies["django_language"] = c.cookies["django_language"].value
    return mine.post(url, {"csrfmiddlewaretoken": csrf(mine, url), "action": "delete"})


def as_in(browser: Client, c: Client, path: str):
    """GET `path` in `browser` (its cookies: an answer, a session) in `c`'s language."""
    browser.cookies["django_language"] = c.cookies["django_language"].value
    return browser.get(path)


def in_every_language(every) -> dict[tuple[str, str], str]:
    """{(language, name): the page(s)} of each (name, request) of `every`, made in English and
    in each other language (a client whose language cookie says it)."""
    pages = {}
    for language in ("en", *LANGUAGES):
        client = Client()
        client.cookies["django_language"] = language
        for name, request in every:
            responses = request(client)
            pages[language, name] = "".join(r.content.decode() for r in (responses if isinstance(responses, list)
                                                                           else [responses]))
    return pages


def assert_no_english_left(pages: dict[tuple[str, str], str], data: set[str] = frozenset()) -> None:
    """Each page of `in_every_language` in its language, with nothing left as in English
    (but for what the fixtures put there: DATA, `data`)."""
    for language, name in pages:
        if language == "en":
            continue
        assert f'<html lang="{language}">' in pages[language, name], (language, name)
        left = english_left(pages[language, name], language, segments(pages["en", name]) - data)
        assert not left, (language, name, left)


def test_no_english_left_on_any_page_state(make_poll, organizer_email, mailoutbox, settings):
    every = states(make_poll, organizer_email, mailoutbox)
    pages = in_every_language(every)
    for name, _ in every:
        assert "Team lunch" in pages["en", name] or name in ("not found", "form expired"), name
    assert_no_english_left(pages)


def test_dates_read_in_the_pages_language(make_poll):
    poll = make_poll(options=[{"date": "2030-06-03"}])
    spoken = {"en": "Mon 3 Jun 2030", "de": "Mo 3. Jun 2030", "fr": "lun 3 juin 2030", "es": "lun 3 junio 2030"}
    for language, day in spoken.items():
        client = Client()
        client.cookies["django_language"] = language
        body = client.get(f"/invite/{poll['id']}").content.decode()
        assert day in re.sub(r"<[^>]+>", "", body), (language, day)
