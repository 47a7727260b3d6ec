"""The command tree and the one place that turns errors into exit codes."""

from __future__ import annotations

import logging
import os
import select
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import click
import typer
import typer.core
from click.core import ParameterSource

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
    commands_status,
    commands_stream,
)
from mongocdc.cli.options import examples
from mongocdc.cli.state import LogFormat, LogLevel, Output, log_formatter, state
from mongocdc.config import redact_text
from mongocdc.errors import ExitCode, MongocdcError

CONFIG_FREE_COMMANDS = frozenset(
    {("version",), ("spark", "status"), ("completions", "show"), ("completions", "install")}
)
"""Commands that read no configuration, so they take no ``--config``."""

CONFIG_HELP = "Configuration file: YAML, JSON (a Kafka Connect REST body too) or Java .properties."
LOG_LEVEL_HELP = "Log verbosity (any case)."
LOG_FORMAT_HELP = "Log line format on stderr; json also turns the final error: and hint: lines into JSON records."
VERBOSE_HELP = "Log more: -v debug, -vv also the client libraries' debug lines (not with --log-level)."
QUIET_HELP = "Log less: -q warnings and errors, -qq errors only (not with --log-level)."
OUTPUT_HELP = "Output format of the command's result (the same as the command's own -o, which wins)."
ROOT_HELP = (
    "Change data capture from MongoDB into Kafka, Debezium-compatible.\n\n"
    "The global options -c/--config, --log-level, --log-format, -v, -q and --traceback may also follow the "
    "command (mongocdc offsets show -c connector.yaml -v), and -o/--output may also precede it."
)


def _remember_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is not None:
        state(ctx).config = value
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


def _given(ctx: click.Context, param: click.Parameter) -> bool:
    return param.name is not None and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE


def _logging_callback(key: str) -> Any:
    """The callback of a logging option after a command's name: it joins the global ones (the last one counts)."""

    def take(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if not value or not _given(ctx, param):
            return
        if key == "level":
            value = LogLevel(str(value).lower())
        elif key == "fmt":
            value = LogFormat(value)
        try:
            state(ctx).set_logging(**{key: value})
        except click.UsageError as error:
            error.ctx = ctx
            raise

    return take


def _logging_options() -> list[click.Option]:
    """The global logging options, also accepted after a command's name (hidden from its help: the root's
    help names them once)."""

    def hidden(flags: list[str], key: str | None, help: str, **kind: Any) -> click.Option:
        callback = _logging_callback(key) if key else None
        return click.Option(flags, expose_value=False, hidden=True, callback=callback, help=help, **kind)

    return [
        hidden(
            ["--log-level"],
            "level",
            LOG_LEVEL_HELP,
            type=click.Choice([level.value for level in LogLevel], case_sensitive=False),
        ),
        hidden(["--log-format"], "fmt", LOG_FORMAT_HELP, type=click.Choice([fmt.value for fmt in LogFormat])),
        hidden(["--verbose", "-v"], "verbose", VERBOSE_HELP, count=True),
        hidden(["--quiet", "-q"], "quiet", QUIET_HELP, count=True),
        hidden(["--traceback"], None, "Show the full traceback of an error (for debugging).", is_flag=True),
    ]


class _Root(typer.core.TyperGroup):
    """The root group: every command also takes the global options after its name.

    So ``mongocdc stream -c connector.json -v`` works as well as ``mongocdc -c connector.json -v stream``
    (``--config`` only for the commands that read the configuration). Typer's own "did you mean" for a
    misspelt command is turned off: click's ``NoSuchCommand`` says it already, and it was said twice.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.suggest_commands = False
        for name, command in self.commands.items():
            _add_global_options(command, (name,))


def _add_global_options(command: click.Command, path: tuple[str, ...]) -> None:
    if isinstance(command, click.Group):
        if isinstance(command, typer.core.TyperGroup):
            command.suggest_commands = False
        for name, sub in command.commands.items():
            _add_global_options(sub, (*path, name))
        return
    opts = {opt for p in command.params for opt in getattr(p, "opts", ())}
    if path not in CONFIG_FREE_COMMANDS and "--config" not in opts:
        command.params.append(_config_option())
    command.params.extend(o for o in _logging_options() if not set(o.opts) & opts)


def _output_defaults(command: click.Command, output: Output) -> dict[str, Any]:
    """A ``default_map`` giving every command's ``--output`` the value of the global ``-o``."""
    if isinstance(command, click.Group):
        nested = {name: _output_defaults(sub, output) for name, sub in command.commands.items()}
        return {name: value for name, value in nested.items() if value}
    return {"output": output.value} if any(p.name == "output" for p in command.params) else {}


app = typer.Typer(
    name="mongocdc",
    cls=_Root,
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    suggest_commands=False,
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
        LogLevel | None,
        typer.Option(
            "--log-level",
            help=f"{LOG_LEVEL_HELP} [default: info]",
            envvar="MONGOCDC_LOG_LEVEL",
            case_sensitive=False,
            show_default=False,
        ),
    ] = None,
    log_format: Annotated[
        LogFormat, typer.Option("--log-format", help=LOG_FORMAT_HELP, envvar="MONGOCDC_LOG_FORMAT")
    ] = LogFormat.text,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help=VERBOSE_HELP, show_default=False)] = 0,
    quiet: Annotated[int, typer.Option("--quiet", "-q", count=True, help=QUIET_HELP, show_default=False)] = 0,
    output: Annotated[Output | None, typer.Option("--output", "-o", help=OUTPUT_HELP, show_default=False)] = None,
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
    current = state(ctx)  # a --config after the command may not have been read yet: keep the object
    current.config = config
    current.traceback = traceback
    from_env = ctx.get_parameter_source("log_level") is ParameterSource.ENVIRONMENT
    current.set_logging(level=log_level, level_from_env=from_env, verbose=verbose, quiet=quiet, fmt=log_format)
    if output is not None:
        ctx.default_map = {**(ctx.default_map or {}), **_output_defaults(ctx.command, output)}


@app.command(epilog=examples("mongocdc version"))
def version() -> None:
    """Print the mongocdc version."""
    sys.stdout.write(f"mongocdc {__version__}\n")


app.command(epilog=commands_data.DISCOVER_EXAMPLES)(commands_data.discover)
app.add_typer(commands_data.topic_app, name="topic")
app.command(epilog=commands_stream.STREAM_EXAMPLES)(commands_stream.stream)
app.command(epilog=commands_status.STATUS_EXAMPLES)(commands_status.status)
app.command(epilog=commands_snapshot.SNAPSHOT_EXAMPLES)(commands_snapshot.snapshot)
app.add_typer(commands_signal.signal_app, name="signal")
app.add_typer(commands_offsets.offsets_app, name="offsets")
app.add_typer(commands_config.config_app, name="config")
app.add_typer(commands_replicate.failover_app, name="failover")
app.command(epilog=commands_replicate.REPLICATE_EXAMPLES)(commands_replicate.replicate)
app.add_typer(commands_spark.spark_app, name="spark")
app.add_typer(commands_completions.completions_app, name="completions")


def _report(message: str, hint: str | None, code: ExitCode, fmt: LogFormat) -> None:
    """The final ``error:``/``hint:`` lines, or with ``--log-format json`` one JSON log record of level
    ``error`` with ``message``, ``hint`` and ``exit_code`` (secrets redacted either way)."""
    if fmt is LogFormat.json:
        record = logging.LogRecord("mongocdc", logging.ERROR, __file__, 0, message, None, None)
        record.hint = hint
        record.exit_code = int(code)
        sys.stderr.write(log_formatter(fmt).format(record) + "\n")
        return
    sys.stderr.write(f"error: {redact_text(message)}\n")
    if hint:
        sys.stderr.write(f"hint: {redact_text(hint)}\n")


def _requested_log_format(argv: list[str], env: Mapping[str, str]) -> LogFormat:
    """The ``--log-format`` of the command line (the last one, before or after the command), else of
    ``MONGOCDC_LOG_FORMAT``: read before parsing, so that a usage error is reported in that format too."""
    chosen = env.get("MONGOCDC_LOG_FORMAT", "")
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--log-format" and index + 1 < len(argv):
            chosen = argv[index + 1]
        elif arg.startswith("--log-format="):
            chosen = arg.partition("=")[2]
    return LogFormat.json if chosen == LogFormat.json.value else LogFormat.text


def _usage_hint(error: click.UsageError) -> str | None:
    """What click prints under a usage error's message: where to read the usage."""
    ctx = error.ctx
    if ctx is None:
        return None
    return f"try '{ctx.command_path} --help' for help"


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


def _interrupted(word: str, fmt: LogFormat) -> None:
    if fmt is LogFormat.json:
        _report(word, None, ExitCode.INTERRUPTED, fmt)
    else:
        sys.stderr.write(f"{word}\n")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and exit with the documented code."""
    sys.exit(run(sys.argv[1:] if argv is None else argv))


def run(argv: list[str]) -> int:
    """Run the command line and return its exit code (the README's exit-code table)."""
    show_traceback = _wants_traceback(argv)
    fmt = _requested_log_format(argv, os.environ)
    try:
        result = app(args=argv, prog_name="mongocdc", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here when the output fitted in the buffer
    except MongocdcError as error:
        if show_traceback:
            raise
        _report(error.message, error.hint, error.exit_code, fmt)
        return int(error.exit_code)
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except click.ClickException as error:
        code = ExitCode.USAGE if isinstance(error, click.UsageError) else ExitCode.UNEXPECTED
        if fmt is LogFormat.json:
            hint = _usage_hint(error) if isinstance(error, click.UsageError) else None
            _report(error.format_message(), hint, code, fmt)
        else:
            error.show()
        return int(code)
    except SystemExit:
        if _stdout_reader_gone():  # click turns a closed pipe into exit 1
            return _closed_pipe()
        raise
    except click.exceptions.Abort:
        _interrupted("aborted", fmt)
        return int(ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        _interrupted("interrupted", fmt)
        return int(ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: say so, and keep secrets out of the message
        if isinstance(error, BrokenPipeError) and _stdout_reader_gone():
            return _closed_pipe()
        if show_traceback:
            raise
        logging.getLogger("mongocdc").debug("unexpected error", exc_info=True)
        _report(
            f"unexpected {type(error).__name__}: {error}",
            "this is a bug in mongocdc; run again with --traceback and report it",
            ExitCode.UNEXPECTED,
            fmt,
        )
        return int(ExitCode.UNEXPECTED)
    return int(result) if isinstance(result, int) else int(ExitCode.OK)
