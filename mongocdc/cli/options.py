"""Option declarations shared by several commands (one definition, many commands).

The options that set configuration properties (``--topic-prefix``, ``--source``, …) are declared
once, by the ``flag=`` of their ``Settings`` row (option, help, metavar), and a command takes them
with ``settings_flags``: it names the properties, the options are added after its own, and their
values reach ``State.settings()`` as overrides of those properties (flags > environment > file).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

import click
import typer

from mongocdc.cli.state import Output, state
from mongocdc.config import PROPERTIES, parse_offsets_spec
from mongocdc.config.values import IntType

ONE_DOCUMENT: Final = "one JSON document"
"""What ``-o json`` prints for a command that ends with its result (``OutputOpt``'s help says it)."""
JSON_LINES: Final = "JSON lines"
"""What ``-o json`` prints for a command that reports as it goes (``OutputLinesOpt``'s help says it)."""

OutputOpt = Annotated[
    Output,
    typer.Option("--output", "-o", help=f"Output format: table for people, or json for scripts ({ONE_DOCUMENT})."),
]
"""``--output`` of a command that prints one result: with json, one JSON document (an object or an array)."""
OutputLinesOpt = Annotated[
    Output,
    typer.Option(
        "--output",
        "-o",
        help=f"Output format: table for people, or json for scripts ({JSON_LINES}: one JSON object per line "
        'as it goes, each with a "status").',
    ),
]
"""``--output`` of a command that runs until stopped: with json, one JSON object per line as it goes."""
OutputRecordsOpt = Annotated[
    Output,
    typer.Option(
        "--output",
        "-o",
        help=f"Output format: table for people, or json for scripts ({JSON_LINES}: one JSON object per record).",
    ),
]
"""``--output`` of a command that prints records as it reads them (``topic dump``)."""


@dataclass(frozen=True)
class SettingsFlag:
    """A command-line option that sets configuration properties."""

    param: str
    """The command parameter Typer gives it (never seen by the command itself)."""
    annotation: Any
    """Its declaration: ``Annotated[<type> | None, typer.Option(...)]``."""
    overrides: Callable[[Any], Mapping[str, object]]
    """The properties a given value sets, by name."""
    option: str
    """The option as ``config show`` names it as the source of those values (``--offsets``)."""


def property_flag(name: str) -> SettingsFlag:
    """The option declared by the ``flag=`` of property ``name``'s ``Settings`` row."""
    prop = PROPERTIES[name]
    if prop.flag is None:
        raise ValueError(f"{name} has no command-line option: give its Settings row a flag=")
    flag = prop.flag
    option = typer.Option(flag.option, *flag.aliases, help=flag.help, metavar=flag.metavar, show_default=False)
    annotation: Any = (
        Annotated[int | None, option] if isinstance(prop.value_type, IntType) else Annotated[str | None, option]
    )
    return SettingsFlag(prop.attr, annotation, lambda value: {name: value}, flag.option)


OFFSETS: Final = SettingsFlag(
    "offsets",
    Annotated[
        str | None,
        typer.Option(
            "--offsets",
            help="Offset store: sqlite:PATH or kafka:TOPIC (offset.storage and its file or topic).",
            show_default=False,
        ),
    ],
    lambda value: parse_offsets_spec(str(value)),
    "--offsets",
)
"""``--offsets sqlite:PATH|kafka:TOPIC``: ``offset.storage`` and the file or topic, in one option."""

CONNECTOR_FLAGS: Final = (
    "mongodb.connection.string",
    "topic.prefix",
    "kafka.bootstrap.servers",
    OFFSETS,
    "name",
    "worker.config",
)
"""What a connector's commands (``stream``, ``snapshot``, ``config``) take: where it reads, writes and keeps offsets."""

Command = TypeVar("Command", bound=Callable[..., Any])

ONE_SHOT_TIMEOUT_S: Final = 5.0
"""How long a one-shot command's one attempt to reach MongoDB or Kafka waits by default (Kafka's own tools wait
5000 ms: ``kafka-consumer-groups --timeout``, kcat's ``-m``)."""


def _with_parameters(
    command: Command, extra: Sequence[inspect.Parameter], take: Callable[[dict[str, Any]], None]
) -> Command:
    """``command`` with the keyword parameters ``extra`` after its own; ``take`` receives (and removes) their
    values from the call's keyword arguments before the command runs."""
    signature = inspect.signature(command, eval_str=True)
    taken = set(signature.parameters) & {parameter.name for parameter in extra}
    if taken:
        raise TypeError(f"{command.__name__} has its own parameter(s) {sorted(taken)} that an added option takes")

    @functools.wraps(command)
    def with_parameters(*args: Any, **kwargs: Any) -> Any:
        take(kwargs)
        return command(*args, **kwargs)

    with_parameters.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *extra]
    )
    return with_parameters  # type: ignore[return-value]


def one_shot(command: Command) -> Command:
    """Make ``command`` one-shot: it reaches MongoDB and Kafka with one attempt of ``--timeout`` seconds (default
    5) and fails at once with exit 4, instead of the ``connect.*`` retries ``stream`` makes. Put it under
    ``@app.command()``."""
    option = typer.Option(
        "--timeout",
        help=f"Seconds to wait for MongoDB or Kafka to answer; one attempt, then exit 4 [default: "
        f"{ONE_SHOT_TIMEOUT_S:g}].",
        min=0.1,
        show_default=False,
    )
    parameter = inspect.Parameter(
        "timeout", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[float | None, option]
    )

    def take(kwargs: dict[str, Any]) -> None:
        value = kwargs.pop("timeout")
        state(click.get_current_context()).timeout_s = ONE_SHOT_TIMEOUT_S if value is None else value

    return _with_parameters(command, [parameter], take)


def settings_flags(*flags: str | SettingsFlag) -> Callable[[Command], Command]:
    """Give a command the options that set ``flags`` (property names, or ``OFFSETS``), after its own.

    The command does not see them: their values become overrides of their properties on the
    invocation's ``State``, which ``state(ctx).settings()`` applies. Put it under ``@app.command()``.
    """
    declared = [flag if isinstance(flag, SettingsFlag) else property_flag(flag) for flag in flags]

    def decorate(command: Command) -> Command:
        def take(kwargs: dict[str, Any]) -> None:
            invocation = state(click.get_current_context())
            for flag in declared:
                value = kwargs.pop(flag.param)
                if value is not None:
                    values = flag.overrides(value)
                    invocation.overrides.update(values)
                    invocation.flags.update(dict.fromkeys(values, flag.option))

        extra = [
            inspect.Parameter(flag.param, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=flag.annotation)
            for flag in declared
        ]
        return _with_parameters(command, extra, take)

    return decorate


def examples(*commands: str) -> str:
    """A command's ``Examples`` (its help's epilog, and the man page's EXAMPLES): each line as it is typed.

    ``\\b`` keeps click from rewrapping the lines; ``docs.py`` reads the commands back with ``examples_of``.
    """
    return "Examples:\n\n\b\n" + "\n".join(f"  {command}" for command in commands)


def examples_of(epilog: str | None) -> list[str]:
    """The commands of an ``examples`` epilog (none when the epilog is something else)."""
    if not epilog or not epilog.startswith("Examples:"):
        return []
    return [line.strip() for line in epilog.splitlines()[1:] if line.strip() and line.strip() != "\b"]
