"""Commands whose engine work lands in later releases: present in the tree, exit 1 with a clear line."""

from __future__ import annotations

from typing import NoReturn

import typer

from mongocdc.errors import NotImplementedYetError


def _not_yet(command: str) -> NoReturn:
    raise NotImplementedYetError(f"`mongocdc {command}` is not implemented yet")


def register(app: typer.Typer) -> None:
    failover_app = typer.Typer(help="Move consumer groups between replicated Kafka clusters.", no_args_is_help=True)

    @failover_app.command("translate")
    def failover_translate() -> None:
        """Translate a consumer group's committed offsets to the other cluster (not implemented yet)."""
        _not_yet("failover translate")

    app.add_typer(failover_app, name="failover")

    @app.command()
    def replicate() -> None:
        """Replicate topics to a second Kafka cluster with provenance and offset syncs (not implemented yet)."""
        _not_yet("replicate")

    spark_app = typer.Typer(help="The downstream PySpark job that turns CDC topics into tables.", no_args_is_help=True)

    @spark_app.command("run")
    def spark_run() -> None:
        """Launch the PySpark job that keeps one table per collection up to date (not implemented yet)."""
        _not_yet("spark run")

    @spark_app.command("status")
    def spark_status() -> None:
        """Show the streaming query's progress from its checkpoint (not implemented yet)."""
        _not_yet("spark status")

    app.add_typer(spark_app, name="spark")
