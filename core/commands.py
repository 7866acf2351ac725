"""The shape every operator command shares: `manage.py <group> <action> [args] [--json]`.

A subclass lists its actions; for each action `foo-bar` it may define
`arguments_foo_bar(parser)` and must define `do_foo_bar(**options) -> (data, text)`: the
JSON-ready data printed with `--json`, and the line(s) printed for a person otherwise.
Refusals (`ServiceError`, or `CommandError` raised directly) exit non-zero with the message.
"""

import json
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError

from core.errors import ServiceError
from core.formats import instant


class GroupCommand(BaseCommand):
    # An operator command touches its own tables only: the system checks (which import
    # every URL, view and admin module) are `manage.py check`'s job, not each command's.
    requires_system_checks = []

    #: action name -> one-line help
    actions: dict[str, str] = {}

    def add_arguments(self, parser):
        subparsers = parser.add_subparsers(dest="action", required=True, metavar="ACTION", title="actions")
        for name, text in self.actions.items():
            action_parser = subparsers.add_parser(name, help=text, description=text)
            action_parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
            add = getattr(self, f"arguments_{_method(name)}", None)
            if add is not None:
                add(action_parser)

    def handle(self, *args, action, json: bool, **options):
        try:
            data, text = getattr(self, f"do_{_method(action)}")(**options)
        except ServiceError as exc:
            raise CommandError(str(exc))
        self.stdout.write(_dumps(data) if json else text)


def _method(action: str) -> str:
    return action.replace("-", "_")


def _dumps(data) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def optional_instant(value: datetime | None) -> str | None:
    return instant(value) if value is not None else None


def text_cell(value) -> str:
    """A value in a plain-text table: yes/no for booleans, `-` for none."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def table(rows: list[dict], columns: list[tuple[str, str]], cell=text_cell) -> str:
    """Aligned plain-text columns: `columns` is [(title, key of the row)]; `cell` turns a
    value into its text."""
    cells = [[title for title, _ in columns]] + [[cell(row[field]) for _, field in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in cells)
