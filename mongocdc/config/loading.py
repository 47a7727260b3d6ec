"""Loading settings from a config file, the environment and command-line flags.

Precedence, highest first: flags (``overrides``) > environment > config file > defaults. A ``None`` value in
any source means "not set here", so an unset flag never hides the environment or the file. Every problem found —
unknown keys, bad values, conflicting properties — is collected first and reported in one ``ConfigError``, one
line each, so an operator fixes everything at once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mongocdc.config import compat, librdkafka, providers
from mongocdc.config.formats import FILE_HINT, read_config_file, read_worker_config
from mongocdc.config.problems import config_error, consistency_problems, describe_invalid
from mongocdc.config.properties import ENV_PREFIX, env_var_for
from mongocdc.config.provenance import Provenance
from mongocdc.config.queries import (
    FILTER_OVERRIDE_PREFIX,
    filter_override_list_problems,
    filter_override_problem,
    filter_text,
    is_filter_override_key,
)
from mongocdc.config.records import is_record_key
from mongocdc.config.settings import CLIENT_PREFIXES, KAFKA_PREFIX, PROPERTIES, Settings, client_prefix
from mongocdc.config.suggestions import did_you_mean
from mongocdc.config.topic_creation import PREFIX as TOPIC_CREATION_PREFIX
from mongocdc.config.topic_creation import is_topic_creation_key
from mongocdc.config.values import InvalidValueError
from mongocdc.errors import ConfigError

CONFIG_FILE_ENV_VAR: Final = "MONGOCDC_CONFIG"
"""Names the config file; read by the CLI's ``--config`` option, not by ``load_settings``."""

NON_SETTING_ENV_VARS: Final = frozenset(
    {CONFIG_FILE_ENV_VAR, "MONGOCDC_LOG_LEVEL", "MONGOCDC_LOG_FORMAT", "MONGOCDC_TRACEBACK"}
)
"""``MONGOCDC_*`` variables that are not settings: ``load_settings`` ignores them (and every ``MONGOCDC_TEST_*``).

Any new variable the CLI or the test tooling reads goes here, or ``load_settings`` reports it as unknown.
"""

TEST_ENV_PREFIX: Final = "MONGOCDC_TEST_"

_CLIENT_ENV_PREFIXES: Final = tuple((env_var_for(prefix.rstrip(".")) + "_", prefix) for prefix in CLIENT_PREFIXES)
_TOPIC_CREATION_ENV_PREFIX: Final = env_var_for(TOPIC_CREATION_PREFIX.rstrip(".")) + "_"
"""``MONGOCDC_KAFKA_`` → ``kafka.``, ``MONGOCDC_SRC_KAFKA_`` → ``src.kafka.``, and so on."""
_FILTER_LIST: Final = FILTER_OVERRIDE_PREFIX.rstrip(".")
_FILTER_ENV_PREFIX: Final = env_var_for(_FILTER_LIST) + "_"
_COMMAND_LINE: Final = "the command line"
_FILE_HINT: Final = FILE_HINT

log = logging.getLogger("mongocdc.config")


def _env_vars() -> Mapping[str, str]:
    by_env: dict[str, str] = {}
    for name, prop in PROPERTIES.items():
        if prop.env_var in by_env:
            raise RuntimeError(f"{name} and {by_env[prop.env_var]} share the environment variable {prop.env_var}")
        by_env[prop.env_var] = name
    return by_env


ENV_VARS: Final[Mapping[str, str]] = _env_vars()
"""Property name by environment variable (``MONGOCDC_TOPIC_PREFIX`` → ``topic.prefix``)."""


@dataclass(frozen=True)
class _Raw:
    """A value as a source gave it, and where it came from (for error messages)."""

    value: object
    origin: str


def load_settings(
    config_file: Path | None,
    env: Mapping[str, str],
    overrides: Mapping[str, object],
    *,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """The effective settings: ``overrides`` > ``env`` > ``config_file`` > defaults.

    ``config_file`` is a mapping of property names in YAML (flat or nested:
    ``mongodb: {connection.string: …}``), JSON (also a Kafka Connect REST body
    ``{"name": …, "config": {…}}``) or a Java ``.properties`` file (see
    ``formats.read_config_file``); its ``${file:…}``, ``${directory:…}`` and
    ``${env:…}`` config provider references are resolved (``providers``, with
    ``env`` for ``${env:…}``), Kafka Connect's and Debezium's own keys in it
    are mapped, checked or ignored as ``compat.translate`` says, and the keys
    ignored with an effect are logged in one warning. ``None`` reads no file (the
    caller resolves ``--config``/``MONGOCDC_CONFIG``). ``env`` is usually
    ``os.environ``: ``MONGOCDC_<NAME>`` variables, dots as underscores.
    ``overrides`` are command-line values by property name, and ``flags`` the
    option that gave each (``Settings.provenance`` names it; ``"flag"`` alone
    without one).

    ``snapshot.collection.filter.overrides.<database>.<collection>`` keys are
    accepted from every source; their value is a query document as JSON text
    (in the file also a YAML mapping). Their environment variable is the key's
    (``MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_INVENTORY_ORDERS``), matched
    against the collections listed in ``snapshot.collection.filter.overrides``.

    Raises ``ConfigError`` listing every problem found.
    """
    problems: list[str] = []
    report = FileReport()
    merged, env_layer = _merged_layers(config_file, env, overrides, problems, report)
    provenance = _provenance(config_file, env_layer, overrides, merged, flags or {})
    values = _property_values(merged, problems)
    other = _other_keys(merged, problems)
    worker_converters = _worker_converters(values, merged, provenance, problems)
    problems += consistency_problems(values)
    problems += _filter_list_problems(values, merged)
    if problems:
        raise config_error(problems)
    attributes: dict[str, Any] = {PROPERTIES[name].attr: value for name, value in values.items()}
    attributes.update(other.clients)
    settings = Settings(
        **attributes,
        snapshot_filter_overrides=other.filters,
        topic_creation=other.creation,
        connect_records=other.records,
        worker_converters=worker_converters,
        ignored=report.ignored,
        provenance=provenance,
    )
    report.log()
    return settings


def _merged_layers(
    config_file: Path | None,
    env: Mapping[str, str],
    overrides: Mapping[str, object],
    problems: list[str],
    report: FileReport,
) -> tuple[dict[str, _Raw], dict[str, _Raw]]:
    """Every source's values merged, the later layer winning and ``None`` meaning "not set here"; and the
    environment's layer (with the filter override variables resolved) on its own."""
    layers: list[dict[str, _Raw]] = []
    if config_file is not None:
        layers.append(_file_layer(config_file, problems, report, env))
    env_layer, filter_vars = _env_layer(env, problems)
    layers.append(env_layer)
    layers.append(_overrides_layer(overrides, problems))
    env_layer.update(_resolve_filter_vars(filter_vars, env, layers, problems))

    merged: dict[str, _Raw] = {}
    for layer in layers:
        merged.update((name, raw) for name, raw in layer.items() if raw.value is not None)
    return merged, env_layer


def _property_values(merged: Mapping[str, _Raw], problems: list[str]) -> dict[str, object]:
    """Every property's parsed value, its default when no source set it; one problem per invalid value."""
    values: dict[str, object] = {}
    for name, prop in PROPERTIES.items():
        raw = merged.get(name)
        if raw is None:
            values[name] = prop.default
            continue
        try:
            values[name] = prop.parse(raw.value)
        except InvalidValueError as exc:
            problems.append(describe_invalid(name, raw.value, str(exc), raw.origin, secret=prop.secret))
    return values


@dataclass
class _OtherKeys:
    """The keys that are no property: Kafka client keys by ``Settings`` attribute, snapshot filter overrides by
    ``<database>.<collection>``, topic creation keys without their prefix, and converter and transform keys."""

    clients: dict[str, dict[str, str]] = field(default_factory=lambda: {attr: {} for attr in CLIENT_PREFIXES.values()})
    filters: dict[str, str] = field(default_factory=dict)
    creation: dict[str, str] = field(default_factory=dict)
    records: dict[str, str] = field(default_factory=dict)


def _other_keys(merged: Mapping[str, _Raw], problems: list[str]) -> _OtherKeys:
    """The merged keys that are no property, sorted by kind; one problem per invalid value."""
    other = _OtherKeys()
    for name, raw in merged.items():
        if name in PROPERTIES:
            continue
        if is_filter_override_key(name):
            problem = filter_override_problem(name, raw.value, raw.origin)
            if problem:
                problems.append(problem)
            else:
                other.filters[name[len(FILTER_OVERRIDE_PREFIX) :]] = filter_text(raw.value)
            continue
        text = _kafka_value(raw.value)
        if text is None:
            problems.append(describe_invalid(name, raw.value, "expected a string, number or boolean", raw.origin))
        elif is_topic_creation_key(name):  # Kafka Connect's, not librdkafka's: checked by Settings
            other.creation[name[len(TOPIC_CREATION_PREFIX) :]] = text
        elif is_record_key(name):  # converters and transforms: checked by Settings
            other.records[name] = text
        else:
            prefix = client_prefix(name) or KAFKA_PREFIX
            key = name[len(prefix) :]
            check_librdkafka_key(prefix, key, raw.origin)
            other.clients[CLIENT_PREFIXES[prefix]][key] = text
    return other


def _filter_list_problems(values: Mapping[str, object], merged: Mapping[str, _Raw]) -> list[str]:
    """The mismatches between ``snapshot.collection.filter.overrides`` and the override keys given."""
    listed = values.get(_FILTER_LIST)
    if not isinstance(listed, tuple):
        return []
    keyed = {name[len(FILTER_OVERRIDE_PREFIX) :] for name in merged if is_filter_override_key(name)}
    return filter_override_list_problems(listed, keyed)


_WORKER_CONVERTER_KEYS: Final = ("key.converter", "value.converter", "header.converter")


def _worker_converters(
    values: dict[str, object], merged: Mapping[str, _Raw], provenance: dict[str, Provenance], problems: list[str]
) -> dict[str, str]:
    """The converter keys of the Kafka Connect worker's properties (``worker.config``); its ``bootstrap.servers``
    becomes ``kafka.bootstrap.servers`` when no source set that."""
    path = values.get("worker.config")
    if not path:
        return {}
    try:
        worker = read_worker_config(Path(str(path)))
    except ConfigError as exc:
        problems.append(f"worker.config: {exc}")
        return {}
    servers = worker.get("bootstrap.servers")
    if servers and "kafka.bootstrap.servers" not in merged:
        values["kafka.bootstrap.servers"] = servers
        provenance["kafka.bootstrap.servers"] = Provenance("file", f"{path} (the worker's bootstrap.servers)")
    return {
        key: value
        for key, value in worker.items()
        if key in _WORKER_CONVERTER_KEYS or key.startswith(tuple(f"{k}." for k in _WORKER_CONVERTER_KEYS))
        if not key.endswith(".plugin.version")
    }


def _provenance(
    config_file: Path | None,
    env_layer: Mapping[str, _Raw],
    overrides: Mapping[str, object],
    merged: Mapping[str, _Raw],
    flags: Mapping[str, str],
) -> dict[str, Provenance]:
    """Where each set value came from: the highest source that set it (unset ones are ``DEFAULT``)."""
    provenance: dict[str, Provenance] = {}
    for name in merged:
        if overrides.get(name) is not None:
            provenance[name] = Provenance("flag", flags.get(name))
        elif name in env_layer and env_layer[name].value is not None:
            provenance[name] = Provenance("env", env_var_for(name))
        else:
            provenance[name] = Provenance("file", str(config_file))
    return provenance


def parse_offsets_spec(spec: str) -> dict[str, str]:
    """Properties for ``--offsets sqlite:PATH`` or ``--offsets kafka:TOPIC``.

    ``sqlite:/var/lib/mongocdc/offsets.db`` → ``offset.storage=sqlite`` and
    ``offset.storage.file.filename``; ``kafka:cdc-offsets`` →
    ``offset.storage=kafka`` and ``offset.storage.topic``.
    """
    kind, colon, where = spec.partition(":")
    kind, where = kind.strip().lower(), where.strip()
    if colon and where and kind == "sqlite":
        return {"offset.storage": "sqlite", "offset.storage.file.filename": where}
    if colon and where and kind == "kafka":
        return {"offset.storage": "kafka", "offset.storage.topic": where}
    raise ConfigError(
        f"--offsets {spec!r} is not valid: expected sqlite:PATH or kafka:TOPIC",
        hint="For example --offsets sqlite:/var/lib/mongocdc/offsets.db or --offsets kafka:mongocdc-offsets.",
    )


def is_known_property(name: str) -> bool:
    """A registered property, a ``kafka.*`` key passed through to librdkafka, a snapshot filter key or a
    ``topic.creation.*`` key."""
    return (
        name in PROPERTIES
        or client_prefix(name) is not None
        or is_filter_override_key(name)
        or is_topic_creation_key(name)
        or is_record_key(name)
    )


# --- sources ------------------------------------------------------------------


@dataclass
class FileReport:
    """What a config file holds besides settings: keys accepted without effect, and notes."""

    origin: str = ""
    ignored: dict[str, str] = field(default_factory=dict)
    """Key → why it has no effect in mongocdc (reported in one warning)."""
    notes: list[str] = field(default_factory=list)

    def log(self) -> None:
        """One warning naming every ignored key (keys with the same reason on one line), one per note."""
        for note in self.notes:
            log.warning("%s", note)
        if not self.ignored:
            return
        by_reason: dict[str, list[str]] = {}
        for key, reason in self.ignored.items():
            by_reason.setdefault(reason, []).append(key)
        lines = [f"  - {', '.join(keys)}: {reason}" for reason, keys in by_reason.items()]
        count = len(self.ignored)
        log.warning(
            "%s: %d Kafka Connect/Debezium %s no effect in mongocdc and %s ignored:\n%s",
            self.origin,
            count,
            "key has" if count == 1 else "keys have",
            "is" if count == 1 else "are",
            "\n".join(lines),
        )


def _file_layer(path: Path, problems: list[str], report: FileReport, env: Mapping[str, str]) -> dict[str, _Raw]:
    document = read_config_file(path)
    origin = document.origin
    report.origin = origin
    report.notes.extend(document.notes)
    flat: dict[str, object] = {}
    spelled: dict[str, str] = {}
    for segments, value in _flatten(document.properties, (), path, problems):
        name = ".".join(segments)
        if name in flat:
            if flat[name] != value:
                problems.append(
                    f"{name} is set twice in {origin} with different values, as {spelled[name]} and "
                    f"{_spell(segments)}; keep one"
                )
            continue
        flat[name] = value
        spelled[name] = _spell(segments)
    for name, value in document.extra.items():  # a KafkaConnector's spec.class and spec.tasksMax
        if name in flat and flat[name] != value:
            problems.append(f"{name} is set in {origin} both in spec.config ({flat[name]!r}) and in spec ({value!r})")
        flat.setdefault(name, value)
    aliases = providers.provider_aliases(flat, problems, origin)
    flat = {
        name: providers.resolve(name, value, aliases, env, origin, problems)
        for name, value in flat.items()
        if not providers.is_provider_key(name)
    }
    translation = compat.translate(flat, origin, is_property=[name for name in flat if is_known_property(name)])
    problems.extend(translation.problems)
    report.ignored.update(document.ignored)
    report.ignored.update(translation.ignored)
    candidates = [*PROPERTIES, *compat.known_names()]
    base = Path(os.path.abspath(path)).parent
    log.debug("read %s (a relative path in it is relative to %s)", origin, base)
    layer: dict[str, _Raw] = {}
    for name, value in translation.values.items():
        if not is_known_property(name):
            problems.append(f"unknown property {name!r} in {origin}{did_you_mean(name, candidates)}")
            continue
        mapped_from = translation.spelled.get(name)
        layer[name] = _Raw(
            _from_file_directory(name, value, base), f"{origin} ({mapped_from})" if mapped_from else origin
        )
    if document.connector_name is not None:
        where = "metadata.name" if document.envelope == "KafkaConnector resource" else "name"
        inner = layer.get("name")
        if inner is None or inner.value is None:
            layer["name"] = _Raw(document.connector_name, f"{origin} (the connector's {where})")
        elif inner.value != document.connector_name:
            report.notes.append(
                f"{origin}: the connector is named {document.connector_name!r} ({where}) but its config sets name "
                f"{inner.value!r}; mongocdc uses {inner.value!r} (Kafka Connect would refuse the mismatch)"
            )
    return layer


def is_path_property(name: str) -> bool:
    """Whether ``name``'s value is a file path: a property declared with ``path=True`` or a librdkafka path."""
    prop = PROPERTIES.get(name)
    if prop is not None:
        return prop.path
    prefix = client_prefix(name)
    return prefix is not None and name[len(prefix) :] in librdkafka.PATH_PROPERTIES


_NOT_PATHS: Final = frozenset({":memory:", "probe"})
"""Values of path properties that are no file: SQLite's in-memory database, librdkafka's ``ssl.ca.location=probe``."""


def _from_file_directory(name: str, value: object, base: Path) -> object:
    """A config file's relative file path made relative to the file's directory (``base``), as an absolute path.

    So a configuration file means the same files whatever the working directory of the command that
    reads it (``offsets show`` run elsewhere reads the connector's store, and creates none). A path given on
    the command line or in an environment variable stays relative to the working directory, as the
    shell's own paths are. Kafka Connect's ``${file:…}`` references are read as Kafka's providers read
    them, relative to the working directory.
    """
    if not isinstance(value, str) or not value.strip() or value in _NOT_PATHS or not is_path_property(name):
        return value
    given = Path(value)
    return value if given.is_absolute() else str(base / given)


def _env_layer(env: Mapping[str, str], problems: list[str]) -> tuple[dict[str, _Raw], list[str]]:
    """The settings from ``env``, and the snapshot filter variables (resolved once the collection list is known)."""
    layer: dict[str, _Raw] = {}
    filter_vars: list[str] = []
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or var in NON_SETTING_ENV_VARS or var.startswith(TEST_ENV_PREFIX):
            continue
        name = ENV_VARS.get(var)
        if name is None and var.startswith(_FILTER_ENV_PREFIX) and len(var) > len(_FILTER_ENV_PREFIX):
            filter_vars.append(var)
            continue
        if name is None and var.startswith(_TOPIC_CREATION_ENV_PREFIX) and len(var) > len(_TOPIC_CREATION_ENV_PREFIX):
            name = TOPIC_CREATION_PREFIX + var[len(_TOPIC_CREATION_ENV_PREFIX) :].lower().replace("_", ".")
        if name is None:
            for env_prefix, prefix in _CLIENT_ENV_PREFIXES:
                if var.startswith(env_prefix) and len(var) > len(env_prefix):
                    name = prefix + var[len(env_prefix) :].lower().replace("_", ".")
                    break
        if name is None:
            _warn_unknown_env(var)
            continue
        layer[name] = _Raw(env[var], f"environment variable {var}")
    return layer, filter_vars


_WARNED_ENV: set[str] = set()
"""Unknown ``MONGOCDC_*`` variables already warned about in this process."""


def _warn_unknown_env(var: str) -> None:
    """A ``MONGOCDC_*`` variable that is no setting: ignored, with one warning per process.

    Not an error: Kubernetes injects ``<SERVICE>_SERVICE_HOST``, ``<SERVICE>_PORT``, … into every
    pod of a namespace with a Service named ``mongocdc``, and a misspelt setting is named with its
    closest match, so the fix is one look away.
    """
    if var in _WARNED_ENV:
        return
    _WARNED_ENV.add(var)
    known = [*ENV_VARS, *sorted(NON_SETTING_ENV_VARS)]
    log.warning(
        "environment variable %s is not a mongocdc setting and is ignored%s"
        " (MONGOCDC_KAFKA_*, MONGOCDC_SRC_KAFKA_* and MONGOCDC_DEST_KAFKA_* variables go to librdkafka)",
        var,
        did_you_mean(var, known),
    )


_WARNED_CLIENT_KEYS: set[str] = set()
"""Unknown ``kafka.*`` keys already warned about in this process."""


def check_librdkafka_key(prefix: str, key: str, origin: str) -> None:
    """Warn once when ``key`` (given as ``prefix + key`` by ``origin``) is no property of librdkafka,
    naming the closest property.

    Not an error here, as a Kafka client's configuration that holds a key it does not know is no error
    for Kafka's Java clients (Debezium's): commands that make no Kafka client still run. The key is
    passed on as given, because the list is the one of the librdkafka mongocdc was released with, and a
    newer one may know it; a librdkafka that does not refuses it when the client is made (exit 3).
    """
    name = prefix + key
    if key in librdkafka.PROPERTIES or name in _WARNED_CLIENT_KEYS:
        return
    _WARNED_CLIENT_KEYS.add(name)
    log.warning(
        "%s (%s) is not a librdkafka %s configuration property%s It is passed on as given: a Kafka client "
        "refuses a property its librdkafka does not know (see librdkafka's CONFIGURATION.md)",
        name,
        origin,
        librdkafka.VERSION,
        did_you_mean(name, sorted(prefix + known for known in librdkafka.PROPERTIES)) or ".",
    )


def _resolve_filter_vars(
    filter_vars: list[str], env: Mapping[str, str], layers: list[dict[str, _Raw]], problems: list[str]
) -> dict[str, _Raw]:
    """Filter keys set by ``MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_<DB>_<COLL>`` variables.

    Database and collection names may hold ``_`` (and any case), so a variable
    is matched against the variables of the collections listed in
    ``snapshot.collection.filter.overrides`` (from any source), not split.
    """
    if not filter_vars:
        return {}
    raw_list: object = PROPERTIES[_FILTER_LIST].default
    for layer in layers:
        raw = layer.get(_FILTER_LIST)
        if raw is not None and raw.value is not None:
            raw_list = raw.value
    try:
        listed = PROPERTIES[_FILTER_LIST].parse(raw_list)
    except InvalidValueError:
        return {}  # the list's own problem is reported; guessing namespaces would only add noise
    if not isinstance(listed, tuple):
        return {}
    by_var: dict[str, list[str]] = {}
    for namespace in listed:
        by_var.setdefault(env_var_for(FILTER_OVERRIDE_PREFIX + str(namespace)), []).append(str(namespace))
    resolved: dict[str, _Raw] = {}
    for var in filter_vars:
        matches = by_var.get(var, [])
        if len(matches) == 1:
            resolved[FILTER_OVERRIDE_PREFIX + matches[0]] = _Raw(env[var], f"environment variable {var}")
        elif matches:
            problems.append(
                f"environment variable {var} matches several collections listed in {_FILTER_LIST} "
                f"({', '.join(matches)}); set their filters in the config file or with flags instead"
            )
        else:
            problems.append(
                f"environment variable {var} sets a snapshot filter for a collection not listed in {_FILTER_LIST}; "
                f"list the collection there (the variable is {_FILTER_ENV_PREFIX}<DATABASE>_<COLLECTION>, "
                "dots as underscores, upper case)"
            )
    return resolved


def _overrides_layer(overrides: Mapping[str, object], problems: list[str]) -> dict[str, _Raw]:
    layer: dict[str, _Raw] = {}
    for name, value in overrides.items():
        if not is_known_property(name):
            problems.append(f"unknown property {name!r} from {_COMMAND_LINE}{did_you_mean(name, PROPERTIES)}")
            continue
        layer[name] = _Raw(value, _COMMAND_LINE)
    return layer


def _kafka_value(value: object) -> str | None:
    """A librdkafka property value (always a string), or ``None`` when ``value`` cannot be one."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


# --- the file's keys --------------------------------------------------------------


def _flatten(
    mapping: Mapping[object, object], parents: tuple[str, ...], path: Path, problems: list[str]
) -> Iterator[tuple[tuple[str, ...], object]]:
    """``(key segments, value)`` for every leaf; nested mappings join their keys with dots."""
    for key, value in mapping.items():
        if not isinstance(key, str):
            where = f" under {'.'.join(parents)!r}" if parents else ""
            problems.append(f"config file {path}: key {key!r}{where} is not a property name (a string)")
            continue
        segments = (*parents, key)
        if isinstance(value, Mapping) and not _is_filter_document(segments):
            yield from _flatten(value, segments, path, problems)
        else:
            yield segments, value


def _is_filter_document(segments: tuple[str, ...]) -> bool:
    """Whether a mapping under these keys is a snapshot filter's query document (kept whole, not flattened).

    That is when the key names a collection: ``snapshot.collection.filter.overrides.<database>.<collection>``.
    """
    name = ".".join(segments)
    if not is_filter_override_key(name):
        return False
    database, dot, collection = name[len(FILTER_OVERRIDE_PREFIX) :].partition(".")
    return bool(database and dot and collection)


def _spell(segments: tuple[str, ...]) -> str:
    """How a flattened key was written: ``mongodb: {connection.string: …}``."""
    text = "…"
    for segment in reversed(segments):
        text = f"{segment}: {text}" if text == "…" else f"{segment}: {{{text}}}"
    return f"`{text}`"
