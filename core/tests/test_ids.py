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


def test_grouped_ids_share_a_random_head_and_have_random_tails_in_the_same_format():
    groups = [ids.grouped_ids(10) for _ in range(1000)]
    drawn = [value for group in groups for value in group]
    assert all(re.fullmatch(r"[a-z0-9]{24}", value) for value in drawn)
    assert len(set(drawn)) == len(drawn)
    assert all(len({value[:8] for value in group}) == 1 for group in groups)
    assert len({group[0][:8] for group in groups}) == len(groups)
    # Every character in every position of the heads (1,000 draws: a character missing from
    # one, (35/36) ** 1000 < 1e-12) and of the tails (10,000 draws).
    assert all(len({group[0][position] for group in groups}) == 36 for position in range(8))
    assert all(len({value[position] for value in drawn}) == 36 for position in range(8, 24))
    assert ids.grouped_ids(0) == [] and len(ids.grouped_ids(1)) == 1
