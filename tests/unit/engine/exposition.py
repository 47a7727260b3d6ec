"""A tiny parser of the Prometheus text exposition format 0.0.4, strict about what it reads (the metrics'
and the metrics server's tests)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass
class Family:
    help: str | None = None
    type: str | None = None
    samples: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)


def unescape_help(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            out.append({"\\": "\\", "n": "\n"}[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_labels(text: str, i: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """Parse ``{a="x",b="y"}`` starting at ``text[i] == "{"``; return the labels and the index after ``}``."""
    assert text[i] == "{"
    i += 1
    labels: list[tuple[str, str]] = []
    while text[i] != "}":
        match = LABEL_NAME.match(text, i)
        assert match, f"bad label name at {text[i:]!r}"
        name = match.group()
        i = match.end()
        assert text[i : i + 2] == '="', f'expected =" at {text[i:]!r}'
        i += 2
        value: list[str] = []
        while text[i] != '"':
            if text[i] == "\\":
                value.append({"\\": "\\", '"': '"', "n": "\n"}[text[i + 1]])
                i += 2
            else:
                assert text[i] != "\n"
                value.append(text[i])
                i += 1
        i += 1
        labels.append((name, "".join(value)))
        if text[i] == ",":
            i += 1
    return tuple(labels), i + 1


def parse_exposition(text: str) -> dict[str, Family]:
    assert text.endswith("\n")
    families: dict[str, Family] = {}
    for line in text[:-1].split("\n"):
        assert line, "no blank lines"
        if line.startswith("# HELP "):
            name, _, help_text = line[len("# HELP ") :].partition(" ")
            family = families.setdefault(name, Family())
            assert family.help is None and not family.samples, f"HELP of {name} repeated or after samples"
            family.help = unescape_help(help_text)
        elif line.startswith("# TYPE "):
            name, _, kind = line[len("# TYPE ") :].partition(" ")
            family = families.setdefault(name, Family())
            assert family.type is None and not family.samples, f"TYPE of {name} repeated or after samples"
            assert kind in {"counter", "gauge", "histogram", "summary", "untyped"}
            family.type = kind
        else:
            assert not line.startswith("#")
            match = NAME.match(line)
            assert match, line
            name, i = match.group(), match.end()
            labels: tuple[tuple[str, str], ...] = ()
            if line[i] == "{":
                labels, i = parse_labels(line, i)
            assert line[i] == " "
            value = float(line[i + 1 :])
            assert name in families, f"sample of {name} before its TYPE"
            assert labels not in families[name].samples, f"duplicate sample {name}{labels}"
            families[name].samples[labels] = value
    return families


def sample(families: dict[str, Family], name: str, **labels: str) -> float:
    key = tuple(sorted(labels.items()))
    for got, value in families[name].samples.items():
        if tuple(sorted(got)) == key:
            return value
    raise KeyError(f"{name}{labels} not in {families[name].samples}")
