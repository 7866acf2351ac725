"""The rows of the invite page's table, written in Python: the page's hot loop (100 options
x 15 participants with their radio groups) cost two thirds of the request as template tags.
Every value that is not one of this module's own constants is escaped here.

Answers are words in the page's language (`Words`); the stylesheet shows them as symbols
(✓ ~ ✗) in the grid, and screen readers read the words. On a narrow screen the stylesheet
hides the participants' columns and shows the row under each option instead: who said yes,
who said if need be."""

from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, pgettext

from polls.models import Vote

CSS = {Vote.YES: "y", Vote.IF_NEED_BE: "m", Vote.NO: "n"}


@dataclass(frozen=True)
class Words:
    """What the rows say, in the active language (built once a page)."""

    answer: dict  # vote type -> word
    cell: dict  # vote type -> <td> of another participant's answer
    other: str  # <td> of an answer to a withdrawn or unknown option
    top: str
    yes: str
    maybe: str
    said: dict  # vote type -> "Yes:" of the phone list

    @classmethod
    def now(cls) -> "Words":
        answer = {Vote.YES: pgettext("answer", "Yes"), Vote.IF_NEED_BE: pgettext("answer", "If need be"),
                  Vote.NO: pgettext("answer", "No")}
        return cls(answer=answer,
                   cell={kind: f'<td class="{CSS[kind]}">{escape(word)}</td>' for kind, word in answer.items()},
                   other=f'<td class="o">{escape(gettext("Unknown"))}</td>',
                   top=escape(gettext("Top choice")), yes=escape(gettext("yes")), maybe=escape(gettext("if need be")),
                   said={Vote.YES: escape(gettext("Yes:")), Vote.IF_NEED_BE: escape(gettext("If need be:"))})


NO_ANSWER = "<td></td>"


def option_row(option_id: str, label: dict, *, words: Words, score: dict | None, choice: str, others: list | None,
               pick: bool, mine: bool, tentative: bool, columns: int = 0) -> SafeString:
    """One `<tr>`: the option (and its top-choice mark), its totals (`score`, None: hidden),
    the viewer's radio group (`pick`) or their answer read-only (`mine`), and the answers of
    `others` (None: hidden); then, for narrow screens, a row of `columns` cells listing who
    said yes and who said if need be."""
    key = escape(option_id)
    top = bool(score and score["top"])
    parts = ['<tr class="top">' if top else "<tr>",
             f'<th scope="row" id="o-{key}"><span class="wd">{escape(label["weekday"])}</span> {escape(label["day"])}']
    if label["time"]:
        parts.append(f'<span class="time">{escape(label["time"])}</span>')
    if top:
        parts.append(f'<span class="badge">{words.top}</span>')
    parts.append("</th>")
    if score is not None:  # the stylesheet writes ✓ and ~ before the counts; the words are for screen readers
        maybe = f' <i>{score["maybe"]}<span> {words.maybe}</span></i>' if tentative or score["maybe"] else ""
        parts.append(f'<td class="tally"><b>{score["yes"]}<span> {words.yes}</span></b>{maybe}</td>')
    if pick:
        parts.append(f'<td class="pick" role="radiogroup" aria-labelledby="o-{key}">')
        for kind in (Vote.YES, Vote.IF_NEED_BE, Vote.NO):
            if kind == Vote.IF_NEED_BE and not tentative and choice != kind:
                continue
            checked = " checked" if choice == kind else ""
            parts.append(f'<label class="c {CSS[kind]}"><input type="radio" name="{key}" value="{kind}"{checked}>'
                         f'{escape(words.answer[kind])}</label>')
        parts.append("</td>")
    elif mine:
        parts.append(f"<td>{escape(words.answer.get(choice, '–'))}</td>")
    if others is not None:
        said = {Vote.YES: [], Vote.IF_NEED_BE: []}
        for other in others:
            kind = other.votes.get(option_id)
            if kind is None:
                parts.append(NO_ANSWER)
                continue
            parts.append(words.cell.get(kind, words.other))
            if kind in said:
                said[kind].append(escape(other.name))
        parts.append("</tr>")
        lists = [f"<b>{words.said[kind]}</b> {', '.join(names)}" for kind, names in said.items() if names]
        if lists:
            parts.append(f'<tr class="said"><td colspan="{columns}">{"<br>".join(lists)}</td></tr>')
    else:
        parts.append("</tr>")
    return mark_safe("".join(parts))  # every outside value above is escaped
