"""The services' and parsers' refusals (English: the API's words) as the pages say them, in
the page's language: those a participant or an organizer meets in normal use (a date or time
not understood, a past deadline, too few or too many options, a new option's duration, a
poll someone else changed meanwhile). A message not listed here shows as the service words
it."""

import re

from django.utils.translation import gettext_lazy as _

from core.formats import MAX_DATE, MIN_DATE

KNOWN = [  # (the service's words, a pattern; what the page says, with the pattern's groups)
    (r"must be a date YYYY-MM-DD", _("not a date (YYYY-MM-DD)")),
    (r"must be a time HH:MM \(00:00-23:59\)", _("not a time (HH:MM, 00:00 to 23:59)")),
    (re.escape(f"must be between {MIN_DATE.isoformat()} and {MAX_DATE.isoformat()}"),
     _("the date must be between %(first)s and %(last)s")),
    (r"closes_at: the deadline must be in the future", _("The deadline must be in the future.")),
    (r"options: a poll needs at least one option", _("A poll needs at least one option.")),
    (r"options: a poll may have at most (?P<limit>\d+) options; (?P<count>\d+) given",
     _("A poll may have at most %(limit)s options; these changes would make %(count)s.")),
    (r"options\[\d+\]\.duration: (?P<low>\d+)-(?P<high>\d+) minutes",
     _("A new option lasts %(low)s to %(high)s minutes.")),
    (r"options: the option the poll is scheduled at cannot be removed; reopen the poll first",
     _("The option the poll is scheduled at cannot be removed; reopen the poll first.")),
    (r"poll \w+ is already scheduled at another option; reopen it to pick a different one",
     _("The poll is already scheduled at another option; reopen it to pick a different one.")),
    (r"cannot \w+ poll \w+: it is \w+ \(allowed only when [\w ]+\)|poll \w+ is \w+: only an open poll accepts .*",
     _("The poll was changed meanwhile (its status is no longer what the page showed); reload the page.")),
]
_KNOWN = [(re.compile(pattern), words) for pattern, words in KNOWN]


def in_words(message: str) -> str:
    """`message` (problems joined by "; ") with each problem KNOWN in the page's language."""
    said = []
    for part in _split(message):
        for pattern, words in _KNOWN:
            found = pattern.fullmatch(part)
            if found:
                said.append(str(words) % {"first": MIN_DATE.isoformat(), "last": MAX_DATE.isoformat(),
                                          **found.groupdict()})
                break
        else:
            said.append(part)
    return "; ".join(said)


def _split(message: str) -> list[str]:
    """The problems of a message: joined by "; ", though a known problem may hold one."""
    parts, joined = message.split("; "), []
    while parts:
        part = parts.pop(0)
        if parts and any(pattern.fullmatch(f"{part}; {parts[0]}") for pattern, _words in _KNOWN):
            part = f"{part}; {parts.pop(0)}"
        joined.append(part)
    return joined
