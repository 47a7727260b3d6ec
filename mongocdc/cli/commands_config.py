"""``mongocdc config validate|show``."""

from __future__ import annotations

import sys
from typing import Final

import typer

from mongocdc.cli import render
from mongocdc.cli.options import CONNECTOR_FLAGS, OutputOpt, examples, settings_flags
from mongocdc.cli.state import Output, state
from mongocdc.config import PROPERTIES

config_app = typer.Typer(
    help="Check and show the effective configuration.",
    no_args_is_help=True,
    epilog=examples("mongocdc config validate -c connector.yaml"),
)

REQUIRED_TO_STREAM: Final = ("topic.prefix", "mongodb.connection.string")
"""The properties without a default that ``mongocdc stream`` needs."""


@config_app.command(
    "validate",
    epilog=examples("mongocdc config validate -c connector.yaml", "mongocdc config validate -c connector.json -o json"),
)
@settings_flags(*CONNECTOR_FLAGS)
def validate(ctx: typer.Context, output: OutputOpt = Output.table) -> None:
    """Load and check the configuration for `mongocdc stream`; exit 3 and name every problem if it is invalid.

    Besides each property's value and the rules between them, the properties `stream` cannot start
    without (topic.prefix, mongodb.connection.string) must be set.

    Example: mongocdc config validate -c connector.yaml && mongocdc stream -c connector.yaml
    """
    settings = state(ctx).settings()
    settings.require(*REQUIRED_TO_STREAM)
    if output is Output.json:
        render.print_json({"valid": True, "name": settings.name, "topic.prefix": settings.topic_prefix})
    else:
        sys.stdout.write("configuration is valid\n")


@config_app.command(
    "show",
    epilog=examples("mongocdc config show -c connector.yaml", "mongocdc config show --topic-prefix shop -o json"),
)
@settings_flags(*CONNECTOR_FLAGS)
def show(ctx: typer.Context, output: OutputOpt = Output.table) -> None:
    """Print the effective settings (flags > env > file > defaults), secrets redacted, and where each came from.

    Each property's source: `file PATH`, `env VARIABLE`, `flag --OPTION` or `default`. An unset
    property has no value: an empty cell in the table, null in JSON. Booleans are true/false. JSON
    output is one object keyed by property: {"value": …, "source": "file"|"env"|"flag"|"default",
    and "path", "variable" or "flag" saying which}.
    """
    settings = state(ctx).settings()
    shown = {name: shown_value(name, value) for name, value in settings.as_properties(redact=True).items()}
    data = {name: {"value": value, **settings.source_of(name).to_dict()} for name, value in shown.items()}
    rows = [[name, value, settings.source_of(name).describe()] for name, value in shown.items()]
    render.emit(output, data, ["property", "value", "source"], rows, title="effective configuration")


def shown_value(name: str, value: object) -> object:
    """A setting as ``config show`` shows it: unset (and an empty list) is ``None``; a librdkafka
    boolean (``kafka.enable.idempotence: true``, a string to librdkafka) is a boolean."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and name not in PROPERTIES and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value
