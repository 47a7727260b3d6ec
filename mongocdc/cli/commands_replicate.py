"""``mongocdc replicate`` and ``mongocdc failover``: cross-cluster replication and consumer failover."""

from __future__ import annotations

import typer

from mongocdc.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    failover_app = typer.Typer(help="Move consumer groups between replicated Kafka clusters.", no_args_is_help=True)

    @failover_app.command("translate")
    def failover_translate() -> None:
        """Translate a consumer group's committed offsets to the other cluster (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc failover translate` is not implemented yet")

    app.add_typer(failover_app, name="failover")

    @app.command()
    def replicate() -> None:
        """Replicate topics to a second Kafka cluster with provenance and offset syncs (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc replicate` is not implemented yet")
