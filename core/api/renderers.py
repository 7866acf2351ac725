from rest_framework import renderers


class JSONRenderer(renderers.JSONRenderer):
    """Compact UTF-8 JSON whatever the client's Accept header says."""

    charset = None
    ensure_ascii = False
    compact = True
