"""A connector's transform chain and converters, applied to every record as Kafka Connect applies them.

Kafka Connect builds, from a connector's configuration, one stage per alias of ``transforms`` (the class of
``transforms.<alias>.type`` configured with the ``transforms.<alias>.*`` keys, and the predicate named by
``transforms.<alias>.predicate``, configured with the ``predicates.<name>.*`` keys, its answer negated by
``transforms.<alias>.negate``); each record goes through the stages in order (a stage whose predicate says no
passes it on unchanged, a transform that returns null drops it), then through the header converter, the key
converter and the value converter (``WorkerSourceTask``). :class:`RecordPipeline` is that, for the records
mongocdc's codec writes: it reads them back into Connect's data (the codec writes them with their schemas
when a pipeline is in force, as Debezium's ``SourceRecord``s carry them), runs the chain and writes what comes
out with the configured converters.

Configuration errors are :class:`ChainConfigError` naming the key; a class mongocdc does not implement is
:class:`UnsupportedClassError`, with what it can do instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    Converter,
    ConverterFactory,
    Predicate,
    PredicateFactory,
    Transform,
    TransformFactory,
)
from mongocdc.events.connect.data import DATE, TIME, ConnectRecord, DataError, Header, Schema, string_header
from mongocdc.events.connect.json import JsonConverter, JsonConverterConfig
from mongocdc.events.connect.values import convert_to_string

if TYPE_CHECKING:
    from mongocdc.events.connect.unwrap_json import FusedUnwrap

log = logging.getLogger("mongocdc.transforms")

JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
SIMPLE_HEADER_CONVERTER: Final = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


class ChainConfigError(ValueError):
    """A transform, predicate or converter setting Connect would refuse; ``key`` is the configuration key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.reason = message


class UnsupportedClassError(ChainConfigError):
    """A class mongocdc does not implement (``what`` is ``transform``, ``predicate`` or ``converter``)."""

    def __init__(self, key: str, class_name: str, what: str) -> None:
        super().__init__(key, f"{what} {class_name} is not one mongocdc implements")
        self.class_name = class_name
        self.what = what


@dataclass(frozen=True)
class Registry:
    transforms: Mapping[str, TransformFactory]
    predicates: Mapping[str, PredicateFactory]
    converters: Mapping[str, ConverterFactory]


def _json_converter(options: Mapping[str, str], is_key: bool) -> Converter:
    from mongocdc.events.connect.base import boolean, choice

    del is_key
    return _JsonSide(
        JsonConverter(
            JsonConverterConfig(
                schemas_enable=boolean(options, "schemas.enable", True),
                decimal_format=choice(options, "decimal.format", "BASE64", ["BASE64", "NUMERIC"]),
                replace_null_with_default=boolean(options, "replace.null.with.default", True),
            )
        )
    )


@dataclass(frozen=True, slots=True)
class _JsonSide:
    converter: JsonConverter

    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        return self.converter.from_connect(topic, schema, value)


_registry: Registry | None = None


def registry() -> Registry:
    """Every implemented class by its Java name: what the implementation modules register (``TRANSFORMS``,
    ``PREDICATES``, ``CONVERTERS``), and JsonConverter. Imported on first use, by name (so the single binary's
    analysis sees them), since a connector without transforms needs none of them."""
    global _registry
    if _registry is None:
        from mongocdc.events.connect import converters, debezium_transforms, kafka_transforms, unwrap

        _registry = Registry(
            _with_aliases({**kafka_transforms.TRANSFORMS, **unwrap.TRANSFORMS, **debezium_transforms.TRANSFORMS}),
            _with_aliases(kafka_transforms.PREDICATES),
            _with_aliases({JSON_CONVERTER: _json_converter, **converters.CONVERTERS}),
        )
    return _registry


_SUFFIXES: Final = ("Converter", "Transformation", "Transform", "Predicate")


def _with_aliases(classes: Mapping[str, Any]) -> dict[str, Any]:
    """``classes`` by their names and by the aliases Kafka Connect accepts for a plugin (``PluginUtils``): the
    simple class name (``RegexRouter``, ``InsertField$Value``) and that name without its kind's suffix
    (``JsonConverter`` → ``Json``), each where no other class of the kind has it. (Debezium's scripted ``Filter``
    is not in its MongoDB plugin, so ``Filter`` is Kafka's, as on a worker with that plugin alone.)"""
    counts: dict[str, int] = {}
    aliases: dict[str, str] = {}
    for name in classes:
        simple = name.rsplit(".", 1)[-1]
        pruned = next((simple[: -len(s)] for s in _SUFFIXES if simple.endswith(s) and simple != s), simple)
        for alias in {simple, pruned}:
            counts[alias] = counts.get(alias, 0) + 1
            aliases[alias] = name
    unique = {alias: classes[name] for alias, name in aliases.items() if counts[alias] == 1 and alias not in classes}
    return {**unique, **classes}


@dataclass(frozen=True)
class Stage:
    alias: str
    class_name: str
    transform: Transform
    predicate: Predicate | None = None
    negate: bool = False


def _prefixed(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {key[len(prefix) :]: value for key, value in config.items() if key.startswith(prefix)}


def aliases(config: Mapping[str, str], key: str = "transforms") -> list[str]:
    value = config.get(key) or ""
    return [alias.strip() for alias in value.split(",") if alias.strip()]


def build_stages(config: Mapping[str, str]) -> list[Stage]:
    """The chain of ``transforms`` (see the module docstring); ``ChainConfigError`` for a bad setting."""
    known = registry()
    stages: list[Stage] = []
    seen: set[str] = set()
    predicate_names = set(aliases(config, "predicates"))
    for alias in aliases(config):
        if alias in seen:
            raise ChainConfigError("transforms", f"Duplicate alias provided: {alias}")
        seen.add(alias)
        prefix = f"transforms.{alias}."
        options = _prefixed(config, prefix)
        class_name = (options.get("type") or "").strip()
        if not class_name:
            raise ChainConfigError(f"{prefix}type", "Missing required configuration: the transform's class")
        factory = known.transforms.get(class_name)
        if factory is None:
            raise UnsupportedClassError(f"{prefix}type", class_name, "transform")
        try:
            transform = factory(options)
        except ConnectConfigError as exc:
            raise ChainConfigError(f"{prefix}*", str(exc)) from None
        predicate: Predicate | None = None
        predicate_name = (options.get("predicate") or "").strip()
        if predicate_name:
            if predicate_name not in predicate_names:
                raise ChainConfigError(
                    f"{prefix}predicate",
                    f"Invalid value {predicate_name} for configuration {prefix}predicate: "
                    f"Value must be one of {', '.join(sorted(predicate_names)) or '(no predicates are declared)'}",
                )
            predicate = _predicate(config, predicate_name)
        negate_text = (options.get("negate") or "false").strip().lower()
        if negate_text not in ("true", "false"):
            raise ChainConfigError(
                f"{prefix}negate",
                f"Invalid value {negate_text} for configuration {prefix}negate: "
                "Expected value to be either true or false",
            )
        if negate_text == "true" and predicate is None:
            raise ChainConfigError(f"{prefix}negate", f"{prefix}negate is set but {prefix}predicate is not")
        stages.append(Stage(alias, class_name, transform, predicate, negate_text == "true"))
    return stages


def _predicate(config: Mapping[str, str], name: str) -> Predicate:
    prefix = f"predicates.{name}."
    options = _prefixed(config, prefix)
    class_name = (options.get("type") or "").strip()
    if not class_name:
        raise ChainConfigError(f"{prefix}type", "Missing required configuration: the predicate's class")
    factory = registry().predicates.get(class_name)
    if factory is None:
        raise UnsupportedClassError(f"{prefix}type", class_name, "predicate")
    try:
        return factory(options)
    except ConnectConfigError as exc:
        raise ChainConfigError(f"{prefix}*", str(exc)) from None


def build_converter(config: Mapping[str, str], side: str, default: str = JSON_CONVERTER) -> Converter:
    """The ``key`` or ``value`` converter of ``config`` (``<side>.converter`` and its ``<side>.converter.*``)."""
    class_name = (config.get(f"{side}.converter") or default).strip()
    factory = registry().converters.get(class_name)
    if factory is None:
        raise UnsupportedClassError(f"{side}.converter", class_name, "converter")
    try:
        return factory(_prefixed(config, f"{side}.converter."), side == "key")
    except ConnectConfigError as exc:
        raise ChainConfigError(f"{side}.converter.*", str(exc)) from None


# --- the pipeline ------------------------------------------------------------------------------------------


def _header_bytes(headers: Sequence[tuple[str, str | bytes | None]] | None) -> list[tuple[str, str | bytes | None]]:
    """String headers as SimpleHeaderConverter writes them back (the UTF-8 of their text)."""
    return [(name, data.encode() if isinstance(data, str) else data) for name, data in headers or ()]


@dataclass(frozen=True, slots=True)
class Output:
    """A record as Kafka gets it."""

    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, str | bytes | None]]


_CLAIM: Final = threading.Lock()


@dataclass
class RecordPipeline:
    """Records written by mongocdc's codec (with schemas) → Connect data → the chain → the converters."""

    stages: Sequence[Stage]
    key_converter: Converter
    value_converter: Converter
    tolerate_errors: bool = False
    """``errors.tolerance=all``: a record a transform or converter fails on is skipped (and logged with
    ``errors.log.enable``), as Kafka Connect's source tasks skip it, instead of stopping the connector."""
    log_errors: bool = False
    config: Mapping[str, str] = field(default_factory=dict)
    """The configuration it was built from (:meth:`for_this_thread` builds another from it)."""
    _reader: JsonConverter = field(default_factory=JsonConverter)
    _last: threading.local = field(default_factory=threading.local)
    """This thread's last record: topic, key bytes, its headers and the headers added to them in place."""
    _threads: threading.local = field(default_factory=threading.local)
    _claimed: bool = False
    """Whether a thread uses this very pipeline (the first to ask); the others get their own."""
    fuse: bool = True
    """Whether to write with ``unwrap_json`` where the chain allows (``False``: the general chain for every record,
    the reference the fused writer is tested against)."""
    _fused: FusedUnwrap | None = field(init=False, default=None)
    """``ExtractNewDocumentState`` and the JsonConverters fused (``unwrap_json``), when the chain is that alone."""
    dropped: int = 0
    """Records a transform dropped."""
    skipped: int = 0
    """Records skipped because a transform or converter failed on them (``errors.tolerance=all``)."""

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, str],
        *,
        key_converter: str = JSON_CONVERTER,
        value_converter: str = JSON_CONVERTER,
        fuse: bool = True,
    ) -> RecordPipeline:
        header = (config.get("header.converter") or SIMPLE_HEADER_CONVERTER).strip()
        if header not in (SIMPLE_HEADER_CONVERTER, "SimpleHeaderConverter", "Simple"):
            raise UnsupportedClassError("header.converter", header, "header converter")
        tolerance = (config.get("errors.tolerance") or "none").strip().lower()
        if tolerance not in ("none", "all"):
            raise ChainConfigError(
                "errors.tolerance",
                f"Invalid value {tolerance} for configuration errors.tolerance: String must be one of: none, all",
            )
        return cls(
            build_stages(config),
            build_converter(config, "key", key_converter),
            build_converter(config, "value", value_converter),
            tolerate_errors=tolerance == "all",
            log_errors=(config.get("errors.log.enable") or "false").strip().lower() == "true",
            config=dict(config),
            fuse=fuse,
        )

    def __post_init__(self) -> None:
        from mongocdc.events.connect.unwrap_json import FusedUnwrap

        if self.fuse:
            self._fused = FusedUnwrap.of(self.stages, self.key_converter, self.value_converter)

    @property
    def fused(self) -> FusedUnwrap | None:
        """The fused ``ExtractNewDocumentState`` writer this chain uses, if it is one it can be fused into."""
        return self._fused

    def fused_record(self, topic: str, key_json: str, after: str) -> tuple[bytes, bytes] | None:
        """The key and value bytes the chain writes for a change's record (key ``id`` ``key_json``, ``after``
        ``after``), when the fused writer writes it without the codec's record (see ``FusedUnwrap.event_record``);
        else ``None``: the record goes through :meth:`process`."""
        fused = self._fused
        if fused is None:
            return None
        written = fused.event_record(topic, key_json, after)
        if written is not None:
            self._last.record = None
        return written

    def for_this_thread(self) -> RecordPipeline:
        """The pipeline of the calling thread. Kafka Connect gives each task a chain of its own, and transforms keep
        state (schema caches, LRU maps); a connector's tasks are threads sharing one sink, so each thread gets a
        chain built from the same configuration (this one, for the first thread that asks)."""
        mine: RecordPipeline | None = getattr(self._threads, "pipeline", None)
        if mine is None:
            with _CLAIM:
                claimed, self._claimed = self._claimed, True
            mine = self if not claimed or not self.config else RecordPipeline.from_config(self.config, fuse=self.fuse)
            self._threads.pipeline = mine
        return mine

    def record(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> ConnectRecord:
        """The Connect record of what the codec wrote (key and value with their schemas, string headers).

        A tombstone right after a record of the same topic and key (on this thread: the connector's tasks share the
        sink) is that delete's tombstone, which in Debezium shares the delete's headers: it has them, with what the
        chain added to them in place (``ConnectRecord.shared_headers``)."""
        key_schema, key_value = self._reader.to_connect(key)
        value_schema, value_value = self._reader.to_connect(value)
        connect_headers = tuple(
            string_header(name, None if data is None else data.decode() if isinstance(data, bytes) else data)
            for name, data in headers or ()
        )
        last = getattr(self._last, "record", None)
        shared: list[Header] = []
        if value is None and last is not None and last[0] == topic and last[1] == key:
            connect_headers, shared = last[2], last[3]  # the delete's headers, as they are now
            connect_headers += tuple(shared)
        self._last.record = (topic, key, connect_headers, shared)
        return ConnectRecord(
            topic, partition, key_schema, key_value, value_schema, value_value, timestamp, connect_headers, shared
        )

    def transform(self, record: ConnectRecord) -> ConnectRecord | None:
        for stage in self.stages:
            if stage.predicate is None or stage.predicate.test(record) != stage.negate:
                result = stage.transform.apply(record)
                if result is None:
                    self.dropped += 1
                    return None
                record = result
        return record

    def write(self, record: ConnectRecord) -> Output:
        """The record as Kafka gets it: its key and value by their converters, each header as SimpleHeaderConverter
        writes it (``Values.convertToString`` in UTF-8)."""
        headers: list[tuple[str, str | bytes | None]] = []
        for h in record.headers:
            text_ = convert_to_string(h.value, h.schema)
            headers.append((h.key, None if text_ is None else text_.encode()))
        return Output(
            record.topic,
            record.partition,
            self.key_converter.from_connect(record.topic, record.key_schema, record.key, record.headers),
            self.value_converter.from_connect(record.topic, record.value_schema, record.value, record.headers),
            headers,
        )

    def process(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
    ) -> Output | None:
        """The record as Kafka gets it, or ``None`` when a transform dropped it (or failed on it, with
        ``errors.tolerance=all``). Raises ``DataError`` when a transform or converter fails on it."""
        fused = self._fused
        pending = None
        if fused is not None:
            result = fused.process(topic, key, value)
            if isinstance(result, tuple):
                self._last.record = None
                return Output(topic, partition, result[0], result[1], _header_bytes(headers))
            pending = result
        try:
            transformed = self.transform(self.record(topic, key, value, headers, partition))
            output = None if transformed is None else self.write(transformed)
            if pending is not None:
                same = output is not None and (output.topic, output.partition, output.headers) == (
                    topic,
                    partition,
                    _header_bytes(headers),
                )
                pending.settle(
                    topic, None if output is None else output.key, None if output is None else output.value, same
                )
            return output
        except DataError as exc:
            if not self.tolerate_errors:
                raise
            self.skipped += 1
            if self.log_errors:
                log.error(
                    "errors.tolerance=all: skipped a record of %s the transforms or converters failed on: %s",
                    topic,
                    exc,
                )
            return None


__all__ = [
    "DATE",
    "TIME",
    "ChainConfigError",
    "DataError",
    "Header",
    "Output",
    "RecordPipeline",
    "Stage",
    "UnsupportedClassError",
    "build_converter",
    "build_stages",
    "registry",
]
