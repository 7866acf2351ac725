"""The pages' forms: a participant's answer and a comment. Votes are read beside the form
(`read_votes`): one radio group per option, named by the option's id."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.formats import EMAIL_MAX_LENGTH, text_problem
from polls.models import Vote
from polls.rules import COMMENT_MAX_LENGTH
from polls.services import VOTE_TYPES
from polls.services.comments import COMMENT_NAME_MAX_LENGTH
from polls.services.responses import NAME_MAX_LENGTH

HONEYPOT = "website"  # a field people never see (CSS) and bots fill in


def plain_text(*, multiline: bool = False):
    """A form field's validator: the API's rule on control characters (core.formats)."""

    def check(value: str) -> None:
        if text_problem(value, multiline=multiline):  # the API's rule, in the page's language
            raise ValidationError(_("must not contain control characters or line breaks") if not multiline
                                  else _("must not contain control characters other than line breaks and tabs"))

    return check


ONE_LINE, LINES = [plain_text()], [plain_text(multiline=True)]


class AnswerForm(forms.Form):
    name = forms.CharField(label=_("Your name"), max_length=NAME_MAX_LENGTH, strip=True, validators=ONE_LINE)
    email = forms.EmailField(label=_("E-mail"), max_length=EMAIL_MAX_LENGTH, required=False)

    def __init__(self, *args, require_email: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["email"].required = require_email


class LinkForm(forms.Form):
    """"Send me my link": the address given with the answer."""

    email = forms.EmailField(label=_("E-mail"), max_length=EMAIL_MAX_LENGTH)


class CommentForm(forms.Form):
    name = forms.CharField(label=_("Your name"), max_length=COMMENT_NAME_MAX_LENGTH, strip=True, validators=ONE_LINE)
    text = forms.CharField(label=_("Comment"), max_length=COMMENT_MAX_LENGTH, strip=True, validators=LINES)


def read_votes(data, options, allow_tentative: bool, current: dict | None = None) -> tuple[dict, list[str]]:
    """({option id: vote or None}, problems) from the radio groups; a group left blank is
    no answer. Only the votes the poll offers are accepted (or the one already `current`)."""
    current = current or {}
    offered = set(VOTE_TYPES) if allow_tentative else set(VOTE_TYPES) - {Vote.IF_NEED_BE}
    votes, problems = {}, []
    for option in options:
        value = data.get(option.id, "")
        if value and value not in offered and value != current.get(option.id):
            problems.append(gettext("“%(value)s” is not an answer this poll offers") % {"value": value})
        votes[option.id] = value or None
    return votes, problems
