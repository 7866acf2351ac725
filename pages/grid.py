"""The rows of the invite page's table, written in Python: the page's hot loop (100 options
x 15 participants with their radio groups) cost two thirds of the request as template tags.
Every value that is not one of this module's own constants is escaped here."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from polls.models import Vote

# vote type -> (CSS class, symbol) of a cell (the legend under the table says them in words)
CELLS = {Vote.YES: ("y", "✓"), Vote.IF_NEED_BE: ("m", "~"), Vote.NO: ("n", "✗")}
OTHER_CELL, NO_ANSWER = '<td class="o">?</td>', "<td></td>"
CHOICES = ((Vote.YES, "y", "Yes"), (Vote.IF_NEED_BE, "m", "If need be"), (Vote.NO, "n", "No"))
CELL_HTML = {kind: f'<td class="{css}">{mark}</td>' for kind, (css, mark) in CELLS.items()}


def option_row(option_id: str, label: dict, *, score: dict | None, choice: str, others: list | None,
               pick: bool, mine: bool, tentative: bool) -> SafeString:
    """One `<tr>`: the option (and its top-choice mark), its totals (`score`, None: hidden),
    the viewer's radio group (`pick`) or their answer read-only (`mine`), and the answers of
    `others` (None: hidden)."""
    key = escape(option_id)
    top = bool(score and score["top"])
    parts = ['<tr class="top">' if top else "<tr>",
             f'<th scope="row" id="o-{key}"><span class="wd">{escape(label["weekday"])}</span> {escape(label["day"])}']
    if label["time"]:
        parts.append(f'<span class="time">{escape(label["time"])}</span>')
    if top:
        parts.append('<span class="badge">Top choice</span>')
    parts.append("</th>")
    if score is not None:
        maybe = f' <i>~ {score["maybe"]}</i>' if tentative or score["maybe"] else ""
        parts.append(f'<td class="tally"><b>✓ {score["yes"]}</b>{maybe}</td>')
    if pick:
        parts.append(f'<td class="pick" role="radiogroup" aria-labelledby="o-{key}">')
        for kind, css, words in CHOICES:
            if kind == Vote.IF_NEED_BE and not tentative and choice != kind:
                continue
            checked = " checked" if choice == kind else ""
            parts.append(f'<label class="c {css}"><input type="radio" name="{key}" value="{kind}"{checked}>{words}</label>')
        parts.append("</td>")
    elif mine:
        parts.append(f"<td>{escape(choice or '–')}</td>")
    if others is not None:
        parts += [CELL_HTML.get(other.votes[option_id], OTHER_CELL) if option_id in other.votes else NO_ANSWER
                  for other in others]
    parts.append("</tr>")
    return mark_safe("".join(parts))  # every outside value above is escaped
