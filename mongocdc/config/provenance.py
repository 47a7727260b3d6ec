"""Where an effective setting's value came from: a config file, an environment variable, a flag, or the default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

SourceKind = Literal["file", "env", "flag", "default"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """The source of one property's effective value (``load_settings`` records it, ``config show`` shows it)."""

    kind: SourceKind
    where: str | None = None
    """The config file's path, the environment variable's name or the option, as the kind says."""

    def describe(self) -> str:
        """For people: ``file connector.yaml``, ``env MONGOCDC_TOPIC_PREFIX``, ``flag --name``, ``default``."""
        return self.kind if self.where is None else f"{self.kind} {self.where}"

    def to_dict(self) -> dict[str, str]:
        """For scripts: ``{"source": "env", "variable": "MONGOCDC_TOPIC_PREFIX"}`` (``path``, ``flag``, nothing)."""
        shown: dict[str, str] = {"source": self.kind}
        if self.where is not None:
            shown[_DETAIL[self.kind]] = self.where
        return shown


_DETAIL: Final = {"file": "path", "env": "variable", "flag": "flag", "default": "value"}

DEFAULT: Final = Provenance("default")
"""A property no source set."""
