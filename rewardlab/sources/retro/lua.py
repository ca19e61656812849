"""The contest script's ``level_max_x`` table, read from Lua text, and its ``level_key``.

:func:`parse_level_max_x` reads the table constructor ``level_max_x = {...}``
from a ``script.lua``: ``["zone=Z,act=A"] = EXPR`` fields, ``EXPR`` an
integer expression of decimal or hexadecimal numbers with ``+ - *`` and
parentheses (S3K writes ``0x3080 + 0x1049``); ``--`` and ``--[[ ]]``
comments are skipped.  Only the constructor is read: a top-level statement
that assigns ``level_max_x`` or one of its keys again (outside every
function) is refused.  Errors are
:class:`~rewardlab.core.errors.DataFormatError` naming the file, line and
column.  :mod:`rewardlab.sources.retro.levels` re-exports these names.

Examples
--------
>>> parse_level_max_x('level_max_x = { ["zone=1,act=0"] = 0x100 }')
{'zone=1,act=0': 256}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rewardlab.core.errors import DataFormatError, FileAccessError, ParameterError

__all__ = ["level_key", "parse_level_key", "parse_level_max_x", "read_level_max_x"]

_KEY = re.compile(r"zone=(-?\d+),act=(-?\d+)")


def level_key(zone: int, act: int) -> str:
    """The key ``script.lua`` looks ``level_max_x`` up by: ``string.format("zone=%d,act=%d", zone, act)``.

    Examples
    --------
    >>> level_key(13, 1)
    'zone=13,act=1'
    """
    return f"zone={int(zone)},act={int(act)}"


def parse_level_key(key: str) -> tuple[int, int]:
    """``(zone, act)`` of a ``"zone=Z,act=A"`` key (ParameterError for anything else).

    Examples
    --------
    >>> parse_level_key("zone=22,act=1")
    (22, 1)
    """
    match = _KEY.fullmatch(str(key))
    if match is None:
        raise ParameterError("key", 'should read "zone=Z,act=A" with integers Z and A, as script.lua\'s '
                             "level_key() writes it", key)
    return int(match.group(1)), int(match.group(2))


# --------------------------------------------------------------------------
# Lua: the level_max_x constructor
# --------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n)
  | (?P<comment>--(?:\[(?P<eq>=*)\[)?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<longstring>\[(?P<seq>=*)\[)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<symbol>\.\.\.|\.\.|==|~=|<=|>=|[-+*/%^#<>=(){}\[\];:,.])
""", re.VERBOSE)

_OPENERS = {"function", "if", "do", "repeat"}
_CLOSERS = {"end", "until"}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    line: int
    column: int  # 0-based, as DataFormatError counts columns


def _tokens(text: str, path: str) -> list[_Token]:
    """Lua 5.1 tokens of ``text`` without blanks and comments (names, numbers, strings, symbols)."""
    out, pos, line, line_start = [], 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise DataFormatError(path, line, pos - line_start, "lua_syntax",
                                  f"cannot read {text[pos:pos + 12]!r} as Lua")
        kind = None
        for group in ("space", "newline", "comment", "string", "longstring", "number", "name", "symbol"):
            if m.group(group) is not None:
                kind = group
                break
        end = m.end()
        if kind == "comment":
            if m.group("eq") is not None:  # --[[ ... ]] or --[==[ ... ]==]
                close = "]" + m.group("eq") + "]"
                stop = text.find(close, end)
                end = len(text) if stop < 0 else stop + len(close)
            else:
                stop = text.find("\n", end)
                end = len(text) if stop < 0 else stop
        elif kind == "longstring":
            close = "]" + m.group("seq") + "]"
            stop = text.find(close, end)
            if stop < 0:
                raise DataFormatError(path, line, pos - line_start, "lua_syntax", "a long string is never closed")
            end = stop + len(close)
            out.append(_Token("string", text[m.end():stop], line, pos - line_start))
        elif kind in ("string", "number", "name", "symbol"):
            out.append(_Token(kind, m.group(kind), line, pos - line_start))
        newlines = text.count("\n", pos, end)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", pos, end) + 1
        pos = end
    return out


def _string_value(token: _Token) -> str:
    body = token.text[1:-1] if token.text[:1] in "\"'" else token.text
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Expression:
    """A recursive-descent reader of an integer expression (``+ - *``, unary minus, parentheses)."""

    def __init__(self, tokens: list[_Token], pos: int, path: str):
        self.tokens, self.pos, self.path = tokens, pos, path

    def error(self, message: str, token: _Token | None = None) -> DataFormatError:
        token = token or self.tokens[min(self.pos, len(self.tokens) - 1)]
        return DataFormatError(self.path, token.line, token.column, "level_max_x", message,
                               hint="Write each end as an integer (decimal or 0x hexadecimal, with + - * and "
                               "parentheses), as stable-retro's own script.lua does.")

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def sum(self) -> int:
        value = self.product()
        while (t := self.peek()) is not None and t.kind == "symbol" and t.text in "+-":
            self.pos += 1
            value = value + self.product() if t.text == "+" else value - self.product()
        return value

    def product(self) -> int:
        value = self.unary()
        while (t := self.peek()) is not None and t.kind == "symbol" and t.text == "*":
            self.pos += 1
            value *= self.unary()
        return value

    def unary(self) -> int:
        t = self.peek()
        if t is None:
            raise self.error("the table ends in the middle of an end x", self.tokens[-1])
        if t.kind == "symbol" and t.text == "-":
            self.pos += 1
            return -self.unary()
        if t.kind == "symbol" and t.text == "(":
            self.pos += 1
            value = self.sum()
            close = self.peek()
            if close is None or close.text != ")":
                raise self.error("a parenthesis is never closed", t)
            self.pos += 1
            return value
        if t.kind == "number":
            self.pos += 1
            text = t.text.lower()
            if text.startswith("0x"):
                return int(text, 16)
            if re.fullmatch(r"\d+", text):
                return int(text)
            number = float(text)
            if number.is_integer():
                return int(number)
            raise self.error(f"end x {t.text} is not a whole number of pixels", t)
        raise self.error(f"{t.text!r} is not part of an integer end x", t)


def parse_level_max_x(text: str, *, path: str = "<script>") -> dict[str, int]:
    """The ``level_max_x`` table of the Lua script ``text``: ``{"zone=Z,act=A": end_x}``, in the script's order.

    ``path`` names the script in errors.  Raises
    :class:`~rewardlab.core.errors.DataFormatError` (file, line, column) when
    the script has no ``level_max_x = {...}`` constructor, a field is not
    ``["zone=Z,act=A"] = EXPR``, a key repeats, an end is not an integer
    expression, or a top-level statement assigns the table again.

    Examples
    --------
    >>> parse_level_max_x('level_max_x = {\\n  ["zone=0,act=0"] = 0x10 + 2, -- end\\n}')
    {'zone=0,act=0': 18}
    """
    tokens = _tokens(text, path)
    depth, start, i = 0, None, 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "name" and t.text in _OPENERS:
            depth += 1
        elif t.kind == "name" and t.text in _CLOSERS:
            depth -= 1
        elif (depth == 0 and t.kind == "name" and t.text == "level_max_x"
              and (i == 0 or tokens[i - 1].text not in (".", ":", "local"))):
            after = tokens[i + 1] if i + 1 < len(tokens) else None
            if after is not None and after.text in ("=", "[", "."):
                if start is not None:
                    raise DataFormatError(path, t.line, t.column, "level_max_x",
                                          "level_max_x is assigned again outside any function; rewardlab reads "
                                          "the table constructor only",
                                          hint="Put every level in the level_max_x = { ... } table itself.")
                if after.text != "=" or i + 2 >= len(tokens) or tokens[i + 2].text != "{":
                    raise DataFormatError(path, t.line, t.column, "level_max_x",
                                          "level_max_x is not set by a table constructor level_max_x = { ... }",
                                          hint="Write the table as stable-retro's script.lua does.")
                start = i + 2
        i += 1
    if start is None:
        raise DataFormatError(path, None, None, "level_max_x", "the script has no level_max_x = { ... } table "
                              "at its top level, so no level has an end x",
                              hint="Use a Sonic integration's script.lua (or a copy of it that you edited), or "
                              "a JSON / TOML level table (see rewardlab.sources.retro.levels.load_levels).")
    return _read_constructor(tokens, start, path)


def _read_constructor(tokens: list[_Token], start: int, path: str) -> dict[str, int]:
    """The fields of the constructor whose ``{`` is ``tokens[start]``."""
    table: dict[str, int] = {}
    reader = _Expression(tokens, start + 1, path)
    while True:
        t = reader.peek()
        if t is None:
            raise DataFormatError(path, tokens[start].line, tokens[start].column, "level_max_x",
                                  "the level_max_x table is never closed with '}'")
        if t.text == "}":
            return table
        if t.text != "[" or reader.pos + 3 >= len(tokens) or tokens[reader.pos + 1].kind != "string" \
                or tokens[reader.pos + 2].text != "]" or tokens[reader.pos + 3].text != "=":
            raise reader.error(f'{t.text!r} does not start a ["zone=Z,act=A"] = END field of level_max_x', t)
        key_token = tokens[reader.pos + 1]
        key = _string_value(key_token)
        try:
            zone, act = parse_level_key(key)
        except ParameterError:
            raise DataFormatError(path, key_token.line, key_token.column, "level_max_x",
                                  f"key {key!r} is not \"zone=Z,act=A\" as level_key() formats it") from None
        key = level_key(zone, act)
        if key in table:
            raise DataFormatError(path, key_token.line, key_token.column, "level_max_x",
                                  f"level {key!r} appears twice in level_max_x (Lua would keep the last)",
                                  hint="Keep one end x per level.")
        reader.pos += 4
        table[key] = reader.sum()
        t = reader.peek()
        if t is None:
            raise DataFormatError(path, tokens[start].line, tokens[start].column, "level_max_x",
                                  "the level_max_x table is never closed with '}'")
        if t.text in (",", ";"):
            reader.pos += 1
        elif t.text != "}":
            raise reader.error("expected ',' or '}' after an end x", t)


def read_level_max_x(path) -> dict[str, int]:
    """:func:`parse_level_max_x` of the script file at ``path`` (errors name the file).

    Examples
    --------
    >>> from rewardlab.sources.retro.levels import game_folder
    >>> read_level_max_x(game_folder("SonicAndKnuckles3-Genesis-v0") / "script.lua")["zone=0,act=0"] == 0x3080 + 0x1049
    True
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise FileAccessError(path, f"cannot be read ({err.strerror or err})") from None
    return parse_level_max_x(text, path=str(path))
