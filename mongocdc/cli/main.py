"""The command tree and the one place that turns errors into exit codes."""

from __future__ import annotations

import logging
import os
import select
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
import typer.core

from mongocdc import __version__
from mongocdc.cli import (
    commands_completions,
    commands_config,
    commands_data,
    commands_offsets,
    commands_replicate,
    commands_signal,
    commands_snapshot,
    commands_spark,
    commands_stream,
)
from mongocdc.cli.options import examples
from mongocdc.cli.state import LogFormat, LogLevel, State, configure_logging
from mongocdc.config import redact_text
from mongocdc.errors import ExitCode, MongocdcError

CONFIG_FREE_COMMANDS = frozenset(
    {("version",), ("spark", "status"), ("completions", "show"), ("completions", "install")}
)
"""Commands that read no configuration, so they take no ``--config``."""

CONFIG_HELP = "Configuration file: YAML, JSON (a Kafka Connect REST body too) or Java .properties."


def _remember_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is not None:
        root = ctx.find_root()
        if not isinstance(root.obj, State):
            root.obj = State()
        root.obj.config = value
    return value


def _config_option() -> click.Option:
    """``--config``/``-c`` after a command's name: the same as the global option before it (and wins over it)."""
    return click.Option(
        ["--config", "-c"],
        type=click.Path(path_type=Path),
        expose_value=False,
        callback=_remember_config,
        help=f"{CONFIG_HELP} The same as the global --config.",
    )


class _Root(typer.core.TyperGroup):
    """The root group: every command that reads the configuration also takes ``--config``/``-c`` itself.

    So ``mongocdc stream -c connector.json`` works as well as ``mongocdc -c connector.json stream``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, command in self.commands.items():
            _add_config_option(command, (name,))


def _add_config_option(command: click.Command, path: tuple[str, ...]) -> None:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            _add_config_option(sub, (*path, name))
        return
    if path in CONFIG_FREE_COMMANDS or any("--config" in getattr(p, "opts", ()) for p in command.params):
        return
    command.params.append(_config_option())


app = typer.Typer(
    name="mongocdc",
    cls=_Root,
    help="Change data capture from MongoDB into Kafka, Debezium-compatible.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    epilog=examples(
        "mongocdc -c connector.yaml discover",
        "mongocdc -c connector.yaml stream",
        "mongocdc --log-level debug stream -c connector.yaml",
    ),
)


def _print_version(value: bool) -> None:
    """``--version``: eager, so it answers before a command is asked for."""
    if value:
        sys.stdout.write(f"mongocdc {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def global_options(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help=CONFIG_HELP, envvar="MONGOCDC_CONFIG"),
    ] = None,
    log_level: Annotated[
        LogLevel,
        typer.Option(
            "--log-level", help="Log verbosity (any case).", envvar="MONGOCDC_LOG_LEVEL", case_sensitive=False
        ),
    ] = LogLevel.info,
    log_format: Annotated[
        LogFormat, typer.Option("--log-format", help="Log line format on stderr.", envvar="MONGOCDC_LOG_FORMAT")
    ] = LogFormat.text,
    traceback: Annotated[
        bool, typer.Option("--traceback", help="Show the full traceback of an error (for debugging).")
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", help="Print the mongocdc version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """Change data capture from MongoDB into Kafka, Debezium-compatible."""
    ctx.obj = State(config=config, log_level=log_level, log_format=log_format, traceback=traceback)
    configure_logging(log_level, log_format)


@app.command(epilog=examples("mongocdc version"))
def version() -> None:
    """Print the mongocdc version."""
    sys.stdout.write(f"mongocdc {__version__}\n")


app.command(epilog=commands_data.DISCOVER_EXAMPLES)(commands_data.discover)
app.add_typer(commands_data.topic_app, name="topic")
app.command(epilog=commands_stream.STREAM_EXAMPLES)(commands_stream.stream)
app.command(epilog=commands_snapshot.SNAPSHOT_EXAMPLES)(commands_snapshot.snapshot)
app.add_typer(commands_signal.signal_app, name="signal")
app.add_typer(commands_offsets.offsets_app, name="offsets")
app.add_typer(commands_config.config_app, name="config")
app.add_typer(commands_replicate.failover_app, name="failover")
app.command(epilog=commands_replicate.REPLICATE_EXAMPLES)(commands_replicate.replicate)
app.add_typer(commands_spark.spark_app, name="spark")
app.add_typer(commands_completions.completions_app, name="completions")


def _print_error(error: MongocdcError) -> None:
    sys.stderr.write(f"error: {redact_text(error.message)}\n")
    if error.hint:
        sys.stderr.write(f"hint: {redact_text(error.hint)}\n")


def _wants_traceback(argv: list[str]) -> bool:
    return "--traceback" in argv


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe or socket whose reading end is closed (``… | head -3``).

    A ``BrokenPipeError`` from anywhere else (a socket of a client library) stays an error.
    """
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file descriptor (a captured stream)
        return False


def _closed_pipe() -> int:
    """The reader of the output stopped early (``… | head -3``), as the operator wanted: exit 0 quietly.

    Standard output then points at the null device, as Python's documentation advises after ``EPIPE``:
    the interpreter flushes it again at exit, which would raise once more.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return int(ExitCode.OK)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and exit with the documented code."""
    sys.exit(run(sys.argv[1:] if argv is None else argv))


def run(argv: list[str]) -> int:
    """Run the command line and return its exit code (the README's exit-code table)."""
    show_traceback = _wants_traceback(argv)
    try:
        result = app(args=argv, prog_name="mongocdc", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here when the output fitted in the buffer
    except MongocdcError as error:
        if show_traceback:
            raise
        _print_error(error)
        return int(error.exit_code)
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except click.ClickException as error:
        error.show()
        return int(ExitCode.USAGE) if isinstance(error, click.UsageError) else int(ExitCode.UNEXPECTED)
    except SystemExit:
        if _stdout_reader_gone():  # click turns a closed pipe into exit 1
            return _closed_pipe()
        raise
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        return int(ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: say so, and keep secrets out of the message
        if isinstance(error, BrokenPipeError) and _stdout_reader_gone():
            return _closed_pipe()
        if show_traceback:
            raise
        logging.getLogger("mongocdc").debug("unexpected error", exc_info=True)
        sys.stderr.write(
            f"error: unexpected {type(error).__name__}: {redact_text(str(error))}\n"
            "hint: this is a bug in mongocdc; run again with --traceback and report it\n"
        )
        return int(ExitCode.UNEXPECTED)
    return int(result) if isinstance(result, int) else int(ExitCode.OK)
