"""How `Participant.answers` writes a participant's `yes` and `ifNeedBe` votes, for the
participant list (polls/encoding.py): a token per vote, separated by commas, in the display
order of the options when written. A token is the option's id, followed by the vote type's
mark. Tokens name options by id, so that editing, adding, removing or reordering options
rewrites no participant; a token whose option was removed is left out when read."""

from polls.models import Vote

#: The vote types kept in `answers`, and the mark after the option id of each.
ANSWER_MARKS = {Vote.YES: "", Vote.IF_NEED_BE: "+"}


def answer_token(option_id: str, kind: str) -> str:
    return option_id + ANSWER_MARKS[kind]


def answers_text(votes, places: dict[str, int]) -> str:
    """`Participant.answers` for these `(option id, type)` votes (types without a mark left
    out), `places` giving each option's place in the poll's display order."""
    return ",".join(answer_token(option_id, kind) for option_id, kind in
                    sorted(((option_id, kind) for option_id, kind in votes if kind in ANSWER_MARKS),
                           key=lambda vote: places[vote[0]]))
