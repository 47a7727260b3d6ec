"""``mongocdc config validate|show``."""

from __future__ import annotations

import sys

import typer

from mongocdc.cli import render
from mongocdc.cli.options import CONNECTOR_FLAGS, OutputOpt, settings_flags
from mongocdc.cli.state import Output, state

config_app = typer.Typer(help="Check and show the effective configuration.", no_args_is_help=True)


@config_app.command("validate")
@settings_flags(*CONNECTOR_FLAGS)
def validate(ctx: typer.Context) -> None:
    """Load and check the configuration; exit 3 and name every problem if it is invalid."""
    state(ctx).settings()
    sys.stdout.write("configuration is valid\n")


@config_app.command("show")
@settings_flags(*CONNECTOR_FLAGS)
def show(ctx: typer.Context, output: OutputOpt = Output.table) -> None:
    """Print the effective settings (flags > env > file > defaults), secrets redacted."""
    settings = state(ctx).settings()
    props = settings.as_properties(redact=True)
    render.emit(output, props, ["property", "value"], sorted(props.items()), title="effective configuration")
