"""Kafka Connect config provider references (``${file:/secrets.properties:password}``) in a config file.

Connector configurations keep secrets out of the configuration with
references that Kafka Connect resolves when it starts the connector:
``${<provider>:[<path>:]<key>}``. mongocdc resolves the providers that ship
with Kafka under their usual names:

- ``file`` (``FileConfigProvider``): ``${file:<properties file>:<key>}``, the
  key's value in a Java properties file;
- ``directory`` (``DirectoryConfigProvider``): ``${directory:<dir>:<file>}``,
  the content of a file in a directory (a mounted Kubernetes secret);
- ``env`` (``EnvVarConfigProvider``): ``${env:<VARIABLE>}``, an environment variable.

A configuration that names those classes under other names
(``config.providers.<alias>.class``, as a worker does) may use its own aliases.
A reference mongocdc cannot resolve is a configuration error, never a literal
``${…}`` sent to MongoDB or Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from mongocdc.config.formats import PropertiesSyntaxError, parse_properties

REFERENCE: Final = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
"""Kafka's ``ConfigTransformer`` pattern: ``${provider:key}`` or ``${provider:path:key}``."""

FILE_PROVIDER: Final = "org.apache.kafka.common.config.provider.FileConfigProvider"
DIRECTORY_PROVIDER: Final = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
ENV_PROVIDER: Final = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"

DEFAULT_ALIASES: Final[Mapping[str, str]] = {
    "file": FILE_PROVIDER,
    "directory": DIRECTORY_PROVIDER,
    "env": ENV_PROVIDER,
}

PROVIDERS_KEY: Final = "config.providers"


def provider_aliases(entries: Mapping[str, object], problems: list[str], origin: str) -> dict[str, str]:
    """Alias → provider class: the defaults, and what ``config.providers.<alias>.class`` keys declare."""
    aliases = dict(DEFAULT_ALIASES)
    for name, value in entries.items():
        if not (name.startswith(PROVIDERS_KEY + ".") and name.endswith(".class")):
            continue
        alias = name[len(PROVIDERS_KEY) + 1 : -len(".class")]
        if str(value) not in DEFAULT_ALIASES.values():
            problems.append(
                f"{name} {value!r} from {origin}: mongocdc resolves only Kafka's FileConfigProvider, "
                "DirectoryConfigProvider and EnvVarConfigProvider references"
            )
            continue
        aliases[alias] = str(value)
    return aliases


def is_provider_key(name: str) -> bool:
    """``config.providers`` and its ``config.providers.<alias>.*`` settings (worker settings, read for the aliases)."""
    return name == PROVIDERS_KEY or name.startswith(PROVIDERS_KEY + ".")


def resolve(
    name: str, value: object, aliases: Mapping[str, str], env: Mapping[str, str], origin: str, problems: list[str]
) -> object:
    """``value`` with every ``${provider:[path:]key}`` replaced; unresolvable references are problems."""
    if not isinstance(value, str) or "${" not in value:
        return value
    cache: dict[str, dict[str, str]] = {}
    failed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal failed
        alias, path, key = match.group(1), match.group(2) or "", match.group(3)
        try:
            return _lookup(aliases, alias, path, key, env, cache)
        except LookupError as exc:
            failed = True
            problems.append(f"{name} from {origin}: cannot resolve {match.group(0)}: {exc}")
            return match.group(0)

    resolved = REFERENCE.sub(replace, value)
    return value if failed else resolved


def _lookup(
    aliases: Mapping[str, str],
    alias: str,
    path: str,
    key: str,
    env: Mapping[str, str],
    cache: dict[str, dict[str, str]],
) -> str:
    provider = aliases.get(alias)
    if provider is None:
        known = ", ".join(sorted(aliases))
        raise LookupError(
            f"no config provider {alias!r} (mongocdc resolves {known}: Kafka's file, directory and env providers); "
            "set the value itself, or through its MONGOCDC_* environment variable"
        )
    if provider == ENV_PROVIDER:
        if key not in env:
            raise LookupError(f"the environment variable {key} is not set")
        return env[key]
    if provider == DIRECTORY_PROVIDER:
        file = Path(path) / key
        try:
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LookupError(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    if path not in cache:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            text = Path(path).read_bytes().decode("latin-1")
        except OSError as exc:
            raise LookupError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            cache[path] = {entry.key: entry.value for entry in parse_properties(text)}
        except PropertiesSyntaxError as exc:
            raise LookupError(f"{path} is not a valid properties file: {exc} at line {exc.line}") from None
    if key not in cache[path]:
        raise LookupError(f"{path} has no key {key!r}")
    return cache[path][key]
