"""How records are written: Kafka Connect's converters and single message transforms, as the connector says.

A Debezium connector configuration may hold, besides its own properties, Kafka Connect's keys that shape
every record: ``transforms`` and ``transforms.<alias>.*``, ``predicates`` and ``predicates.<name>.*``,
``key.converter``/``value.converter``/``header.converter`` and their ``<side>.converter.*`` settings. The
loader keeps them as they are (``Settings.connect_records``); :func:`record_format` decides from them what
the records are:

- each side's converter is the connector's, else the Kafka Connect worker's (``worker.config``), else
  JsonConverter (``record_format`` says how, and ``RecordFormat.origins`` where each came from);
- without transforms, with JsonConverter on both sides, the same ``schemas.enable`` on both and no other
  converter setting, the codec writes the records itself (``RecordFormat.pipeline`` is ``None``): the fast
  path, whose ``schemas.enable`` is the converters' (or mongocdc's own ``schemas.enable`` when the
  configuration names no converter);
- anything else goes through ``events.connect.chain.RecordPipeline``: the codec writes each record with its
  schemas, as Debezium's ``SourceRecord`` holds it, the chain transforms it and the configured converters
  write it, as Kafka Connect's ``WorkerSourceTask`` does.

A converter named without its own ``schemas.enable`` has JsonConverter's default, true, as in Kafka Connect.
A class mongocdc does not implement, or a setting Connect would refuse, is a configuration error (exit 3)
naming the key, never a warning: a transform not applied would change every record a consumer reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mongocdc.events.connect.chain import RecordPipeline

JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
_JSON_ALIASES: Final = frozenset({JSON_CONVERTER, "JsonConverter", "Json"})
_EXACT: Final = (
    "transforms",
    "predicates",
    "key.converter",
    "value.converter",
    "header.converter",
    "errors.tolerance",
    "errors.log.enable",
)
_PREFIXES: Final = tuple(f"{name}." for name in _EXACT[:5])
_NOT_RECORD_KEYS: Final = frozenset(f"{side}.converter.plugin.version" for side in ("key", "value", "header"))
_FAST_PATH_SETTINGS: Final = frozenset({"schemas.enable", "schemas.cache.size"})
"""JsonConverter settings the codec's own JSON honours (the cache size changes no byte)."""


def is_record_key(name: str) -> bool:
    """Whether ``name`` is a Kafka Connect key that shapes records (kept on ``Settings.connect_records``)."""
    if name in _NOT_RECORD_KEYS:
        return False
    return name in _EXACT or any(name.startswith(prefix) and len(name) > len(prefix) for prefix in _PREFIXES)


@dataclass(frozen=True)
class RecordFormat:
    """What writes the records of a connector (see the module docstring)."""

    config: Mapping[str, str]
    """The record keys in force: the connector's, with each side's converter and its settings filled in."""
    schemas_enable: bool
    """The fast path's ``schemas.enable``; with a pipeline, whether the codec writes schemas (always)."""
    transforms: tuple[str, ...]
    """The aliases of the chain, in order."""
    origins: Mapping[str, str] = field(default_factory=dict)
    """Where each side's converter came from (``key``, ``value``): the connector, the worker, a default."""

    @property
    def uses_pipeline(self) -> bool:
        return bool(self.transforms) or not _fast(self.config)

    @property
    def tolerates_errors(self) -> bool:
        return self.config.get("errors.tolerance", "none").lower() == "all"

    def pipeline(self) -> RecordPipeline | None:
        """The chain and converters, or ``None`` on the fast path. Raises ``ChainConfigError``."""
        if not self.uses_pipeline:
            return None
        from mongocdc.events.connect.chain import RecordPipeline

        return RecordPipeline.from_config(self.config)

    def describe(self) -> str:
        """For the start-up log: each side's converter with its settings and where it came from, and the chain."""
        sides = []
        for side in ("key", "value"):
            name = self.config[f"{side}.converter"].rsplit(".", 1)[-1]
            settings = ", ".join(f"{k}={v}" for k, v in sorted(_side_settings(self.config, side).items()))
            origin = self.origins.get(side)
            sides.append(
                f"{side}s by {name}" + (f" ({settings})" if settings else "") + (f" from {origin}" if origin else "")
            )
        chain = ", ".join(f"{alias} ({self.config.get(f'transforms.{alias}.type', '?')})" for alias in self.transforms)
        return "; ".join(sides) + (f"; transforms: {chain}" if chain else "; no transforms")


def _side_settings(config: Mapping[str, str], side: str) -> dict[str, str]:
    prefix = f"{side}.converter."
    return {key[len(prefix) :]: value for key, value in config.items() if key.startswith(prefix)}


def _fast(config: Mapping[str, str]) -> bool:
    if any(config[f"{side}.converter"] not in _JSON_ALIASES for side in ("key", "value")):
        return False
    if config.get("header.converter", "").strip() not in (
        "",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "SimpleHeaderConverter",
        "Simple",
    ):
        return False
    settings = [_side_settings(config, side) for side in ("key", "value")]
    if any(set(s) - _FAST_PATH_SETTINGS for s in settings):
        return False
    return settings[0].get("schemas.enable", "true").lower() == settings[1].get("schemas.enable", "true").lower()


def record_format(
    keys: Mapping[str, str],
    schemas_enable: bool,
    *,
    worker: Mapping[str, str] | None = None,
    worker_origin: str = "the worker configuration",
    schemas_origin: str = "mongocdc's schemas.enable",
) -> RecordFormat:
    """The record format of a connector with record keys ``keys`` and mongocdc's ``schemas.enable``.

    Each side's converter, as Kafka Connect picks it: the connector's ``<side>.converter`` with the connector's
    ``<side>.converter.*``; else the worker's (``worker``: the worker configuration's converter keys) with the
    worker's settings; else JsonConverter with ``<side>.converter.schemas.enable`` when the connector sets only
    that (Kafka Connect would take the worker's converter, which mongocdc does not know without ``worker``);
    else JsonConverter with ``schemas_enable`` (for a Kafka Connect configuration that names no converter,
    ``compat`` maps it to Connect's default, true).
    """
    worker = worker or {}
    config = {key: str(value).strip() for key, value in keys.items()}
    origins: dict[str, str] = {}
    for side in ("key", "value"):
        named = config.get(f"{side}.converter")
        prefix = f"{side}.converter."
        if named:
            origins[side] = "the connector configuration"
        elif worker.get(f"{side}.converter"):
            for key in [k for k in config if k.startswith(prefix)]:
                del config[key]  # Kafka Connect configures the worker's converter with the worker's settings
            config.update({k: v for k, v in worker.items() if k == f"{side}.converter" or k.startswith(prefix)})
            origins[side] = worker_origin
        elif f"{prefix}schemas.enable" in config:
            config[f"{side}.converter"] = JSON_CONVERTER
            origins[side] = f"the connector configuration ({prefix}schemas.enable)"
        else:
            config[f"{side}.converter"] = JSON_CONVERTER
            config[f"{prefix}schemas.enable"] = str(schemas_enable).lower()
            origins[side] = schemas_origin
        if config[f"{side}.converter"] in _JSON_ALIASES:
            config[f"{side}.converter"] = JSON_CONVERTER
    if not config.get("header.converter") and worker.get("header.converter"):
        config.update({k: v for k, v in worker.items() if k == "header.converter" or k.startswith("header.converter.")})
    transforms = tuple(alias.strip() for alias in config.get("transforms", "").split(",") if alias.strip())
    uses = bool(transforms) or not _fast(config)
    fast_schemas = _side_settings(config, "value").get("schemas.enable", "true").lower() == "true"
    return RecordFormat(config, True if uses else fast_schemas, transforms, origins)


def problems(records: RecordFormat) -> list[str]:
    """Each record key a connector cannot start with: a class mongocdc does not implement, a refused setting."""
    from mongocdc.events.connect.chain import ChainConfigError, UnsupportedClassError

    tolerance = records.config.get("errors.tolerance", "none").lower()
    if tolerance not in ("none", "all"):
        return [
            f"errors.tolerance: invalid value {tolerance!r}: none (stop at a record a transform or converter "
            "fails on) or all (skip it), as in Kafka Connect"
        ]
    try:
        records.pipeline()
    except UnsupportedClassError as exc:
        return [
            f"{exc.key}: {exc.what} {exc.class_name} is not implemented by mongocdc, so the records it would "
            f"write cannot be written; {_instead(exc.what, exc.class_name)}"
        ]
    except ChainConfigError as exc:
        return [f"{exc.key}: {exc.reason}"]
    return []


def _instead(what: str, class_name: str) -> str:
    if what == "converter" and (
        "avro" in class_name.lower() or "protobuf" in class_name.lower() or "jsonschema" in class_name.lower()
    ):
        return (
            "converters that need a schema registry (Avro, Protobuf, JSON Schema) are not supported: use "
            "org.apache.kafka.connect.json.JsonConverter (with schemas.enable=true for typed records) or "
            "io.debezium.converters.CloudEventsConverter"
        )
    if what == "header converter":
        return "remove header.converter: headers are written as SimpleHeaderConverter writes them"
    return (
        f"remove it, or use one of the {what}s mongocdc implements (the README's table under "
        '"Switching from Debezium" lists them)'
    )
