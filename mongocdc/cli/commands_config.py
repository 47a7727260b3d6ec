"""``mongocdc config validate|show``."""

from __future__ import annotations

import sys

import typer

from mongocdc.cli import render
from mongocdc.cli.options import BootstrapOpt, ConnectionStringOpt, NameOpt, OffsetsOpt, OutputOpt, TopicPrefixOpt
from mongocdc.cli.state import Output, state


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(help="Check and show the effective configuration.", no_args_is_help=True)

    @config_app.command("validate")
    def validate(
        ctx: typer.Context,
        connection_string: ConnectionStringOpt = None,
        topic_prefix: TopicPrefixOpt = None,
        bootstrap_servers: BootstrapOpt = None,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
    ) -> None:
        """Load and check the configuration; exit 3 and name every problem if it is invalid."""
        st = state(ctx)
        st.settings(
            connection_string=connection_string,
            topic_prefix=topic_prefix,
            bootstrap_servers=bootstrap_servers,
            offsets=offsets,
            name=name,
        )
        sys.stdout.write("configuration is valid\n")

    @config_app.command("show")
    def show(
        ctx: typer.Context,
        output: OutputOpt = Output.table,
        connection_string: ConnectionStringOpt = None,
        topic_prefix: TopicPrefixOpt = None,
        bootstrap_servers: BootstrapOpt = None,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
    ) -> None:
        """Print the effective settings (flags > env > file > defaults), secrets redacted."""
        settings = state(ctx).settings(
            connection_string=connection_string,
            topic_prefix=topic_prefix,
            bootstrap_servers=bootstrap_servers,
            offsets=offsets,
            name=name,
        )
        props = settings.as_properties(redact=True)
        render.emit(output, props, ["property", "value"], sorted(props.items()), title="effective configuration")

    app.add_typer(config_app, name="config")
