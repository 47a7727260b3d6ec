"""``FrozenMapping``: the read-only, hashable mappings a ``Settings`` holds (client settings, filters)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class FrozenMapping(Mapping[str, str]):
    """A read-only, hashable ``str → str`` mapping, sorted by key (``Settings.kafka_client`` and the like)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, str]) -> None:
        self._data = dict(sorted(data.items()))

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)
