"""Option declarations shared by several commands (one definition, many commands)."""

from __future__ import annotations

from typing import Annotated

import typer

from mongocdc.cli.state import Output

OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table for people, json for scripts.")]
ConnectionStringOpt = Annotated[
    str | None,
    typer.Option(
        "--connection-string",
        help="MongoDB connection string (mongodb.connection.string).",
        show_default=False,
    ),
]
TopicPrefixOpt = Annotated[
    str | None, typer.Option("--topic-prefix", help="Prefix of every topic name (topic.prefix).", show_default=False)
]
BootstrapOpt = Annotated[
    str | None,
    typer.Option("--bootstrap-servers", help="Kafka bootstrap servers (kafka.bootstrap.servers).", show_default=False),
]
OffsetsOpt = Annotated[
    str | None,
    typer.Option(
        "--offsets",
        help="Offset store: sqlite:PATH or kafka:TOPIC (offset.storage and its file or topic).",
        show_default=False,
    ),
]
NameOpt = Annotated[
    str | None, typer.Option("--name", help="Connector name the offsets are kept under (name).", show_default=False)
]
MetricsPortOpt = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        help="Serve Prometheus metrics on this port at /metrics (metrics.port; 0 turns it off).",
        show_default=False,
    ),
]
