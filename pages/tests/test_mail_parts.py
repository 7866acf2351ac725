"""Every e-mail the pages send has a plain-text and an HTML part, read here as a mail client
reads them (the `email` package): the sign-in link, the participant's edit link, the
organizer's notification and the decision (its tests: test_notices.py, test_decisions.py)."""

import email
import re
from email import policy

import pytest
from django.test import Client

from pages.tests.conftest import answer, ask_link

pytestmark = pytest.mark.django_db


def parts(message) -> tuple[str, str]:
    mail = email.message_from_bytes(message.message().as_bytes(), policy=policy.default)
    assert mail.get_content_type() == "multipart/alternative"
    return mail.get_body(("plain",)).get_content(), mail.get_body(("html",)).get_content()


def test_the_sign_in_link(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Lunch & <friends>")
    ask_link(Client(), poll, organizer_email)
    text, html = parts(mailoutbox[-1])
    link = re.search(r"http://\S+/sign-in/\S+", text).group(0)
    assert f'<a href="{link}">{link}</a>' in html
    assert "“Lunch &amp; &lt;friends&gt;”" in html and "“Lunch & <friends>”" in text


def test_the_edit_link(make_poll, mailoutbox):
    poll = make_poll()
    answer(Client(), poll, {}, name="Ada", email="ada@example.com")
    [message] = [m for m in mailoutbox if m.to == ["ada@example.com"]]
    text, html = parts(message)
    link = re.search(r"http://\S+/edit/\S+", text).group(0)
    assert f'<a href="{link}">{link}</a>' in html
