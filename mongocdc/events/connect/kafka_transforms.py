"""Kafka Connect 4.3.1's own single message transforms and predicates (``connect-transforms``), as Connect runs them.

Registered by their Java class names in :data:`TRANSFORMS` and :data:`PREDICATES` (``chain.py`` merges them):
``RegexRouter``, ``TimestampRouter``, ``InsertField``, ``ReplaceField``, ``MaskField``, ``ValueToKey``,
``ExtractField``, ``HoistField``, ``Cast``, ``Flatten``, ``HeaderFrom``, ``InsertHeader``, ``DropHeaders``,
``SetSchemaMetadata``, ``TimestampConverter``, ``Filter`` (each with its ``$Key``/``$Value`` variants where Kafka
has them) and the predicates ``TopicNameMatches``, ``RecordIsTombstone``, ``HasHeaderKey``. Each takes every
option its Java class defines in 4.3.1, refuses what that class's ``ConfigDef`` refuses, and fails (``DataError``)
on the records the Java class throws on, whatever Java exception that is.

Matching Connect byte for byte needs some of the JVM's own behaviour, which the modules below this one write in
Python: the Java class of a value, Java's numeric conversions and ``java.util.HashMap``'s iteration order (the
order of the maps the schemaless paths build, which JsonConverter writes) in :mod:`java_lang`;
``SimpleDateFormat`` with the hybrid Julian/Gregorian calendar (TimestampRouter, TimestampConverter) in
:mod:`java_time`; ``Values.parseString`` (InsertHeader's literal), ``dateFormatFor`` (Cast to a string) and the
``Values.convertTo*`` MaskField's replacement uses in :mod:`values`. In :mod:`kafka_transforms_common`:
``SchemaUtil.copySchemaBasics``, ``Requirements`` and ``SchemaBuilder``'s field checks.

The transforms themselves live in sibling modules, imported here: :mod:`kafka_transforms_fields` (``InsertField``,
``ReplaceField``, ``MaskField``, ``ValueToKey``, ``ExtractField``, ``HoistField``), :mod:`kafka_transforms_cast`
(``Cast``, ``Flatten``) and :mod:`kafka_transforms_routing` (the routers, the header transforms,
``SetSchemaMetadata``, ``TimestampConverter``, ``Filter`` and the predicates).

Known limits (corners Debezium's records do not reach): a schemaless value cast to ``float32`` is written as a
double (a schemaless value remembers no Java class, :mod:`java_lang`); an instant outside Python's years 1 to
9999 fails the record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from mongocdc.events.connect.base import PredicateFactory, Transform, TransformFactory
from mongocdc.events.connect.kafka_transforms_cast import Cast, Flatten
from mongocdc.events.connect.kafka_transforms_common import _PREFIX, KEY, VALUE, _Side
from mongocdc.events.connect.kafka_transforms_fields import (
    ExtractField,
    HoistField,
    InsertField,
    MaskField,
    ReplaceField,
    ValueToKey,
)
from mongocdc.events.connect.kafka_transforms_routing import (
    DropHeaders,
    Filter,
    HasHeaderKey,
    HeaderFrom,
    InsertHeader,
    RecordIsTombstone,
    RegexRouter,
    SetSchemaMetadata,
    TimestampConverter,
    TimestampRouter,
    TopicNameMatches,
)

# --- registration ---------------------------------------------------------------------------------------------


def _sided(name: str, cls: Callable[[Mapping[str, str], _Side], Transform]) -> dict[str, TransformFactory]:
    """The ``$Key`` and ``$Value`` variants of a transform."""
    return {
        f"{_PREFIX}{name}$Key": lambda options: cls(options, KEY),
        f"{_PREFIX}{name}$Value": lambda options: cls(options, VALUE),
    }


TRANSFORMS: Final[dict[str, TransformFactory]] = {
    _PREFIX + "RegexRouter": RegexRouter,
    _PREFIX + "TimestampRouter": TimestampRouter,
    _PREFIX + "ValueToKey": ValueToKey,
    _PREFIX + "InsertHeader": InsertHeader,
    _PREFIX + "DropHeaders": DropHeaders,
    _PREFIX + "Filter": Filter,
    **_sided("InsertField", InsertField),
    **_sided("ReplaceField", ReplaceField),
    **_sided("MaskField", MaskField),
    **_sided("ExtractField", ExtractField),
    **_sided("HoistField", HoistField),
    **_sided("Cast", Cast),
    **_sided("Flatten", Flatten),
    **_sided("HeaderFrom", HeaderFrom),
    **_sided("SetSchemaMetadata", SetSchemaMetadata),
    **_sided("TimestampConverter", TimestampConverter),
}

PREDICATES: Final[dict[str, PredicateFactory]] = {
    _PREFIX + "predicates.TopicNameMatches": TopicNameMatches,
    _PREFIX + "predicates.RecordIsTombstone": RecordIsTombstone,
    _PREFIX + "predicates.HasHeaderKey": HasHeaderKey,
}

__all__ = ["PREDICATES", "TRANSFORMS"]
