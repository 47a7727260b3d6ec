"""Keeping secrets out of ``repr``, ``config show``, error messages and logs.

Two rules, applied everywhere a setting or a message leaves the process:

- a value whose key names a secret (``password``, ``secret``, ``token``,
  ``sasl.jaas.config``, ``ssl.key``) is replaced by ``********`` as a whole;
- the password inside a URI (``mongodb://user:pass@host``) is replaced, the
  rest of the URI (user, hosts, options) is kept because operators need it
  to see where mongocdc connects.

``redact_text`` errs on the side of hiding too much: when a password contains
an unescaped ``@`` or ``/`` the host part may be hidden too, but never the
other way round.
"""

from __future__ import annotations

import difflib
import re
from typing import Final

REDACTED: Final = "********"

SECRET_KEY_MARKERS: Final = ("password", "secret", "token", "sasl.jaas.config", "ssl.key")

# Change-stream resume tokens are positions, not credentials; logs need them.
_NOT_SECRET_MARKERS: Final = ("resume.token", "resumetoken")

_MARKERS_RE: Final = "|".join(re.escape(marker).replace(r"\.", r"[._]") for marker in SECRET_KEY_MARKERS)

# scheme://user:password@  — the password runs to the last "@" of the
# whitespace-delimited token, so an unescaped "@" in it is hidden as well.
_URI_CREDENTIALS: Final = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@]*:)(?P<password>\S*)@")

# key=value where the key names a secret: URI options (tlsCertificateKeyFilePassword=…),
# librdkafka-style "sasl.password=…" and the password="…" inside a JAAS config.
_SECRET_ASSIGNMENT: Final = re.compile(
    rf"(?i)\b(?P<name>[\w.\-]*(?:{_MARKERS_RE})[\w.\-]*)(?P<sep>=)(?P<value>[^&\s]+)"
)

# NAME:value pairs such as authMechanismProperties=AWS_SESSION_TOKEN:…
_SECRET_PAIR: Final = re.compile(r"(?i)\b(?P<name>\w*(?:password|secret|token)\w*)(?P<sep>:)(?P<value>[^,&\s]+)")

# 'key': 'value' and "key": "value" — reprs of dicts and JSON documents.
_QUOTED_SECRET: Final = re.compile(
    rf"""(?i)(?P<kq>['"])(?P<name>[^'"\s]*(?:{_MARKERS_RE})[^'"\s]*)(?P=kq)(?P<sep>\s*[:=]\s*)"""
    r"""(?P<vq>['"])(?P<value>(?:\\.|(?!(?P=vq)).)*)(?P=vq)"""
)


def is_secret_key(key: str) -> bool:
    """Whether values under ``key`` are secrets (``kafka.sasl.password``, ``MONGOCDC_KAFKA_SASL_PASSWORD``).

    A misspelt marker counts too (``kafka.sasl.pasword``, ``secert``): the value was meant to be
    secret, and a typo must not print it in clear.
    """
    normalized = key.lower().replace("_", ".")
    if any(marker in normalized for marker in _NOT_SECRET_MARKERS):
        return False
    if any(marker in normalized for marker in SECRET_KEY_MARKERS):
        return True
    return any(_looks_like(word) for word in re.split(r"[.\-]", normalized))


_SECRET_WORDS: Final = ("password", "passwd", "secret", "token")


def _looks_like(word: str) -> bool:
    """``word`` is one or two typing mistakes away from a secret marker (``pasword``, ``passowrd``, ``secert``)."""
    return len(word) >= 5 and any(
        difflib.SequenceMatcher(None, word, marker).ratio() >= 0.8 for marker in _SECRET_WORDS
    )


# A value that is one URI: its password runs to the last "@" of the whole value, spaces included.
_WHOLE_URI_CREDENTIALS: Final = re.compile(
    r"^(?P<head>\s*[A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@]*:)(?P<password>.*)@", re.DOTALL
)


def redact_uri(uri: str) -> str:
    """``uri`` with the password of its user info and any secret option replaced by ``********``.

    ``mongodb://user:pass@h1,h2/?authSource=admin`` → ``mongodb://user:********@h1,h2/?authSource=admin``.
    A URI without a password comes back unchanged. Unlike free text, the whole value is the URI, so
    a password with a space in it (``my secret``, which free text cannot tell from the next word) is
    hidden up to the last ``@``.
    """
    return redact_text(_WHOLE_URI_CREDENTIALS.sub(rf"\g<head>{REDACTED}@", uri, count=1))


def redact_text(text: str) -> str:
    """``text`` with every credential-bearing URI and ``secret=value`` pair redacted.

    Meant for free text on its way to an operator: exception messages,
    tracebacks and log lines.
    """
    text = _URI_CREDENTIALS.sub(rf"\g<head>{REDACTED}@", text)
    text = _SECRET_ASSIGNMENT.sub(_redact_assignment, text)
    text = _SECRET_PAIR.sub(_redact_assignment, text)
    return _QUOTED_SECRET.sub(_redact_quoted, text)


def redact_value(key: str, value: object, *, secret: bool = False) -> object:
    """``value`` as it may be shown under ``key``.

    ``secret`` marks a property whose value carries credentials (the MongoDB
    connection string): a URI keeps everything but its password, anything
    else is hidden entirely.
    """
    if value is None:
        return None
    if is_secret_key(key):
        return REDACTED
    if isinstance(value, str):
        if secret:
            return redact_uri(value) if "://" in value else REDACTED
        return redact_text(value)
    return value


def _redact_assignment(match: re.Match[str]) -> str:
    if not is_secret_key(match.group("name")) or match.group("value").startswith(REDACTED):
        return match.group(0)
    return match.group("name") + match.group("sep") + REDACTED


def _redact_quoted(match: re.Match[str]) -> str:
    if not is_secret_key(match.group("name")):
        return match.group(0)
    quote = match.group("vq")
    return f"{match.group('kq')}{match.group('name')}{match.group('kq')}{match.group('sep')}{quote}{REDACTED}{quote}"
