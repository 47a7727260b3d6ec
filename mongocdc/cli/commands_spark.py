"""``mongocdc spark``: launch the downstream PySpark job and show its progress."""

from __future__ import annotations

import typer

from mongocdc.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    spark_app = typer.Typer(help="The downstream PySpark job that turns CDC topics into tables.", no_args_is_help=True)

    @spark_app.command("run")
    def spark_run() -> None:
        """Launch the PySpark job that keeps one table per collection up to date (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc spark run` is not implemented yet")

    @spark_app.command("status")
    def spark_status() -> None:
        """Show the streaming query's progress from its checkpoint (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc spark status` is not implemented yet")

    app.add_typer(spark_app, name="spark")
