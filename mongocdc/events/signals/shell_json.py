"""The mongo shell's relaxed object syntax as JSON (pure): operators write filters as they would in
``mongosh`` (``{status: 'open'}``), and ``additional-conditions`` accepts them."""

from __future__ import annotations

import json
import re
from typing import Final

_BARE_WORD: Final = re.compile(r"[A-Za-z_$][\w$]*")


def shell_to_json(text: str) -> str:
    """The mongo shell's relaxed object syntax → JSON: quote bare keys, turn 'single' into "double" quotes."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif ch == "'":
            j = i + 1
            chars: list[str] = []
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    chars.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                chars.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(chars) + '"')
            i = j + 1
        else:
            match = _BARE_WORD.match(text, i)
            if match is None or (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$.")):
                out.append(ch)
                i += 1
                continue
            word = match.group()
            k = match.end()
            while k < n and text[k].isspace():
                k += 1
            out.append(json.dumps(word) if k < n and text[k] == ":" else word)
            i = match.end()
    return "".join(out)
