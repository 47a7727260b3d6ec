"""The check of a ``--columns``/``--schema-file`` schema before Spark starts (plain Python, no pyspark).

``spark run`` takes the document's schema as Spark DDL (``name STRING, qty INT``, nested ``ARRAY<…>``,
``MAP<…, …>``, ``STRUCT<…>``) or as a Spark JSON schema (what ``StructType.json()`` writes). A schema
Spark cannot read used to reach the job and fail there, after the JVM had started; one Spark reads
but whose column names clash with the table's own columns failed at the first write. This module
reads the same grammar (the part of it ``--columns`` can use: the types ``mongocdc.spark.columns``
converts, plus ``BOOLEAN`` and the character types) and says what is wrong, in one sentence, so the
command exits 2 before anything starts, ``--dry-run`` included.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_SIMPLE = {
    "boolean": "boolean",
    "tinyint": "byte",
    "byte": "byte",
    "smallint": "short",
    "short": "short",
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "float": "float",
    "real": "float",
    "double": "double",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "string": "string",
    "binary": "binary",
}
_DECIMAL = ("decimal", "dec", "numeric")
_CHARS = ("char", "character", "varchar")
TYPES_HINT = (
    "types: STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), DATE, TIMESTAMP, "
    "TIMESTAMP_NTZ, BINARY, ARRAY<type>, MAP<STRING, type>, STRUCT<name: type, …>"
)
META_COLUMNS: tuple[str, ...] = (
    "_key",
    "_op",
    "_ts_ms",
    "_ord",
    "_txn_order",
    "_kafka_partition",
    "_kafka_offset",
)
"""Columns every state row and change row carries besides the payload (``merge``'s; kept here, where no Spark is
imported, so that a schema can be checked before Spark starts)."""
COLLECTION_COLUMNS = ("_db", "_collection")
"""The columns that name a row's collection in a table of several."""
RESERVED = (*META_COLUMNS, *COLLECTION_COLUMNS, "_batch_id")
"""The tables' and changelogs' own columns (``META_COLUMNS``, ``COLLECTION_COLUMNS``, the changelog's
``_batch_id``); ``_mongocdc_…`` names are the job's too. Spark compares names without case."""


class SchemaTextError(ValueError):
    """What is wrong with a schema, as a sentence."""


_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(-?[0-9]+)|('(?:[^'\\]|\\.)*')|(.))", re.S)


@dataclass
class _Tokens:
    items: list[str]
    at: int = 0

    def peek(self) -> str | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise SchemaTextError("it ends too early")
        self.at += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token != text:
            raise SchemaTextError(f"expected {text!r}, found {token!r}")

    def word(self, *words: str) -> bool:
        token = self.peek()
        if token is not None and token.lower() in words:
            self.at += 1
            return True
        return False


def _tokens(text: str) -> _Tokens:
    items = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            break
        token = match.group(0).strip()
        if token:
            items.append(token)
        position = match.end()
    return _Tokens(items)


def _name(tokens: _Tokens) -> str:
    token = tokens.take()
    if token.startswith("`"):
        return token[1:-1].replace("``", "`")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
        raise SchemaTextError(f"{token!r} is not a column name (quote unusual names in backticks: `odd name`)")
    return token


def _data_type(tokens: _Tokens) -> str:
    token = tokens.take()
    word = token.lower()
    if word in _SIMPLE:
        return _SIMPLE[word]
    if word in _DECIMAL:
        precision, scale = 10, 0
        if tokens.peek() == "(":
            tokens.take()
            precision = _number(tokens)
            if tokens.peek() == ",":
                tokens.take()
                scale = _number(tokens)
            tokens.expect(")")
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise SchemaTextError(f"DECIMAL({precision}, {scale}): precision 1-38 and a scale from 0 to the precision")
        return f"decimal({precision},{scale})"
    if word in _CHARS:
        tokens.expect("(")
        _number(tokens)
        tokens.expect(")")
        return "string"
    if word == "array":
        tokens.expect("<")
        element = _data_type(tokens)
        tokens.expect(">")
        return f"array<{element}>"
    if word == "map":
        tokens.expect("<")
        key = _data_type(tokens)
        tokens.expect(",")
        value = _data_type(tokens)
        tokens.expect(">")
        if key != "string":
            raise SchemaTextError(f"MAP<{key.upper()}, …>: a document's keys are strings, so its key type is STRING")
        return f"map<{key},{value}>"
    if word == "struct":
        tokens.expect("<")
        fields = _fields(tokens, closing=">")
        tokens.expect(">")
        return "struct<" + ",".join(fields) + ">"
    raise SchemaTextError(f"{token!r} is not a type --columns can read")


def _number(tokens: _Tokens) -> int:
    token = tokens.take()
    if not token.lstrip("-").isdigit():
        raise SchemaTextError(f"expected a number, found {token!r}")
    return int(token)


def _fields(tokens: _Tokens, closing: str | None) -> list[str]:
    """``name [:] type [NOT NULL] [COMMENT '…']`` separated by commas, up to ``closing`` (or the end)."""
    fields: list[str] = []
    seen: set[str] = set()
    while True:
        if tokens.peek() is None:
            raise SchemaTextError("a column is missing after the last ','")
        name = _name(tokens)
        if tokens.peek() == ":":
            tokens.take()
        if tokens.peek() in (None, ",", closing):
            raise SchemaTextError(f"the column {name} has no type")
        kind = _data_type(tokens)
        if tokens.word("not") and not tokens.word("null"):
            raise SchemaTextError(f"after {name} {kind.upper()} NOT: expected NULL")
        if tokens.word("comment"):
            comment = tokens.take()
            if not comment.startswith("'"):
                raise SchemaTextError(f"the COMMENT of {name} is not a quoted string")
        if name.lower() in seen:
            raise SchemaTextError(f"the column {name} is there twice")
        seen.add(name.lower())
        fields.append(f"{name}:{kind}")
        following = tokens.peek()
        if following == ",":
            tokens.take()
            continue
        if following == closing:
            return fields
        raise SchemaTextError(f"after the column {name}: expected ',' or the end, found {following!r}")


def check_ddl(text: str) -> list[str]:
    """The top-level columns (``name:type``) of Spark DDL, or :class:`SchemaTextError`."""
    tokens = _tokens(text)
    if tokens.peek() is None:
        raise SchemaTextError("it has no columns")
    columns = _fields(tokens, closing=None)
    _check_names([c.split(":", 1)[0] for c in columns])
    return columns


_JSON_SIMPLE = {*_SIMPLE.values()}
_JSON_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _json_type(value: Any, where: str) -> str:
    if isinstance(value, str):
        if value in _JSON_SIMPLE or value == "decimal":
            return value
        match = _JSON_DECIMAL.fullmatch(value)
        if match and 1 <= int(match.group(1)) <= 38 and int(match.group(2)) <= int(match.group(1)):
            return value
        raise SchemaTextError(f"{where}: {value!r} is not a type --columns can read")
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "array" and "elementType" in value:
            return f"array<{_json_type(value['elementType'], where)}>"
        if kind == "map" and "keyType" in value and "valueType" in value:
            if value["keyType"] != "string":
                raise SchemaTextError(f"{where}: a map's key type is string (a document's keys are strings)")
            return f"map<string,{_json_type(value['valueType'], where)}>"
        if kind == "struct":
            return "struct<" + ",".join(_json_fields(value, where)) + ">"
    raise SchemaTextError(f"{where}: {json.dumps(value)[:60]} is not a Spark JSON type")


def _json_fields(schema: Any, where: str) -> list[str]:
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if schema.get("type") != "struct" or not isinstance(fields, list):
        raise SchemaTextError(f'{where}: a struct is {{"type": "struct", "fields": [...]}}')
    result = []
    seen: set[str] = set()
    for number, item in enumerate(fields, 1):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name or "type" not in item:
            raise SchemaTextError(f'{where}: field {number} needs a "name" and a "type"')
        if name.lower() in seen:
            raise SchemaTextError(f"the column {name} is there twice")
        seen.add(name.lower())
        result.append(f"{name}:{_json_type(item['type'], f'{where} {name}')}")
    return result


def check_json(text: str) -> list[str]:
    """The top-level columns (``name:type``) of a Spark JSON schema, or :class:`SchemaTextError`."""
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaTextError(f"it is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    if not isinstance(schema, dict):
        raise SchemaTextError('a Spark JSON schema is an object: {"type": "struct", "fields": [...]}')
    columns = _json_fields(schema, "the schema")
    if not columns:
        raise SchemaTextError("it has no columns")
    _check_names([c.split(":", 1)[0] for c in columns])
    return columns


def _check_names(names: list[str]) -> None:
    for name in names:
        if name.lower() in RESERVED or name.lower().startswith("_mongocdc_"):
            own = ", ".join(RESERVED)
            raise SchemaTextError(f"the column {name} has the name of one of the table's own columns ({own})")


def check_schema(text: str) -> list[str]:
    """The top-level columns of a schema in either form (a JSON schema starts with ``{``)."""
    stripped = text.strip()
    return check_json(stripped) if stripped.startswith("{") else check_ddl(stripped)
