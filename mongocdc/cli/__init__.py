"""The operator CLI (Typer). Only this package imports typer and rich."""

from mongocdc.cli.main import main

__all__ = ["main"]
