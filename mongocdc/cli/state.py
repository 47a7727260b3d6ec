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
from typing import Any

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


@dataclass
class State:
    """What the global options and the command's settings flags said; kept on the Typer context."""

    config: Path | None = None
    log_level: LogLevel = LogLevel.info
    log_format: LogFormat = LogFormat.text
    traceback: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    """Property values given by the command's flags (``options.settings_flags``), by property name."""
    timeout_s: float | None = None
    """A one-shot command's ``--timeout`` (``options.one_shot``): one attempt of this long to reach a server."""

    def settings(self) -> Settings:
        """Effective settings: flags > environment > config file > defaults (and a one-shot command's timeout)."""
        settings = load_settings(self.config, os.environ, self.overrides)
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


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact_text(record.getMessage()),
        }
        if record.exc_info:
            entry["exc"] = redact_text(self.formatException(record.exc_info))
        return json.dumps(entry)


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def configure_logging(level: LogLevel, fmt: LogFormat) -> None:
    """Logs go to stderr (data goes to stdout), credentials redacted."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt is LogFormat.json:
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
    # librdkafka is chatty at debug; keep it one level quieter than ours.
    logging.getLogger("mongocdc.kafka.librdkafka").setLevel(max(logging.INFO, root.level))
    logging.getLogger("pymongo").setLevel(max(logging.WARNING, root.level))
