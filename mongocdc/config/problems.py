"""Configuration problems: one line each, naming the key, the value and what is accepted, aggregated
into one ``ConfigError`` so a user sees every problem at once.

``value_problem`` checks one property's value, ``consistency_problems`` the rules that involve
several properties; ``config_error`` lists them all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mongocdc.config.properties import Property, database_name_problem, namespace_problem
from mongocdc.config.redaction import redact_value
from mongocdc.config.values import InvalidValueError
from mongocdc.errors import ConfigError


def value_problem(prop: Property, value: object, origin: str | None = None) -> str | None:
    """Why ``value`` is not acceptable for ``prop`` (naming key, value and what is accepted), or ``None``."""
    if value is None and prop.default is None:
        return None
    try:
        prop.parse(value)
    except InvalidValueError as exc:
        return describe_invalid(prop.name, value, str(exc), origin, secret=prop.secret)
    return None


def describe_invalid(name: str, value: object, reason: str, origin: str | None, *, secret: bool = False) -> str:
    """``name: invalid value 'v' from <origin>: <reason>`` with the value redacted when it is a secret."""
    shown = redact_value(name, value, secret=secret)
    source = f" from {origin}" if origin else ""
    # a string quoted; a list, mapping, number or boolean as YAML/JSON writes it ([1, 2], true), not Python's repr
    text = repr(shown) if isinstance(shown, str) else json.dumps(shown, default=str, ensure_ascii=False)
    return f"{name}: invalid value {text}{source}: {reason}"


def consistency_problems(values: Mapping[str, object]) -> list[str]:
    """Rules that involve several properties. ``values`` holds the properties known to be valid, by name.

    A rule whose properties are not all in ``values`` is skipped, so one bad
    value does not cause a second, misleading message.
    """
    problems: list[str] = []
    for kind in ("database", "collection"):
        include, exclude = f"{kind}.include.list", f"{kind}.exclude.list"
        if values.get(include) and values.get(exclude):
            problems.append(
                f"{include} and {exclude} are both set; they are mutually exclusive (as in Debezium): keep one"
            )
    if "capture.scope" in values and "capture.target" in values:
        problem = _capture_target_problem(values["capture.scope"], values["capture.target"])
        if problem:
            problems.append(problem)
    channels, sink_topic = "notification.enabled.channels", "notification.sink.topic.name"
    if "sink" in _as_tuple(values.get(channels)) and values.get(sink_topic) is None:
        problems.append(
            f"{sink_topic} is required when {channels} includes sink: set it to the Kafka topic that receives the "
            f"notifications (for example {sink_topic}: inventory.notifications), or remove sink from {channels}"
        )
    queue, batch = values.get("max.queue.size"), values.get("max.batch.size")
    if isinstance(queue, int) and isinstance(batch, int) and queue <= batch:
        problems.append(
            f"max.queue.size ({queue}) must be larger than max.batch.size ({batch}), as in Debezium: raise it, "
            "or lower max.batch.size"
        )
    if values.get("mongodb.password") is not None and values.get("mongodb.user") is None and "mongodb.user" in values:
        problems.append(
            "mongodb.password is set but mongodb.user is not: set the user the password belongs to (or put both in "
            "mongodb.connection.string)"
        )
    if values.get("exactly.once.support") == "required" and values.get("offset.storage") == "sqlite":
        problems.append(
            "exactly.once.support is required but offset.storage is sqlite: exactly-once delivery writes each offset "
            "in the same Kafka transaction as the change events it covers, and a SQLite file cannot take part in a "
            "Kafka transaction; set offset.storage: kafka (--offsets kafka:TOPIC), or set exactly.once.support to "
            "requested (at least once with SQLite) or disabled"
        )
    initial, maximum = "connect.backoff.initial.delay.ms", "connect.backoff.max.delay.ms"
    first, most = values.get(initial), values.get(maximum)
    if isinstance(first, int) and isinstance(most, int) and most < first:
        problems.append(f"{maximum} ({most}) is smaller than {initial} ({first}); it must be at least as large")
    return problems


def _as_tuple(value: object) -> tuple[object, ...]:
    return value if isinstance(value, tuple) else ()


def _capture_target_problem(scope: object, target: object) -> str | None:
    if scope == "deployment":
        if target is None:
            return None
        return (
            f"capture.target is set to {target!r} but capture.scope is deployment, which captures every database; "
            "set capture.scope to database or collection, or remove capture.target"
        )
    example = "inventory" if scope == "database" else "inventory.orders"
    what = "database" if scope == "database" else "<database>.<collection>"
    if target is None:
        return (
            f"capture.target is required when capture.scope is {scope}: set it to the {what} to capture "
            f"(for example capture.target: {example})"
        )
    text = str(target)
    reason = database_name_problem(text) if scope == "database" else namespace_problem(text)
    if reason is None:
        return None
    return f"capture.target: invalid value {text!r} for capture.scope {scope}: {reason} (for example {example})"


def config_error(problems: list[str]) -> ConfigError:
    """One ``ConfigError`` listing every problem on its own line."""
    hint = (
        "Each problem names the property and where its value came from (config file, MONGOCDC_* variable or "
        "flag); fix them all, then check with `mongocdc config validate`."
    )
    if len(problems) == 1:
        return ConfigError(f"invalid configuration: {problems[0]}", hint=hint)
    listed = "\n".join(f"  - {problem}" for problem in problems)
    return ConfigError(f"invalid configuration ({len(problems)} problems):\n{listed}", hint=hint)
