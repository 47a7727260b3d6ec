"""Loading settings from a config file, the environment and command-line flags.

Precedence, highest first: flags (``overrides``) > environment > config file >
defaults. A ``None`` value in any source means "not set here", so an unset
flag never hides the environment or the file. Every problem found — unknown
keys, bad values, conflicting properties — is collected first and reported
in one ``ConfigError``, one line each, so an operator fixes everything at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from mongocdc.config.properties import ENV_PREFIX
from mongocdc.config.settings import (
    KAFKA_PREFIX,
    PROPERTIES,
    Settings,
    config_error,
    consistency_problems,
    describe_invalid,
    did_you_mean,
)
from mongocdc.config.values import InvalidValueError
from mongocdc.errors import ConfigError

CONFIG_FILE_ENV_VAR: Final = "MONGOCDC_CONFIG"
"""Names the config file; read by the CLI's ``--config`` option, not by ``load_settings``."""

NON_SETTING_ENV_VARS: Final = frozenset(
    {
        CONFIG_FILE_ENV_VAR,
        "MONGOCDC_LOG_LEVEL",
        "MONGOCDC_LOG_FORMAT",
        "MONGOCDC_TRACEBACK",
        "MONGOCDC_HOME",
    }
)
"""``MONGOCDC_*`` variables that are not settings: ``load_settings`` ignores them (and every ``MONGOCDC_TEST_*``).

Any new variable the CLI or the test tooling reads goes here, or ``load_settings`` reports it as unknown.
"""

TEST_ENV_PREFIX: Final = "MONGOCDC_TEST_"

_KAFKA_ENV_PREFIX: Final = ENV_PREFIX + "KAFKA_"
_COMMAND_LINE: Final = "the command line"
_FILE_HINT: Final = "Fix the file, or point --config (or MONGOCDC_CONFIG) at another one."


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


def load_settings(config_file: Path | None, env: Mapping[str, str], overrides: Mapping[str, object]) -> Settings:
    """The effective settings: ``overrides`` > ``env`` > ``config_file`` > defaults.

    ``config_file`` is a YAML mapping of property names, flat or nested
    (``mongodb: {connection.string: …}``); ``None`` reads no file (the caller
    resolves ``--config``/``MONGOCDC_CONFIG``). ``env`` is usually
    ``os.environ``: ``MONGOCDC_<NAME>`` variables, dots as underscores.
    ``overrides`` are command-line values by property name.

    Raises ``ConfigError`` listing every problem found.
    """
    problems: list[str] = []
    layers: list[dict[str, _Raw]] = []
    if config_file is not None:
        layers.append(_file_layer(config_file, problems))
    layers.append(_env_layer(env, problems))
    layers.append(_overrides_layer(overrides, problems))

    merged: dict[str, _Raw] = {}
    for layer in layers:
        merged.update((name, raw) for name, raw in layer.items() if raw.value is not None)

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

    kafka_client: dict[str, str] = {}
    for name, raw in merged.items():
        if name in PROPERTIES:
            continue
        text = _kafka_value(raw.value)
        if text is None:
            problems.append(describe_invalid(name, raw.value, "expected a string, number or boolean", raw.origin))
        else:
            kafka_client[name[len(KAFKA_PREFIX) :]] = text

    problems += consistency_problems(values)
    if problems:
        raise config_error(problems)
    attributes: dict[str, Any] = {PROPERTIES[name].attr: value for name, value in values.items()}
    return Settings(**attributes, kafka_client=kafka_client)


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
    """A registered property, or a ``kafka.*`` key passed through to librdkafka."""
    return name in PROPERTIES or (name.startswith(KAFKA_PREFIX) and len(name) > len(KAFKA_PREFIX))


# --- sources ------------------------------------------------------------------


def _file_layer(path: Path, problems: list[str]) -> dict[str, _Raw]:
    document = _read_yaml(path)
    origin = f"config file {path}"
    layer: dict[str, _Raw] = {}
    spelled: dict[str, str] = {}
    for segments, value in _flatten(document, (), path, problems):
        name = ".".join(segments)
        if not is_known_property(name):
            problems.append(f"unknown property {name!r} in {origin}{did_you_mean(name, PROPERTIES)}")
            continue
        if name in layer:
            if layer[name].value != value:
                problems.append(
                    f"{name} is set twice in {origin} with different values, as {spelled[name]} and "
                    f"{_spell(segments)}; keep one"
                )
            continue
        layer[name] = _Raw(value, origin)
        spelled[name] = _spell(segments)
    return layer


def _env_layer(env: Mapping[str, str], problems: list[str]) -> dict[str, _Raw]:
    layer: dict[str, _Raw] = {}
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or var in NON_SETTING_ENV_VARS or var.startswith(TEST_ENV_PREFIX):
            continue
        name = ENV_VARS.get(var)
        if name is None and var.startswith(_KAFKA_ENV_PREFIX) and len(var) > len(_KAFKA_ENV_PREFIX):
            name = KAFKA_PREFIX + var[len(_KAFKA_ENV_PREFIX) :].lower().replace("_", ".")
        if name is None:
            known = [*ENV_VARS, *sorted(NON_SETTING_ENV_VARS)]
            problems.append(
                f"environment variable {var} is not a mongocdc setting{did_you_mean(var, known)}"
                " (MONGOCDC_KAFKA_* variables go to librdkafka)"
            )
            continue
        layer[name] = _Raw(env[var], f"environment variable {var}")
    return layer


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


# --- the YAML file --------------------------------------------------------------


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


def _read_yaml(path: Path) -> Mapping[object, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist", hint=_FILE_HINT) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text: {exc}", hint=_FILE_HINT) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}", hint=_FILE_HINT) from None
    loader = _StrictLoader(text)
    try:
        document = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"config file {path} is not valid YAML: {_describe_yaml_error(exc)}", hint=_FILE_HINT
        ) from None
    finally:
        loader.dispose()
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise ConfigError(
            f"config file {path} must hold a mapping of property names to values "
            f"(such as `topic.prefix: inventory`), not a {type(document).__name__}",
            hint=_FILE_HINT,
        )
    return document


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
        if isinstance(value, Mapping):
            yield from _flatten(value, segments, path, problems)
        else:
            yield segments, value


def _spell(segments: tuple[str, ...]) -> str:
    """How a flattened key was written: ``mongodb: {connection.string: …}``."""
    text = "…"
    for segment in reversed(segments):
        text = f"{segment}: {text}" if text == "…" else f"{segment}: {{{text}}}"
    return f"`{text}`"
