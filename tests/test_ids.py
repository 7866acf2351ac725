"""Random ids (core/ids.py): their format, and every character of the alphabet in every position."""

import re

from core import ids


def test_ids_have_their_format_and_use_the_whole_alphabet_in_every_position():
    for make, pattern, alphabet, length in (
        (ids.random_id, r"[a-z0-9]{24}", 36, 24),
        (ids.poll_id, r"[A-Za-z0-9]{12}", 62, 12),
    ):
        drawn = [make() for _ in range(3000)]
        assert all(re.fullmatch(pattern, value) for value in drawn)
        assert len(set(drawn)) == len(drawn)
        # A character missing from a position in 3,000 draws: (1 - 1/62) ** 3000 < 1e-20.
        assert all(len({value[position] for value in drawn}) == alphabet for position in range(length))
