"""Global options, logging set-up and settings loading shared by every command."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import click

from mongocdc.config import Settings, load_settings, redact_text


class Output(StrEnum):
    table = "table"
    json = "json"


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class LogLevel(StrEnum):
    """``--log-level``, in any case (``DEBUG``, ``Info``); ``warn`` is ``warning``, as in Python's logging."""

    debug = "debug"
    info = "info"
    warning = "warning"
    warn = "warn"
    error = "error"


LEVELS_BY_VERBOSITY: Final = {-2: LogLevel.error, -1: LogLevel.warning, 1: LogLevel.debug, 2: LogLevel.debug}
"""``-qq``, ``-q``, ``-v``, ``-vv`` (more is ``-vv``): the default is ``info``; ``-vv`` also lets the client
libraries' own debug lines through (pymongo, py4j, librdkafka's when ``kafka.debug`` asks for them)."""


@dataclass
class State:
    """What the global options and the command's settings flags said; kept on the Typer context."""

    config: Path | None = None
    log_level: LogLevel = LogLevel.info
    """The level in effect: ``--log-level`` (or ``MONGOCDC_LOG_LEVEL``), else what ``-v``/``-q`` ask for."""
    log_format: LogFormat = LogFormat.text
    traceback: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    """Property values given by the command's flags (``options.settings_flags``), by property name."""
    timeout_s: float | None = None
    """A one-shot command's ``--timeout`` (``options.one_shot``): one attempt of this long to reach a server."""
    flags: dict[str, str] = field(default_factory=dict)
    """The option that gave each of ``overrides`` (``--topic-prefix``), by property name."""
    level_option: LogLevel | None = None
    """``--log-level`` as given on the command line (before or after the command; the last one counts)."""
    level_env: LogLevel | None = None
    """``MONGOCDC_LOG_LEVEL``: what the level is when the command line says nothing about it."""
    verbosity: int = 0
    """How many ``-v`` (positive) or ``-q`` (negative) the command line holds, before and after the command."""
    verbosity_flags: set[str] = field(default_factory=set)
    """Which of ``-v``/``-q`` were given (both at once is a usage error)."""

    def set_logging(
        self,
        *,
        level: LogLevel | None = None,
        level_from_env: bool = False,
        verbose: int = 0,
        quiet: int = 0,
        fmt: LogFormat | None = None,
    ) -> None:
        """Take logging options (from before or after the command) and configure logging with all of them.

        ``--log-level`` with ``-v``/``-q``, or ``-v`` with ``-q``, is a usage error: each says how much to
        log, and neither silently beats the other. ``-v``/``-q`` beat ``MONGOCDC_LOG_LEVEL``, as every
        command-line option beats its environment variable.
        """
        if level is not None:
            if level_from_env:
                self.level_env = level
            else:
                self.level_option = level
        if verbose:
            self.verbosity_flags.add("-v")
        if quiet:
            self.verbosity_flags.add("-q")
        self.verbosity += verbose - quiet
        if fmt is not None:
            self.log_format = fmt
        if len(self.verbosity_flags) > 1:
            raise click.UsageError("-v and -q both set how much is logged; give one of them")
        if self.verbosity_flags and self.level_option is not None:
            flag = next(iter(self.verbosity_flags))
            raise click.UsageError(
                f"--log-level and {flag} both set how much is logged; give one of them "
                "(-v: debug, -vv: also the client libraries' debug lines, -q: warnings, -qq: errors only)"
            )
        libraries = False
        if self.level_option is not None:
            self.log_level = self.level_option
        elif self.verbosity:
            steps = max(-2, min(2, self.verbosity))
            self.log_level = LEVELS_BY_VERBOSITY[steps]
            libraries = steps == 2
        elif self.level_env is not None:
            self.log_level = self.level_env
        else:
            self.log_level = LogLevel.info
        configure_logging(self.log_level, self.log_format, libraries=libraries)

    def settings(self) -> Settings:
        """Effective settings: flags > environment > config file > defaults (and a one-shot command's timeout)."""
        settings = load_settings(self.config, os.environ, self.overrides, flags=self.flags)
        if self.timeout_s is not None:
            settings = dataclasses.replace(settings, one_shot_timeout_s=self.timeout_s)
        return settings


def state(ctx: click.Context) -> State:
    """The invocation's ``State`` (on the root context; made when a test invokes a command alone)."""
    obj = ctx.find_root().obj
    if not isinstance(obj, State):
        obj = State()
        ctx.find_root().obj = obj
    return obj


_EXTRA_FIELDS: Final = ("hint", "exit_code")
"""Fields a log record may carry besides its message (``logger.error(..., extra={"hint": …})``)."""


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact_text(record.getMessage()),
        }
        for key in _EXTRA_FIELDS:
            value = record.__dict__.get(key)
            if value is not None:
                entry[key] = redact_text(value) if isinstance(value, str) else value
        if record.exc_info:
            entry["exc"] = redact_text(self.formatException(record.exc_info))
        return json.dumps(entry)


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def configure_logging(level: LogLevel, fmt: LogFormat, *, libraries: bool = False) -> None:
    """Logs go to stderr (data goes to stdout), credentials redacted.

    Every Python logger goes through the one handler, so ``--log-format json`` formats the client
    libraries' lines too (pymongo, librdkafka's through ``mongocdc.kafka.librdkafka``, py4j's when Spark
    runs in-process). Those libraries are kept quieter than mongocdc's own lines unless ``libraries``
    (``-vv``) lets their debug lines through.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(log_formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
    floor = logging.DEBUG if libraries else None
    # librdkafka is chatty at debug; keep it one level quieter than ours.
    logging.getLogger("mongocdc.kafka.librdkafka").setLevel(max(floor or logging.INFO, root.level))
    for library in ("pymongo", "py4j"):
        logging.getLogger(library).setLevel(max(floor or logging.WARNING, root.level))


def log_formatter(fmt: LogFormat) -> logging.Formatter:
    """The formatter of log lines in ``fmt`` (secrets redacted either way)."""
    if fmt is LogFormat.json:
        return _JsonFormatter()
    return _RedactingFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")
