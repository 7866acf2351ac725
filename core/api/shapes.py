"""Response shapes: each JSON object the API answers has one definition, a `TypedDict`.

An app's `presenters.py` declares the shape and, beside it, a plain function typed as
returning it that builds the JSON from rows (no serializer runs on a read). The OpenAPI
document's component is generated from the same `TypedDict`: its docstring describes the
component, its keys (in order) are the properties, `NotRequired` keys are the optional ones,
and `Annotated` adds what a bare type cannot say:

    class Organizer(TypedDict):
        '''The member who organises the poll.'''

        id: str
        image: Annotated[str | None, "Avatar URL on the CDN, or null."]   # a str: the description

`Instant`, `CalendarDate`, `Url`, `Count`, `Number` and `Choices([...])` are the formats the
API uses; a nested `TypedDict` is a `$ref` to its own component, and `one_of("Option", A, B)`
a named component of alternatives. A view documents its answer with `envelope(...)`.
"""

from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints, is_typeddict

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent


@dataclass(frozen=True)
class Format:
    """The `format` of a string (or number) in the document."""

    name: str


@dataclass(frozen=True)
class Minimum:
    value: int


@dataclass(frozen=True)
class Choices:
    """A closed set of string values (the document names the set by ENUM_NAME_OVERRIDES or the key)."""

    values: tuple

    def __init__(self, values):
        object.__setattr__(self, "values", tuple(values))


@dataclass(frozen=True)
class OneOf:
    """A named component that is one of several shapes (the caller's JSON picks which)."""

    name: str
    shapes: tuple


Instant = Annotated[str, Format("date-time")]  # core.formats.instant: YYYY-MM-DDTHH:MM:SS.sssZ
CalendarDate = Annotated[str, Format("date")]
Url = Annotated[str, Format("uri")]
Count = Annotated[int, Minimum(0)]
Number = Annotated[float, Format("double")]


def one_of(name: str, *shapes) -> Any:
    """A type for a key whose value is one of `shapes`, documented as the component `name`."""
    return Annotated[Union[shapes], OneOf(name, shapes)]  # noqa: UP007 - built at run time


_BASIC = {str: "string", int: "integer", float: "number", bool: "boolean"}


class Components:
    """The components a schema refers to, collected while it is built (name -> schema)."""

    def __init__(self):
        self.found: dict[str, dict] = {}

    def ref(self, name: str, build) -> dict:
        if name not in self.found:
            self.found[name] = {}  # placeholder first: a shape may refer to itself
            self.found[name] = build()
        return {"$ref": f"#/components/schemas/{name}"}

    def shape(self, shape) -> dict:
        return self.ref(shape.__name__, lambda: self.object_schema(shape))

    def object_schema(self, shape) -> dict:
        hints = get_type_hints(shape, include_extras=True)
        schema: dict = {"type": "object"}
        if shape.__doc__:
            schema["description"] = " ".join(shape.__doc__.split())
        schema["properties"] = {name: self.schema(hint) for name, hint in hints.items()}
        required = sorted(shape.__required_keys__)
        if required:
            schema["required"] = required
        return schema

    def schema(self, hint) -> dict:
        """The JSON Schema of one type hint."""
        notes: list = []
        while get_origin(hint) in (Annotated, NotRequired):
            if get_origin(hint) is Annotated:
                notes = [*hint.__metadata__, *notes]
            hint = get_args(hint)[0]
        one = next((note for note in notes if isinstance(note, OneOf)), None)
        nullable = False
        if one is None and get_origin(hint) in (Union, UnionType):
            members = [member for member in get_args(hint) if member is not NoneType]
            nullable = len(members) < len(get_args(hint))
            [hint] = members  # a union other than `X | None` needs one_of()
            while get_origin(hint) is Annotated:
                notes = [*hint.__metadata__, *notes]
                hint = get_args(hint)[0]
        if one is not None:
            schema = self.ref(one.name, lambda: {"oneOf": [self.shape(shape) for shape in one.shapes]})
        elif is_typeddict(hint):
            schema = self.shape(hint)
        elif get_origin(hint) is list:
            schema = {"type": "array", "items": self.schema(get_args(hint)[0])}
        else:
            schema = {"type": _BASIC[hint]}
        for note in notes:
            if isinstance(note, Choices):
                schema = {"enum": list(note.values), **schema}
            elif isinstance(note, Format):
                schema["format"] = note.name
            elif isinstance(note, Minimum):
                schema["minimum"] = note.value
        if nullable:
            schema["type"] = [schema["type"], "null"]
        descriptions = [note for note in notes if isinstance(note, str)]
        if descriptions:
            if "$ref" in schema:
                schema = {"allOf": [schema]}
            schema["description"] = descriptions[-1]
        return schema


@dataclass(frozen=True)
class Envelope:
    """A `{"data": ...}` answer, documented as the component `name`: `data` is one `shape`,
    or a list of them (`many`), with `nextCursor` beside it when `paginated`."""

    name: str
    shape: Any
    many: bool = False
    paginated: bool = False

    def schema(self, components: Components) -> dict:
        data = components.schema(self.shape)
        properties = {"data": {"type": "array", "items": data} if self.many else data}
        if self.paginated:
            properties["nextCursor"] = {
                "type": ["string", "null"], "description": "Pass as `cursor` for the next page; null on the last page.",
            }
        return {"type": "object", "properties": properties, "required": sorted(properties)}


def envelope(name: str, shape, *, many: bool = False, paginated: bool = False) -> Envelope:
    """What a view passes to `extend_schema(responses=...)` for a `{"data": ...}` answer."""
    return Envelope(name, shape, many, paginated)


class EnvelopeExtension(OpenApiSerializerExtension):
    """drf-spectacular reads an `Envelope` as it reads a serializer: one component for the
    envelope and one per shape it refers to."""

    target_class = Envelope

    def get_name(self, auto_schema, direction):
        return self.target.name

    def map_serializer(self, auto_schema, direction):
        components = Components()
        schema = self.target.schema(components)
        for name, component in components.found.items():
            auto_schema.registry.register_on_missing(
                ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=component)
            )
        return schema


class Deleted(TypedDict):
    """The result of a delete."""

    id: str
    deleted: bool


def deleted(object_id: str) -> Deleted:
    return {"id": object_id, "deleted": True}
