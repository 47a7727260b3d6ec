"""The configuration reference of the README, rendered from the property registry."""

from __future__ import annotations

from mongocdc.config.queries import FILTER_OVERRIDE_PREFIX
from mongocdc.config.settings import KAFKA_PREFIX, PROPERTIES
from mongocdc.config.values import ChoiceType


def render_reference_markdown() -> str:
    """A Markdown table of every property: name, default and description, in declaration order.

    Choices are listed for enumerated properties; the environment variable of
    each property is ``MONGOCDC_`` plus the name in upper case with dots as
    underscores. A row after ``snapshot.collection.filter.overrides`` documents
    its per-collection keys; the last row documents the ``kafka.*`` pass-through.
    """
    rows = ["| Property | Default | Description |", "|---|---|---|"]
    for prop in PROPERTIES.values():
        description = prop.doc
        if isinstance(prop.value_type, ChoiceType):
            choices = ", ".join(f"`{c}`" for c in prop.value_type.choices)
            aliases = "".join(f" (`{old}` = `{new}`)" for old, new in prop.value_type.aliases.items())
            description += f" One of {choices}{aliases}."
        if prop.path:
            description += " A relative path in a config file is relative to the file's directory."
        rows.append(f"| `{prop.name}` | {_default(prop.render(prop.default))} | {_cell(description)} |")
        if prop.name == FILTER_OVERRIDE_PREFIX.rstrip("."):
            rows.append(
                f"| `{FILTER_OVERRIDE_PREFIX}<database>.<collection>` | — | "
                + _cell(
                    "The query document (relaxed extended JSON text, or a YAML mapping in the config file) that "
                    "selects the documents a snapshot of a listed collection reads, e.g. "
                    '`{"status": "open", "_id": {"$gt": {"$oid": "…"}}}`; its environment variable is the key in '
                    "upper case with dots as underscores."
                )
                + " |"
            )
    rows.append(
        "| `topic.creation.*` | — | "
        + _cell(
            "Kafka Connect's topic creation (KIP-158): with `topic.creation.default.replication.factor` and "
            "`topic.creation.default.partitions` set (-1: the broker's default), a change event, heartbeat or "
            "transaction topic that does not exist is created through the admin client before the first record to "
            "it; any other `topic.creation.default.<config>` (`cleanup.policy`, `compression.type`, …) is a config of "
            "the new topic. `topic.creation.groups` names further groups, each with `include`/`exclude` regular "
            "expressions over the whole topic name (exclusion first; the first listed group that matches wins, else "
            "`default`), its own configs, and `replication.factor`/`partitions` defaulting to the default group's. "
            "An existing topic is used as it is; `topic.creation.enable=false` turns it off. Without these keys a "
            "missing topic is left to the broker's auto-creation; when the broker has "
            "`auto.create.topics.enable=false`, exit 3 names the missing topics at start (every captured "
            "collection's, the heartbeat and transaction topics) or a later collection's at its first record."
        )
        + " |"
    )
    rows.append(
        f"| `{KAFKA_PREFIX}*` | | "
        + _cell(
            "Any other librdkafka producer property, passed through without the `kafka.` prefix "
            "(`kafka.security.protocol`, `kafka.sasl.mechanisms`, `kafka.sasl.username`, `kafka.sasl.password`, …). "
            "A key librdkafka does not know is a warning with the closest property; a relative file path "
            "(`kafka.ssl.ca.location`, …) in a config file is relative to the file's directory."
        )
        + " |"
    )
    return "\n".join(rows) + "\n"


def render_compat_markdown() -> str:
    """A Markdown table of the Kafka Connect and Debezium keys a pasted connector configuration may hold.

    Every Debezium 3.6.1 MongoDB connector property mongocdc does not implement
    under its own name, and every Kafka Connect connector key: mapped to a
    mongocdc property, accepted with the listed value(s) only, or ignored (the
    reason; a warning names the ignored keys whose value would make a difference).
    """
    from mongocdc.config.compat import CONNECT, CONNECT_PREFIXES, DEBEZIUM, DEBEZIUM_PREFIXES, Compat

    rows = [
        "Kafka Connect's keys and the Debezium properties mongocdc has no property of its own for, as they may "
        "appear in a connector configuration (`.json`, `.properties` or YAML):",
        "",
        "| Key | mongocdc | Why |",
        "|---|---|---|",
    ]

    def row(key: str, compat: Compat) -> None:
        if compat.status == "implemented":
            return
        if compat.status == "mapped":
            treatment = "mapped"
        elif compat.status == "checked":
            treatment = "accepted as " + " or ".join(f"`{value}`" for value in compat.accepted)
        else:
            treatment = "ignored"
        rows.append(f"| `{key}` | {treatment} | {_cell(compat.note)} |")

    for table, prefixes in ((CONNECT, CONNECT_PREFIXES), (DEBEZIUM, DEBEZIUM_PREFIXES)):
        for key, compat in table.items():
            row(key, compat)
        for prefix, compat in prefixes.items():
            row(prefix + "*", compat)
    return "\n".join(rows) + "\n"


def _default(value: object) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
