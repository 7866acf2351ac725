"""Content moderation of poll texts.

`MODERATION_BACKEND` names a callable `(texts: dict[str, str]) -> list[str]` that returns
the names of the flagged fields. The default flags any text that contains a word or phrase
of `MODERATION_WORDS` (whole words, case-insensitive). Swap in a call to an external
moderation service by pointing the setting at another function.
"""

import re
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string


@cache
def _pattern(words: tuple[str, ...]) -> re.Pattern | None:
    words = [w.strip() for w in words if w.strip()]
    if not words:
        return None
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)


def word_list_moderator(texts: dict[str, str]) -> list[str]:
    pattern = _pattern(tuple(settings.MODERATION_WORDS))
    if pattern is None:
        return []
    return [field for field, text in texts.items() if text and pattern.search(text)]


def flagged_fields(texts: dict[str, str]) -> list[str]:
    return import_string(settings.MODERATION_BACKEND)(texts)
