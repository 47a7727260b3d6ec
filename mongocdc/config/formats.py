"""Reading a configuration file: YAML, JSON (Kafka Connect REST bodies too) or Java ``.properties``.

A Debezium user's connector configuration works as it is: the body of a Kafka
Connect REST call (``{"name": …, "config": {…}}``, or the bare ``{…}`` of
``PUT /connectors/<name>/config``), a standalone worker's ``.properties`` file,
a Strimzi ``KafkaConnector`` resource, or mongocdc's own YAML (flat or nested).

The format is decided by the file's extension (``.json``; ``.properties``;
``.yaml``/``.yml``) and otherwise by its content: a file whose first character is
``{`` is JSON, one whose lines are ``key=value`` (or ``key value``, or continued
with ``\\``) is a properties file, anything else YAML. ``read_config_file``
returns the connector's properties as a mapping (still nested for YAML and JSON;
the loader flattens it), the connector name found outside them, and notes worth
a warning. Malformed files raise ``ConfigError`` naming the file, line and column.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from mongocdc.errors import ConfigError

Format = Literal["yaml", "json", "properties"]

FILE_HINT: Final = "Fix the file, or point --config (or MONGOCDC_CONFIG) at another one."

EXTENSIONS: Final[Mapping[str, Format]] = {
    ".json": "json",
    ".properties": "properties",
    ".props": "properties",
    ".yaml": "yaml",
    ".yml": "yaml",
}
"""Formats decided by the file name alone."""

REST_ENVELOPE_KEYS: Final = frozenset({"name", "config", "tasks", "type"})
"""Keys of a Kafka Connect REST body (``POST /connectors``) or of ``GET /connectors/<name>``'s answer."""


@dataclass(frozen=True)
class ConfigDocument:
    """What a config file holds: the connector's properties and the name given outside them."""

    path: Path
    format: Format
    properties: Mapping[object, object]
    """Property name → value as read: nested mappings for YAML/JSON, flat strings for ``.properties``."""
    connector_name: str | None = None
    """The connector's name from a REST body's ``name`` or a ``KafkaConnector``'s ``metadata.name``."""
    envelope: str | None = None
    """``"Kafka Connect REST body"`` or ``"KafkaConnector resource"`` when the properties were inside one."""
    extra: Mapping[str, object] = field(default_factory=dict)
    """Properties given outside the config map (a ``KafkaConnector``'s ``spec.class`` and ``spec.tasksMax``)."""
    ignored: Mapping[str, str] = field(default_factory=dict)
    """Envelope fields that mean nothing to mongocdc (``spec.pause``, ``tasks``), with the reason."""
    notes: tuple[str, ...] = ()
    """Things worth a warning that are not errors (a key repeated in a properties file, …)."""

    @property
    def origin(self) -> str:
        return f"config file {self.path}"


def read_config_file(path: Path) -> ConfigDocument:
    """The connector configuration in ``path``, whatever its format; ``ConfigError`` when unreadable or malformed."""
    text = _read_text(path)
    kind = detect_format(path, text)
    notes: list[str] = []
    if kind == "properties":
        document: object = _read_properties(text, path, notes)
    elif kind == "json":
        document = _parse_json(text, path, notes)
    else:
        document = _parse_yaml(text, path)
        if isinstance(document, str) and path.suffix.lower() not in EXTENSIONS:
            # `key:value` lines without blanks read as one YAML string: a properties file after all
            kind, document = "properties", _read_properties(text, path, notes)
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        example = {"json": '{"topic.prefix": "inventory"}', "yaml": "topic.prefix: inventory"}.get(kind, "")
        raise ConfigError(
            f"config file {path} ({kind}) must hold a mapping of property names to values "
            f"(such as `{example}`), not a {type(document).__name__}",
            hint=FILE_HINT,
        )
    return _unwrap(ConfigDocument(path, kind, document, notes=tuple(notes)))


def detect_format(path: Path, text: str) -> Format:
    """The format of a config file: by extension, else ``{`` → JSON, ``key=value`` lines → properties, else YAML."""
    by_name = EXTENSIONS.get(path.suffix.lower())
    if by_name is not None:
        return by_name
    stripped = _strip_json_comments(text).lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        return "json"
    if _looks_like_properties(text):
        return "properties"
    return "yaml"


def _looks_like_properties(text: str) -> bool:
    """Whether a file without a telling extension reads as ``key=value`` lines rather than YAML.

    ``key: value`` lines mean the same in both (and YAML reads them), so a file is
    taken for properties only when a line says so: a ``=`` or a blank is the first
    separator after the key, or a line continues onto the next with ``\\``.
    """
    for line in text.splitlines():
        body = line.strip(" \t\f")
        if not body or body.startswith(("#", "!", "---")):
            continue
        if line[:1] in (" ", "\t") or body.startswith(("-", "{", "[")):
            return False  # indentation, YAML lists and flow collections: YAML
        if body.endswith("\\") and not body.endswith("\\\\"):
            return True
        for char in body:
            if char in "=":
                return True
            if char == ":":
                break
            if char in " \t\f":
                return True
    return False


# --- reading ----------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist", hint=FILE_HINT) from None
    except IsADirectoryError:
        raise ConfigError(f"cannot read config file {path}: it is a directory", hint=FILE_HINT) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}", hint=FILE_HINT) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if path.suffix.lower() in (".properties", ".props"):
            # java.util.Properties.load(InputStream) reads ISO-8859-1, as a standalone worker does.
            return raw.decode("latin-1")
        raise ConfigError(f"config file {path} is not UTF-8 text: {exc}", hint=FILE_HINT) from None


# --- YAML -------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # the base class reports unhashable keys
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is given twice in one mapping (first at line {seen[key]})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str, path: Path) -> object:
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"config file {path} is not valid YAML: {_describe_yaml_error(exc)}", hint=FILE_HINT
        ) from None
    finally:
        loader.dispose()


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    if not isinstance(exc, yaml.MarkedYAMLError):
        return str(exc)
    mark = exc.problem_mark or exc.context_mark
    text = exc.problem or exc.context or "unreadable"
    if mark is not None:
        text += f" at line {mark.line + 1}, column {mark.column + 1}"
    if exc.context and exc.problem and exc.context_mark is not None:
        text += f" ({exc.context} that starts at line {exc.context_mark.line + 1})"
    return text


# --- JSON -------------------------------------------------------------------------------


def _parse_json(text: str, path: Path, notes: list[str]) -> object:
    """A JSON document; ``//`` and ``/* */`` comments (as in the Debezium documentation's examples) are allowed."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in items:
            if key in result and result[key] != value:
                notes.append(
                    f"{key!r} is given twice in one JSON object in config file {path}; the last value counts "
                    "(as in Kafka Connect)"
                )
            result[key] = value
        return result

    try:
        return json.loads(_strip_json_comments(text.lstrip("\ufeff")), object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            hint=FILE_HINT,
        ) from None


def _strip_json_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside strings blanked (newlines kept, so positions hold)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if char == '"':
                in_string = False
            i += 1
            continue
        if char == '"':
            in_string = True
            out.append(char)
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:end]))
            i = end
            continue
        out.append(char)
        i += 1
    return "".join(out)


# --- Java properties --------------------------------------------------------------------

_BLANKS: Final = " \t\f"
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class PropertiesEntry:
    key: str
    value: str
    line: int
    """The natural line the entry starts on (1-based)."""


class PropertiesSyntaxError(ValueError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def parse_properties(text: str) -> list[PropertiesEntry]:
    """The entries of a ``java.util.Properties`` file, in order, as ``Properties.load`` reads them.

    Comments are lines whose first non-blank character is ``#`` or ``!``; a key
    ends at the first unescaped ``=``, ``:`` or blank, and one ``=`` or ``:``
    between blanks after it is the separator; a line ending in an odd number of
    backslashes continues on the next (whose leading blanks are dropped);
    ``\\t \\n \\r \\f \\uXXXX`` are escapes and a backslash before any other
    character stands for that character. Raises ``PropertiesSyntaxError`` (with
    the line) for a malformed ``\\uXXXX``.
    """
    entries: list[PropertiesEntry] = []
    for line_no, logical in _logical_lines(text):
        key_end, value_start, has_separator = len(logical), len(logical), False
        backslash = False
        for index, char in enumerate(logical):
            if char in "=:" and not backslash:
                key_end, value_start, has_separator = index, index + 1, True
                break
            if char in _BLANKS and not backslash:
                key_end, value_start = index, index + 1
                break
            backslash = not backslash if char == "\\" else False
        while value_start < len(logical):
            char = logical[value_start]
            if char not in _BLANKS:
                if not has_separator and char in "=:":
                    has_separator = True
                else:
                    break
            value_start += 1
        key = _unescape(logical[:key_end], line_no)
        value = _unescape(logical[value_start:], line_no)
        entries.append(PropertiesEntry(key, value, line_no))
    return entries


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first natural line number, logical line)``: comments and blank lines dropped, continuations joined."""
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines: list[tuple[int, str]] = []
    current: list[str] | None = None
    start = 0
    for number, raw in enumerate(natural, start=1):
        body = raw.lstrip(_BLANKS)
        if current is None:
            if not body or body[0] in "#!":
                continue
            current, start = [], number
        elif not body:
            # An empty line after a continuation ends the logical line.
            lines.append((start, "".join(current)))
            current = None
            continue
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2 == 1:
            current.append(body[:-1])
            continue
        current.append(body)
        lines.append((start, "".join(current)))
        current = None
    if current is not None:
        lines.append((start, "".join(current)))
    return lines


def _unescape(text: str, line: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char != "\\" or i + 1 >= n:
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesSyntaxError(f"malformed \\uxxxx escape {text[i : i + 6]!r}", line)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(following, following))
        i += 2
    joined = "".join(out)
    try:  # \uD83D\uDE00 (a UTF-16 surrogate pair, as Java writes characters outside the BMP) → one character
        return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return joined


def _read_properties(text: str, path: Path, notes: list[str]) -> dict[str, str]:
    """The entries of a properties file by key; a key given twice keeps its last value (and gets a note)."""
    try:
        entries = parse_properties(text)
    except PropertiesSyntaxError as exc:
        raise ConfigError(
            f"config file {path} is not a valid properties file: {exc} at line {exc.line}", hint=FILE_HINT
        ) from None
    mapping: dict[str, str] = {}
    lines: dict[str, int] = {}
    for entry in entries:
        if entry.key in mapping and mapping[entry.key] != entry.value:
            notes.append(
                f"{entry.key} is set twice in config file {path} (lines {lines[entry.key]} and {entry.line}); "
                "the last value counts, as in java.util.Properties"
            )
        mapping[entry.key] = entry.value
        lines[entry.key] = entry.line
    return mapping


# --- a Kafka Connect worker's configuration ---------------------------------------------------


def read_worker_config(path: Path) -> dict[str, str]:
    """A Kafka Connect worker's properties: a ``connect-distributed.properties``/``connect-standalone.properties``
    file, or a Strimzi ``KafkaConnect`` resource (its ``spec.config``, and ``spec.bootstrapServers`` as
    ``bootstrap.servers``); YAML or JSON holding the properties themselves are read too. ``ConfigError`` when the
    file cannot be read or holds no mapping."""
    text = _read_text(path)
    kind = detect_format(path, text)
    notes: list[str] = []
    document: object
    if kind == "properties":
        document = _read_properties(text, path, notes)
    elif kind == "json":
        document = _parse_json(text, path, notes)
    else:
        document = _parse_yaml(text, path)
    if isinstance(document, Mapping) and document.get("kind") == "KafkaConnect":
        spec = document.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        config = spec.get("config")
        document = dict(config) if isinstance(config, Mapping) else {}
        if spec.get("bootstrapServers"):
            document.setdefault("bootstrap.servers", spec["bootstrapServers"])
    if not isinstance(document, Mapping):
        raise ConfigError(
            f"worker configuration {path} must hold the worker's properties (key.converter=…), not a "
            f"{type(document).__name__}",
            hint="give the Kafka Connect worker's .properties file or a Strimzi KafkaConnect resource",
        )
    return {str(key): _worker_text(value) for key, value in document.items() if value is not None}


def _worker_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


# --- envelopes -----------------------------------------------------------------------------


def _unwrap(document: ConfigDocument) -> ConfigDocument:
    """The connector properties inside a REST body or a ``KafkaConnector`` resource; other documents as they are."""
    top = document.properties
    if top.get("kind") == "KafkaConnector" and isinstance(top.get("spec"), Mapping):
        return _unwrap_kafka_connector(document)
    if "config" in top and set(map(str, top)) <= REST_ENVELOPE_KEYS:
        config = top["config"]
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise ConfigError(
                f"config file {document.path}: 'config' must be an object of connector properties "
                f'(a Kafka Connect REST body is {{"name": "…", "config": {{…}}}}), not a {type(config).__name__}',
                hint=FILE_HINT,
            )
        name = _envelope_name(top.get("name"), document.path, "name")
        ignored = {
            key: "part of Kafka Connect's REST answer, not of the connector configuration"
            for key in ("tasks", "type")
            if key in top
        }
        return ConfigDocument(
            document.path,
            document.format,
            config,
            connector_name=name,
            envelope="Kafka Connect REST body",
            ignored=ignored,
            notes=document.notes,
        )
    return document


_KAFKA_CONNECTOR_SPEC: Final = {"class": "connector.class", "tasksMax": "tasks.max"}


def _unwrap_kafka_connector(document: ConfigDocument) -> ConfigDocument:
    top = document.properties
    spec = top["spec"]
    assert isinstance(spec, Mapping)
    config = spec.get("config") or {}
    if not isinstance(config, Mapping):
        raise ConfigError(
            f"config file {document.path}: spec.config of the KafkaConnector must be a mapping of connector "
            f"properties, not a {type(config).__name__}",
            hint=FILE_HINT,
        )
    metadata = top.get("metadata")
    name = _envelope_name(
        metadata.get("name") if isinstance(metadata, Mapping) else None, document.path, "metadata.name"
    )
    extra = {prop: spec[key] for key, prop in _KAFKA_CONNECTOR_SPEC.items() if spec.get(key) is not None}
    ignored = {
        f"spec.{key}": "a Strimzi KafkaConnector setting for the Kafka Connect cluster, not for the connector"
        for key in map(str, spec)
        if key not in (*_KAFKA_CONNECTOR_SPEC, "config")
    }
    return ConfigDocument(
        document.path,
        document.format,
        config,
        connector_name=name,
        envelope="KafkaConnector resource",
        extra=extra,
        ignored=ignored,
        notes=document.notes,
    )


def _envelope_name(value: object, path: Path, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"config file {path}: the connector name ({where}) must be a non-empty string, not {value!r}",
            hint=FILE_HINT,
        )
    return value
