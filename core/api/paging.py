"""The `limit` and `cursor` query parameters of every paginated list (see core.paging)."""

from drf_spectacular.utils import OpenApiParameter

from core.api.fields import StrictCharField, StrictIntegerField, StrictQuerySerializer

PAGE_PARAMETERS = [
    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                     description="Page size, 1-100; default 20."),
    OpenApiParameter("cursor", {"type": "string", "maxLength": 500}, description="The `nextCursor` of the previous page."),
]


class PageQuery(StrictQuerySerializer):
    limit = StrictIntegerField(min_value=1, max_value=100, required=False, default=20)
    cursor = StrictCharField(required=False, max_length=500)


def page_query(request, query_class: type[PageQuery] = PageQuery) -> dict:
    """The validated query of a list request; `VALIDATION_ERROR` for anything else (the
    cursor's signature is checked later, by core.paging)."""
    query = query_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)
