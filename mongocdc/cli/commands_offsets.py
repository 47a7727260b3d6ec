"""``mongocdc offsets show|reset|set``."""

from __future__ import annotations

from typing import Any

import typer

from mongocdc.cli import render
from mongocdc.cli.options import NameOpt, OffsetsOpt, OutputOpt
from mongocdc.cli.state import Output, state
from mongocdc.errors import NotImplementedYetError


def _token_text(offset: dict[str, Any], width: int = 28) -> str:
    """The resume token's ``_data`` (or extended JSON), shortened for a table (JSON output keeps it whole)."""
    from mongocdc.events.position import Position

    try:
        text = Position.from_offset(offset).describe_token()
    except ValueError:
        text = str(offset.get("resume_token", ""))
    if len(text) <= width:
        return text
    return f"{text[: width - 9]}…{text[-8:]}"


def register(app: typer.Typer) -> None:
    offsets_app = typer.Typer(help="Read and edit stored connector offsets.", no_args_is_help=True)

    @offsets_app.command("show")
    def show(
        ctx: typer.Context,
        output: OutputOpt = Output.table,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
        all_connectors: bool = typer.Option(False, "--all", help="Show every connector in the store, not only --name."),
    ) -> None:
        """Show each source partition's stored position (sec, ord, resume token, updated at)."""
        from mongocdc import wiring

        settings = state(ctx).settings(offsets=offsets, name=name)
        store = wiring.offset_store(settings)
        try:
            records = store.records(None if all_connectors else settings.name)
        finally:
            store.close()
        data = [
            {
                "connector": r.connector,
                "partition": r.partition,
                **dict(r.offset),
                "updated_at": r.updated_at.isoformat(),
            }
            for r in records
        ]
        rows = [
            [
                r.connector,
                r.partition,
                r.offset.get("sec"),
                r.offset.get("ord"),
                _token_text(dict(r.offset)),
                "yes" if r.offset.get("initsync") else "",
                r.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            ]
            for r in records
        ]
        render.emit(
            output,
            data,
            ["connector", "partition", "sec", "ord", "resume token", "initsync", "updated at"],
            rows,
            title="stored offsets",
        )

    @offsets_app.command("reset")
    def reset() -> None:
        """Delete a connector's offsets, or move them to a timestamp (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc offsets reset` is not implemented yet")

    @offsets_app.command("set")
    def set_() -> None:
        """Set a connector's offset to a given resume token (not implemented yet)."""
        raise NotImplementedYetError("`mongocdc offsets set` is not implemented yet")

    app.add_typer(offsets_app, name="offsets")
