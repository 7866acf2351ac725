"""The answers grid of the organizer's page: a row per participant (name, e-mail address,
time of the answer, the vote per option: the CSV's data), written in Python like the invite
page's rows (pages/grid.py); every outside value is escaped here."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from pages.grid import NO_ANSWER, Words

UNKNOWN_CELL = '<td class="o">{}</td>'  # a vote type older data may hold, named as stored


def answer_rows(poll_id: str, participants: list, option_ids: list[str]) -> list[SafeString]:
    """One `<tr>` per participant; the last cell leads to the removal's confirmation step."""
    action = escape(f"/poll/{poll_id}/confirm")
    remove = escape(_("Remove"))
    cell_html = Words.now().cell  # the answers as words (the stylesheet shows symbols)
    rows = []
    for answer in participants:
        key = escape(answer.id)
        cells = [cell_html.get(answer.votes[option_id]) or UNKNOWN_CELL.format(escape(answer.votes[option_id]))
                 if option_id in answer.votes else NO_ANSWER for option_id in option_ids]
        rows.append(mark_safe(  # every outside value is escaped
            f'<tr><th scope="row" id="p-{key}">{escape(answer.name)}</th><td class="mail">{escape(answer.email or "–")}</td>'
            f'<td class="at">{answer.created_at:%Y-%m-%d %H:%M}</td>{"".join(cells)}'
            f'<td><form method="get" action="{action}"><input type="hidden" name="action" value="remove-participant">'
            f'<input type="hidden" name="participant" value="{key}"><button class="small danger" '
            f'aria-describedby="p-{key}">{remove}</button></form></td></tr>'))
    return rows

