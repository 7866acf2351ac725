"""Hand-written SELECTs and INSERTs of whole model rows, for the few hot paths where building
the SQL with the ORM on every request costs more than running it (docs/performance.md). The
SQL text is made from the models' metadata; each row is turned into model instances with
the database backend's converters, exactly as the ORM does, so callers get the same objects
as from a queryset (`Table`), or the same values in named tuples (`Columns`); `insert` stores
new instances as `bulk_create` does. Everything else uses the ORM."""

import functools
import json
import operator
import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, date, datetime

import orjson
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from psycopg.types.json import Jsonb

from core.statements import statement_cursor


class Table:
    """A model's concrete columns under a table alias in a hand-written SELECT."""

    def __init__(self, model, alias: str):
        self.model, self.alias = model, alias
        self.fields = model._meta.concrete_fields
        self.names = [field.attname for field in self.fields]
        self.width = len(self.fields)
        self.pk_index = self.names.index(model._meta.pk.attname)
        self._converters: dict[str, list] = {}  # vendor -> per column: [(converter, expression)]

    @property
    def table(self) -> str:
        return f"{connection.ops.quote_name(self.model._meta.db_table)} {self.alias}"

    def column(self, name: str) -> str:
        return f"{self.alias}.{connection.ops.quote_name(self.model._meta.get_field(name).column)}"

    def columns(self) -> str:
        q = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{q(field.column)}" for field in self.fields)

    def converter(self, name: str):
        """value -> value as the ORM gives it, for the column of field `name` alone."""
        col = self.model._meta.get_field(name).get_col(self.alias)
        return _chain(connection.ops.get_db_converters(col) + col.get_db_converters(connection), col)

    def build(self, values):
        """The instance from this table's columns of a row; None when its id is NULL (the
        outer side of a LEFT JOIN that found nothing)."""
        converters = self._converters.get(connection.vendor)
        if converters is None:
            converters = self._converters[connection.vendor] = [
                [(convert, col) for convert in connection.ops.get_db_converters(col) + col.get_db_converters(connection)]
                for col in (field.get_col(self.alias) for field in self.fields)
            ]
        values = list(values)
        for index, column_converters in enumerate(converters):
            for convert, col in column_converters:
                values[index] = convert(values[index], col, connection)
        if values[self.pk_index] is None:
            return None
        return self.model.from_db(connection.alias, self.names, values)


def split(row, *tables: Table) -> list:
    """The instances of `tables` from one row that selected their columns in that order."""
    built, start = [], 0
    for table in tables:
        built.append(table.build(row[start:start + table.width]))
        start += table.width
    return built


class Columns(Table):
    """Some columns of a model under a table alias, read into plain named tuples (fields
    named by the models' attribute names) with the backend's converters: for the reads whose
    rows go straight to a response, where a model instance per row costs more than the rest
    (a page of 50 polls and their 500 options)."""

    def __init__(self, model, alias: str, names: tuple[str, ...], row_name: str, extra: tuple[str, ...] = ()):
        """`extra`: more fields of the row, given to `read` (a joined row, a count)."""
        self.model, self.alias = model, alias
        self.fields = [model._meta.get_field(name) for name in names]
        self.width = len(self.fields)
        self.row = namedtuple(row_name, [*(field.attname for field in self.fields), *extra])
        self._converters: dict[str, list] = {}  # vendor -> [(column index, convert)]

    def reader(self, start: int = 0):
        """`read(values, extra=())`: the named tuple of this table's columns,
        `values[start:start + width]` of a row, followed by `extra`, with the converters of
        the connection's backend looked up once for all the rows of a result."""
        vendor = connections[DEFAULT_DB_ALIAS].vendor  # looked up once: each `connection.x` is a lookup and a caught AttributeError
        converters = self._converters.get(vendor)
        if converters is None:
            converters = self._converters[vendor] = self._make_converters()
        stop, make = start + self.width, self.row._make

        def read(values, extra: tuple = ()):
            values = list(values[start:stop])
            for index, convert in converters:
                values[index] = convert(values[index])
            values.extend(extra)
            return make(values)

        return read

    def _make_converters(self) -> list:
        made = []
        for index, field in enumerate(self.fields):
            col = field.get_col(self.alias)
            functions = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if functions:
                made.append((index, _chain(functions, col)))
        return made


#: Fields whose values a JSON array would not give back as SQLite's columns give them.
_NOT_PACKED_ON_SQLITE = {"FloatField", "DecimalField", "BinaryField"}


def pack(vendor: str, columns: str) -> str:
    """SQL of one text holding the values of `columns` (a hand-written SELECT's list): a row
    packed. A driver makes a Python value of each column of each row it fetches, and a read
    that compares rows with those it read before (`Kept`) then compares every value; packed,
    a row is one value, compared as one string, and only a row not kept is unpacked
    (`unpacker`). SQLite packs into a JSON array (`json_array`: SQLite's integers, text and
    NULLs as its columns give them). PostgreSQL's JSON would write timestamps and booleans
    as text, unlike psycopg's values: there the row's own text (`ROW(...)::text`), whose
    fields psycopg's loaders read as they read the columns' text (core/postgresql/records.py).
    Tested against the columns: polls/tests/test_queries.py, spaces/tests/test_queries.py,
    tests/test_postgresql_records.py."""
    return f"ROW({columns})::text" if vendor == "postgresql" else f"json_array({columns})"


def unpacker(db, fields) -> Callable[[str], Sequence]:
    """`values(packed)`: the values of a row of these model fields that `pack` packed, on
    the connection `db` (just used: PostgreSQL's loaders are its connection's), as the
    backend gives its columns (Django's converters come after, as for the columns)."""
    if db.vendor == "postgresql":
        from core.postgresql import records

        return records.unpacker(db.connection, [field.db_type(db) for field in fields])
    refused = [field.name for field in fields if field.get_internal_type() in _NOT_PACKED_ON_SQLITE]
    if refused:
        raise ValueError(f"a JSON array would change these fields' values: {refused}")
    return orjson.loads


@dataclass(frozen=True)
class Rider:
    """A read that rides on another hand-written statement, LEFT JOINed to it, so that the
    two reads cost one round trip: the key lookup of every API request brings the row its
    endpoint reads next (`GET /v1/polls/{id}`: the poll's). `sql(anchor)` gives the columns
    it adds to the SELECT and its JOIN clauses, hanging on the column `anchor` of the
    statement it rides on (a module-level function: the statement is made once per function
    and backend); `params` are the JOIN's parameters, `read(values)` its result from the
    columns it added (None: the join found nothing)."""

    sql: Callable[[str], tuple[str, str]]
    params: list
    read: Callable
    #: Unused (kept for the riders that still pass it).
    versions: Callable[[object], tuple[str, ...]] | None = None


@dataclass(frozen=True)
class RowsRider:
    """A read of many rows that rides on the key lookup's statement (PostgreSQL: it uses
    LATERAL), as `Rider` does for one: a page of the poll list. `sql(anchor)` gives the
    whole SELECT, `width` columns, hanging on the column `anchor` (a module-level function,
    or one made once per shape: the statement is made once per function); `order` is the
    order of its rows, as `(column index, "ASC" or "DESC")`: its ORDER BY, which the
    combined statement repeats (UNION ALL gives no order of its own). `params` are the
    SELECT's parameters, `read(rows)` its result from the list of the rows' values (of the
    columns it added), in that order."""

    sql: Callable[[str], str]
    params: list
    read: Callable
    width: int
    order: tuple[tuple[int, str], ...]


class Kept:
    """What each process made of the values it read, kept by key (for each database, least
    recently used out past `size`): `made([(key, values), ...], make)` gives `make(values)`
    for each, or what it gave before for that key if the values read are the same as then.
    For rows that a request reads again and again unchanged (a poll, its options): the
    backend's converters (JSON, timestamps, dates) cost more than the rest of reading them,
    and a cache of their encoded answer then finds the very same object (compared by
    identity). What is made is shared by the process's requests: immutable (named tuples),
    and their JSON values must not be changed either. Keyed by the key itself in a dict per
    database (a tuple of the two, made and hashed twice per item, was 4 % of the poll list)."""

    def __init__(self, size: int):
        self.size = size
        self._made: dict[str, OrderedDict] = {}  # alias -> key -> (values, made)
        self._lock = threading.Lock()

    def made(self, items: list, make=None, *, make_all=None) -> list:
        """`make(values)` for each `(key, values)` of `items`, in order, or what it gave
        before for that key when the values are the same as then. `make_all(values list)`
        instead makes those not kept in one call (one query for all of them), in order."""
        alias = connections[DEFAULT_DB_ALIAS].alias
        found = []
        with self._lock:
            made = self._made.get(alias)
            if made is None:
                made = self._made[alias] = OrderedDict()
            kept_of, touch = made.get, made.move_to_end
            for key, values in items:
                kept = kept_of(key)
                if kept is not None and kept[0] == values:
                    touch(key)
                    found.append(kept[1])
                else:
                    found.append(None)
        if None not in found:
            return found
        missing = [values for (_, values), result in zip(items, found, strict=True) if result is None]
        new_ones = iter(make_all(missing) if make_all else [make(values) for values in missing])
        results = [next(new_ones) if result is None else result for result in found]
        with self._lock:
            for (key, values), result, new in zip(items, found, results, strict=True):
                if result is None:
                    made[key] = (values, new)
                    made.move_to_end(key)
            while len(made) > self.size:
                made.popitem(last=False)
        return results

    def keys(self) -> list:
        """The keys kept for the default database, least recently used first (for tests)."""
        with self._lock:
            return list(self._made.get(connections[DEFAULT_DB_ALIAS].alias, ()))


def _chain(functions, col):
    def convert(value):
        for function in functions:
            value = function(value, col, connection)
        return value

    return convert


@functools.cache
def _new_plan(model) -> tuple[dict, tuple, dict] | None:
    """`new`'s plan for `model`: every concrete field's attname with its default, in field
    order (None for those made per instance), the defaults to make per instance (attname,
    callable), and per foreign key's name (attname, the remote model, its cache name, the
    remote primary key's attname); None
    where `new` would not give what the model's own constructor gives (routers, generated
    fields, a foreign key to anything but a primary key or with a default), and then `new`
    calls the constructor."""
    if settings.DATABASE_ROUTERS or model._meta.private_fields:
        return None
    defaults, calls, relations = {}, [], {}
    for field in model._meta.concrete_fields:
        if getattr(field, "generated", False):
            return None
        if field.is_relation:
            if not field.many_to_one or field.has_default() or field.target_field != field.related_model._meta.pk:
                return None
            relations[field.name] = (field.attname, field.related_model._meta.concrete_model, field.cache_name,
                                     field.target_field.attname)
        if field.has_default() and callable(field.default):
            defaults[field.attname] = None
            calls.append((field.attname, field.default))
        else:
            defaults[field.attname] = field.get_default()
    return defaults, tuple(calls), relations


def new(model, **values):
    """`model(**values)`, the same instance, built without `Model.__init__`'s walk of every
    field through its descriptors (20 us an option with its poll, 44 us a poll: a fifth of
    creating a poll of ten options): the defaults copied at once, those made per instance
    made unless given. `values` are given by field or attribute name; a foreign key by name
    takes an instance of its model, which is cached on the new one as its descriptor does.
    Anything else (a property, an unknown name, a pre_init or post_init receiver, a model
    `_new_plan` refuses) goes to the constructor. tests/test_rows_new.py compares both."""
    plan = _new_plan(model)
    if plan is None or pre_init.receivers or post_init.receivers:
        return model(**values)
    defaults, calls, relations = plan
    obj = model.__new__(model)
    state = obj._state = ModelState()
    fields = obj.__dict__
    fields.update(defaults)
    for attname, make in calls:
        if attname not in values:
            fields[attname] = make()
    cached = None  # the related instances given, by cache name
    for name, value in values.items():
        relation = relations.get(name)
        if relation is not None:
            attname, related_model, cache_name, pk_attname = relation
            if not isinstance(value, related_model) or attname in values:
                return model(**values)
            fields[attname] = getattr(value, pk_attname)
            if cached is None:
                cached = state.fields_cache = {}  # in place of ModelState's descriptor that makes it
            cached[cache_name] = value
            # Where each side will be written, as the descriptor sets it without routers.
            if state.db is None:
                state.db = value._state.db or DEFAULT_DB_ALIAS
            if value._state.db is None:
                value._state.db = state.db
            elif value._state.db != state.db:
                return model(**values)  # which refuses the relation
        elif name in defaults:
            fields[name] = value
        else:
            return model(**values)
    return obj



def new_many(model, rows, **common) -> list:
    """`[new(model, **common, **row) for row in rows]`, the same instances, with `common`
    (a related instance, say) worked out once for all of them (a new poll's ten options:
    28 -> 21 us). A row gives fields by attribute name, none of them given by `common` (a
    foreign key's id with its instance there, say); any other row goes to `new`.
    tests/test_rows_new.py compares both."""
    plan = _new_plan(model)
    if plan is None or pre_init.receivers or post_init.receivers:
        return [model(**common, **row) for row in rows]
    defaults, calls, relations = plan
    # The shared values, with None where a default is made per instance (made per row below).
    template = new(model, **{attname: None for attname, _ in calls if attname not in common}, **common)
    shared = {name: value for name, value in template.__dict__.items() if name != "_state"}
    db, cached = template._state.db, template._state.__dict__.get("fields_cache")
    taken = common.keys() | {relations[name][0] for name in common if name in relations}
    made = []
    for row in rows:
        if not row.keys() <= defaults.keys() or not taken.isdisjoint(row):
            made.append(new(model, **common, **row))
            continue
        obj = model.__new__(model)
        state = obj._state = ModelState()
        state.db = db
        if cached:
            state.fields_cache = dict(cached)
        fields = obj.__dict__
        fields.update(shared)
        for attname, make in calls:
            if attname not in row and attname not in common:
                fields[attname] = make()
        fields.update(row)
        made.append(obj)
    return made

# How `insert` passes each field's value, by the field's exact class (a subclass may change
# its values); every other field, and every other value, goes through the field
# (`pre_save`, then `get_db_prep_save`), as bulk_create does.
_AS_IS, _TIMESTAMP, _DAY, _JSON, _FIELD = range(5)
_KINDS = {
    # a str, int, bool or None stored as it is
    **dict.fromkeys((models.CharField, models.TextField, models.EmailField, models.BooleanField, models.IntegerField,
                     models.PositiveIntegerField, models.BigIntegerField, models.ForeignKey), _AS_IS),
    # None as it is; an aware datetime adapted by the backend (what the field's own
    # preparation comes to for one: it only warns about naive ones)
    models.DateTimeField: _TIMESTAMP,
    models.DateField: _DAY,  # None as it is
    # None as it is; a dict or list adapted by the backend, with the field's encoder (what
    # the field's own preparation comes to for them)
    models.JSONField: _JSON,
}
# What the loop (and `_document`) passes as it is; also what a JSONField's dict or list may
# hold for JSON to carry it exactly (`_document_exact`).
_AS_IS_VALUES = frozenset({str, int, bool, type(None)})
_JSON_EXACT = _AS_IS_VALUES | {date}  # and more: `_json_exact`


def _json_exact(value) -> bool:
    """Whether JSON carries `value` to PostgreSQL's input functions exactly as psycopg would
    send it: text, integers, booleans, None, days, aware timestamps (with their offset;
    a naive one would be read in the session's time zone, where psycopg sends a
    `timestamp`), a model choice's member (psycopg sends its text or number, orjson its
    value: the same), and a JSONField's value as the backend adapts it (`Jsonb`, with the
    field's default encoder) when it holds nothing but text, integers, booleans, None,
    dicts and lists (`_unwrapped`). Not floats (orjson writes NaN as null), decimals,
    bytes, or other subclasses."""
    kind = type(value)
    if kind in _JSON_EXACT:
        return True
    if kind is datetime:
        return value.tzinfo is not None
    if kind is Jsonb:
        return value.dumps is json.dumps and _document_exact(value.obj)
    return isinstance(value, models.Choices) and type(value.value) in (str, int)


def _document_exact(value) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _document_exact(item) for key, item in value.items())
    if kind is list:
        return all(map(_document_exact, value))
    return kind in _AS_IS_VALUES


def _unwrapped(value):
    """orjson's `default`: a JSONField's value as JSON, where `_json_exact` let it through."""
    if type(value) is Jsonb:
        return value.obj
    raise TypeError


_MAX_PARAMETERS = 65_535


@functools.cache
def _insert_plan(model, vendor: str) -> tuple[str, str, list, str | None, str | None, list]:
    """The INSERT's head and one row's placeholders for `model`, per column `(attname,
    field, kind)`, and on PostgreSQL the INSERTs of many rows: from one JSON array of
    objects keyed by column, and from one array per column (for values JSON cannot carry
    exactly), with the JSON keys: made once per model and backend."""
    fields = model._meta.local_concrete_fields
    q = connection.ops.quote_name
    names = ", ".join(q(field.column) for field in fields)
    into = f"INSERT INTO {q(model._meta.db_table)} ({names})"
    head = f"{into} VALUES "
    row = f"({', '.join(['%s'] * len(fields))})"
    arrays = records = None
    if vendor == "postgresql":
        # Each array of the column's type without its modifier (`varchar`, not `varchar(30)`):
        # a cast to `varchar(30)` cuts a longer value, where the INSERT's own assignment
        # refuses it, as for one row and as bulk_create does.
        from core.postgresql.records import unmodified

        types = [unmodified(field.db_type(connection)) for field in fields]
        arrays = f"{into} SELECT * FROM unnest({', '.join(f'%b::{db_type}[]' for db_type in types)})"
        # The table's row type reads each value with its column's input function and
        # modifier: a value too long for its column is refused, as the assignment does.
        records = f"{into} SELECT {names} FROM json_populate_recordset(NULL::{q(model._meta.db_table)}, %s::json)"
    columns = []
    for field in fields:
        kind = _KINDS.get(type(field), _FIELD)
        if kind in (_TIMESTAMP, _DAY) and (field.auto_now or field.auto_now_add):
            kind = _FIELD  # pre_save sets the value
        columns.append((field.attname, field, kind))
    return head, row, columns, arrays, records, [field.column for field in fields]


@functools.cache
def _document_plan(model) -> tuple | None:
    """`_document`'s plan for `model`: how many columns it has; a getter of the plain columns'
    attributes (`_AS_IS`) with whether each holds text; per other column `(attname, kind)`.
    None where a column goes through its field (`_FIELD`), a JSONField has an encoder of its
    own, or an attribute is not named as its column: `_inserts`' loop decides then."""
    columns = _insert_plan(model, connection.vendor)[2]  # the same columns on every backend
    plain = [(attname, isinstance(field, _TEXT_FIELDS)) for attname, field, kind in columns if kind is _AS_IS]
    if len(plain) < 2 or any(kind is _FIELD or kind is _JSON and field.encoder is not None or attname != field.column
                             for attname, field, kind in columns):
        return None
    return (len(columns), operator.itemgetter(*(attname for attname, _ in plain)), tuple(text for _, text in plain),
            tuple((attname, kind) for attname, _, kind in columns if kind is not _AS_IS))


_TEXT_FIELDS = (models.CharField, models.TextField)  # EmailField is a CharField


def _document(objects: list, plan) -> str | None:
    """The JSON document of `objects`' rows that `_inserts`' loop would send PostgreSQL, made
    of the instances' own `__dict__`s (attribute names are the column names; `_state`
    becomes a null that `json_populate_recordset` ignores) where every value is one the loop
    passes as it is: text, an integer, a boolean or NULL in a plain column (or a text
    choice's member in a text column), and NULL, an aware timestamp, a day or a JSONField's
    document of `_document_exact` values in the others. A poll with its ten options and its
    event: 329k -> 213k instructions (the loop's per-value work, and a dict per row). None
    where any value is otherwise, an instance holds anything but its columns, or orjson
    refuses a value (an integer beyond 64 bits, a lone surrogate): the loop decides then."""
    if plan is None:
        return None
    width, plain, texts, others = plan
    documents = []
    for obj in objects:
        values = obj.__dict__
        if len(values) != width + 1:  # the columns and `_state`, each column's key its name
            return None
        if not _AS_IS_VALUES.issuperset(map(type, plain(values))):
            for text, value in zip(texts, plain(values)):
                if type(value) not in _AS_IS_VALUES and not (text and _text_choice(value)):
                    return None
        for attname, kind in others:
            value = values[attname]
            if value is None:
                continue
            if kind is _TIMESTAMP:
                if type(value) is not datetime or value.utcoffset() is None:
                    return None
            elif kind is _DAY:
                if type(value) is not date:
                    return None
            elif type(value) not in (dict, list) or not _document_exact(value):  # _JSON
                return None
        documents.append(values)
    try:
        return orjson.dumps(documents, default=_no_state).decode()
    except orjson.JSONEncodeError:
        return None


def _no_state(value):
    """orjson's `default` for `_document`: the instance's `_state` as null, a key that
    `json_populate_recordset` ignores (no column has its name)."""
    if type(value) is ModelState:
        return None
    raise TypeError


def _text_choice(value) -> bool:
    """A text choice's member: a text column stores (and orjson writes) its value."""
    return isinstance(value, models.Choices) and isinstance(value, str) and type(value.value) is str


def insert(objects) -> None:
    """Stores new instances of one model, as `Model.objects.bulk_create(objects)` does (the
    same values: each field's `pre_save` then `get_db_prep_save`, except where they would
    give back the attribute as it is, or an aware datetime as the backend adapts it), in as
    few INSERTs as the backend's parameter limit allows (PostgreSQL: one, of an array per
    column), without the ORM's SQL compiler. No signals are sent (bulk_create sends none either). The
    model's primary key must be set by a default (no database-generated ids)."""
    objects = list(objects)
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    statements = _inserts(objects, db)
    if statements:
        with statement_cursor(db) as cursor:
            for sql, params in statements:
                cursor.execute(sql, params)
    _stored(objects, db.alias)


def store(*groups) -> None:
    """Stores new instances of several models (a list per model, parents first), all or
    none, each as `insert` does. On PostgreSQL in one statement (the INSERTs as
    data-modifying WITH clauses; foreign keys are checked at its end), which is atomic by
    itself: outside a transaction no BEGIN and COMMIT of their own, one round trip instead of
    one per model plus two; elsewhere one INSERT per model in a transaction. Inside a
    transaction, part of it either way."""
    groups = [list(objects) for objects in groups]
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    statements = [statement for objects in groups for statement in _inserts(objects, db)]
    if db.vendor == "postgresql" and len(statements) > 1:
        params = [value for _, values in statements for value in values]
        if len(params) <= _MAX_PARAMETERS:
            head = ", ".join(f"i{n} AS ({sql})" for n, (sql, _) in enumerate(statements[:-1]))
            statements = [(f"WITH {head} {statements[-1][0]}", params)]
    with transaction.atomic() if len(statements) > 1 else nullcontext(), statement_cursor(db) as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
    for objects in groups:
        _stored(objects, db.alias)


def _inserts(objects: list, db) -> list[tuple[str, list]]:
    """The INSERTs (SQL, parameters) that store `objects`, all of one model (`insert`), on
    the connection `db`."""
    if not objects:
        return []
    model = type(objects[0])
    if model._meta.pk.db_returning:
        raise ValueError(f"{model.__name__}: ids made by the database are not supported")
    head, row, columns, arrays, records, keys = _insert_plan(model, db.vendor)
    if arrays:
        document = _document(objects, _document_plan(model))
        if document is not None:
            return [(records, [document])]
    adapt_timestamp = db.ops.adapt_datetimefield_value
    if db.vendor == "sqlite" and db.timezone_name == "UTC":
        adapt_timestamp = functools.partial(_utc_text, adapt_timestamp)
    adapt_json = db.ops.adapt_json_value
    params = []
    append = params.append
    unsure = []  # the values JSON may not carry exactly (`_json_exact`); the others are text,
    # integers, booleans, None or aware timestamps (the backend's adapter gives them back on PostgreSQL)
    for obj in objects:
        values = obj.__dict__
        for attname, field, kind in columns:
            value = values[attname]
            if kind is _AS_IS and type(value) in _AS_IS_VALUES or value is None and kind in (_TIMESTAMP, _DAY, _JSON):
                append(value)
            elif kind is _TIMESTAMP and type(value) is datetime and value.utcoffset() is not None:
                append(adapt_timestamp(value))
            else:
                if kind is _JSON and type(value) in (dict, list):
                    value = adapt_json(value, field.encoder)
                else:
                    value = field.get_db_prep_save(field.pre_save(obj, True), db)
                append(value)
                unsure.append(value)
    width = len(columns)
    if arrays:
        # PostgreSQL: one statement, with one parameter, for any number of rows, as one JSON
        # document where JSON carries every value exactly: orjson writes it in C, where
        # psycopg adapts each parameter in Python, with adapters made afresh for each cursor
        # (a `POST /v1/polls` of 10 options: 112 -> 16 us for its options' parameters; the
        # poll's 22 and the event's 9 as documents too: 13 -> 2 us for converting the
        # statement's; PostgreSQL reads it no slower). A statement of over 50 parameters
        # psycopg would convert anew on every run, and each number of rows would be a
        # statement to prepare of its own. What orjson refuses (an integer beyond 64 bits,
        # a lone surrogate) goes as arrays, or one row's VALUES, to fail as it did.
        if all(map(_json_exact, unsure)):
            try:
                document = orjson.dumps(
                    [dict(zip(keys, params[start:start + width])) for start in range(0, len(params), width)],
                    default=_unwrapped,
                )
            except orjson.JSONEncodeError:
                pass
            else:
                return [(records, [document.decode()])]
        if len(objects) > 1:
            return [(arrays, [params[column::width] for column in range(width)])]
    if len(objects) == 1:
        return [(head + row, params)]
    # SQLite binds at most its limit of parameters per statement.
    batch = min(db.ops.bulk_batch_size([field for _, field, _ in columns], objects), _MAX_PARAMETERS // width) or 1
    return [
        (head + ", ".join([row] * len(chunk)), params[start * width:(start + len(chunk)) * width])
        for start in range(0, len(objects), batch)
        for chunk in [objects[start:start + batch]]
    ]


def _utc_text(adapt, value: datetime):
    """SQLite's adaptation of an aware timestamp when the connection's zone is UTC: the text
    of its wall clock, as `str()` of the naive value writes it (printf-style formatting makes
    it in a third of `datetime.__str__`'s time); `adapt` (the backend's) converts the rest."""
    if value.tzinfo is not UTC:
        return adapt(value)
    if value.microsecond:
        return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (
            value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond)
    return "%04d-%02d-%02d %02d:%02d:%02d" % (value.year, value.month, value.day, value.hour, value.minute, value.second)


def _stored(objects: list, alias: str) -> None:
    for obj in objects:
        obj._state.adding = False
        obj._state.db = alias
