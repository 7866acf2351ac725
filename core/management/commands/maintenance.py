"""`manage.py maintenance on|off|status`: the run-time maintenance switch.

Every process re-reads the switch at most a second after it changes: `/v1` (except
`GET /v1/openapi`) then answers 503 SERVICE_UNAVAILABLE with Retry-After, no restart needed.
"""

from django.conf import settings

from core.commands import GroupCommand
from core.maintenance import maintenance_state, set_maintenance


def _describe(state: dict) -> str:
    on_off = {True: "on", False: "off"}
    text = (
        f"Maintenance is {on_off[state['enabled']]} "
        f"(switch: {on_off[state['switch']]}, MAINTENANCE_MODE: {on_off[state['environment']]})."
    )
    if state["enabled"]:
        text += f" /v1 answers 503 with Retry-After: {settings.MAINTENANCE_RETRY_AFTER}."
    return text


class Command(GroupCommand):
    help = "Turn maintenance mode on or off in every running process, or show it."
    actions = {
        "on": "Answer every /v1 request (but GET /v1/openapi) with 503 SERVICE_UNAVAILABLE.",
        "off": "Turn the switch off (MAINTENANCE_MODE=true in the environment still wins).",
        "status": "Show whether maintenance is on, and whether by the switch or the environment.",
    }

    def do_on(self, **_):
        set_maintenance(True)
        return self.do_status()

    def do_off(self, **_):
        set_maintenance(False)
        state, text = self.do_status()
        if state["environment"]:
            self.stderr.write("Warning: MAINTENANCE_MODE=true in the environment keeps maintenance on.")
        return state, text

    def do_status(self, **_):
        state = maintenance_state()
        return state, _describe(state)
