"""``mongocdc config validate|show``."""

from __future__ import annotations

import sys
from typing import Final

import typer

from mongocdc.cli import render
from mongocdc.cli.options import CONNECTOR_FLAGS, OutputOpt, examples, settings_flags
from mongocdc.cli.state import Output, state

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
    """Print the effective settings (flags > env > file > defaults), secrets redacted."""
    settings = state(ctx).settings()
    props = settings.as_properties(redact=True)
    render.emit(output, props, ["property", "value"], sorted(props.items()), title="effective configuration")
