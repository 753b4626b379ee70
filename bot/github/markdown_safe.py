"""Escaping untrusted text (commit titles, frames, series ids, author names) for GitHub markdown.

GitHub renders a comment in two passes: CommonMark/GFM turns the text into HTML, then filters
walk the HTML's text nodes and turn ``@user`` into a mention (and a notification), ``#123`` and
``GH-123`` into issue links (and cross-reference events on those issues), ``:x:`` into an emoji,
and URLs into links. A backslash escape only reaches the first pass: ``\\@org`` still mentions.
So the rules here are:

* markdown punctuation that can start a construct (``\\ ` * _ [ ] ( ) # | ~ ! $``, and a
  leading ``-``, ``+``, ``=`` or ``1.``) gets a backslash; ``&``, ``<``, ``>`` become the
  entities ``&amp;``, ``&lt;``, ``&gt;``, so no HTML tag, comment (``<!--``, ``-->``) or
  ``</details>`` survives, and a literal ``&#64;`` is shown as written instead of decoding to ``@``;
* the second-pass patterns are broken with a zero-width space (U+200B, invisible when rendered):
  ``@\u200borg/team`` (the technique Dependabot and Renovate use for release notes: no mention, no
  notification), ``#\u200b123``, ``GH-\u200b123``, ``:\u200bx:`` (no emoji), ``https:\u200b//``
  and ``www\u200b.`` (URLs stay readable but are not clickable: a link in a bot comment reads as
  endorsed by the bot, and attacker text must not get that);
* newlines, tabs and other line breaks become spaces (a table cell or list item stays one line);
  control and format characters (C0/C1 controls, bidirectional overrides, zero-width characters
  of the input) are dropped, so text cannot reorder what the reader sees;
* ``max_chars`` counts the characters the reader sees: text is cut before escaping (an escape is
  never split) and ends with ``…`` when cut.

Repository-configured autolink prefixes (``JIRA-123``) are not known here and are left alone.
Code spans and blocks are not processed by GitHub's second pass, but their raw text is still
read by tools (and by regbot itself when it looks for its hidden marker), so they break ``<`` +
letter, ``-->`` and ``@`` with the same zero-width space. None of the functions here can produce
text that closes a surrounding ``<details>`` or an HTML comment such as regbot's marker.
"""

from __future__ import annotations

import re
import unicodedata

from regbot.errors import InputError

__all__ = ["ZWSP", "ELLIPSIS", "clean", "code_block", "code_span", "inline", "truncate"]

ZWSP = "\u200b"
ELLIPSIS = "…"

_LINE_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
_BACKSLASHED = frozenset("\\`*_[]()#|~!$")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_LEADING_BACKSLASHED = frozenset("-+=")
_LEADING_ORDERED = re.compile(r"\d{1,9}[.)]")
_INFO_STRING = re.compile(r"[A-Za-z0-9_+-]*")
_BACKTICK_RUN = re.compile(r"`+")
_HTML_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_COMMENT_CLOSER = re.compile(r"--(?=!?>)")
_MENTION = re.compile(r"@")
_MARKER_NAME = re.compile(r"(?i)(?<=regbot:)(?=v)")
_SPACE_RUN = re.compile(r" {2,}")


def clean(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with line breaks and tabs as spaces (or kept as ``\\n`` when ``keep_newlines``),
    control, format and surrogate characters dropped, runs of spaces collapsed (not when
    ``keep_newlines``: code keeps its layout) and the ends stripped."""
    if not isinstance(text, str):
        raise InputError("markdown text", "a string", type(text).__name__)
    if keep_newlines:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    out = []
    for ch in text:
        if keep_newlines and ch == "\n":
            out.append(ch)
        elif ch in _LINE_BREAKS:
            out.append(" ")
        elif unicodedata.category(ch) not in _DROPPED_CATEGORIES:
            out.append(ch)
    joined = "".join(out)
    if keep_newlines:
        return joined.strip("\n")
    return _SPACE_RUN.sub(" ", joined).strip()


def truncate(text: str, max_chars: int | None) -> str:
    """``text`` cut to ``max_chars`` characters, the last one ``…`` when anything was cut."""
    if max_chars is None:
        return text
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InputError("max_chars", "a positive whole number of characters", max_chars)
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1].rstrip() + ELLIPSIS


def inline(text: str, max_chars: int | None = None) -> str:
    """Untrusted ``text`` as inline markdown (a table cell, a list item, a sentence): shown as
    written, never a mention, link, image, emoji, HTML, heading or list (see the module
    docstring). ``max_chars`` bounds the characters the reader sees."""
    shown = truncate(clean(text), max_chars)
    pieces: list[str] = []
    for i, ch in enumerate(shown):
        nxt = shown[i + 1] if i + 1 < len(shown) else ""
        if ch in _ENTITIES:
            piece = _ENTITIES[ch]
        elif ch in _BACKSLASHED or (i == 0 and ch in _LEADING_BACKSLASHED):
            piece = "\\" + ch
        else:
            piece = ch
        if _breaks_after(shown, i, nxt):
            piece += ZWSP
        pieces.append(piece)
    if (match := _LEADING_ORDERED.match(shown)) is not None:
        # "1. text" at the start of a line is an ordered list; "1\. text" is not.
        end = match.end() - 1
        if not pieces[end].startswith("\\"):
            pieces[end] = "\\" + pieces[end]
    return "".join(pieces)


def _breaks_after(text: str, i: int, nxt: str) -> bool:
    """Whether a zero-width space goes after ``text[i]`` to break a GitHub autolink pattern."""
    ch = text[i]
    if ch == "@":  # @user, @org/team, user@example.com
        return True
    if ch == "#":  # #123, owner/repo#123
        return nxt.isdigit()
    if ch == ":":  # :emoji:, https://, mailto:
        return nxt != "" and not nxt.isspace()
    if ch == "-" and i >= 2 and text[i - 2 : i].upper() == "GH":  # GH-123
        return nxt.isdigit() and (i == 2 or not text[i - 3].isalnum())
    if ch in "wW" and i >= 2 and text[i - 2 : i + 1].lower() == "www":  # www.example.com
        return nxt == "." and (i == 2 or not text[i - 3].isalnum())
    return False


def _neutralise_code(text: str) -> str:
    """Raw text of code that can neither open nor close HTML (``<img``, ``</details>``,
    ``<!--``, ``-->``) nor read as a mention or as regbot's marker (``regbot:v1``) to a tool
    scanning the raw comment."""
    text = _HTML_OPENER.sub("<" + ZWSP, text)
    text = _COMMENT_CLOSER.sub("--" + ZWSP, text)
    text = _MARKER_NAME.sub(ZWSP, text)
    return _MENTION.sub("@" + ZWSP, text)


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(text)), default=0)


def code_span(text: str, max_chars: int | None = None, *, in_table: bool = False) -> str:
    """``text`` as one inline code span (a frame, a series id): one line, fenced by more
    backticks than any run inside; text that starts or ends with a backtick is padded with a
    space on each side (CommonMark strips exactly one, so the backtick is shown). ``in_table`` escapes ``|``
    (GFM splits table cells at ``|`` even inside code spans; elsewhere ``\\|`` would show its
    backslash). Only for markdown context: raw HTML lines do not parse code spans."""
    shown = _neutralise_code(truncate(clean(text), max_chars))
    if in_table:
        shown = shown.replace("|", "\\|")
    if not shown:
        return "` `"
    fence = "`" * (_longest_backtick_run(shown) + 1)
    if shown[0] == "`" or shown[-1] == "`":
        return f"{fence} {shown} {fence}"
    return f"{fence}{shown}{fence}"


def code_block(text: str, info: str = "") -> str:
    """``text`` as a fenced code block: lines kept, a backtick fence (at least three) longer than
    any backtick run inside, so no line of the text can close it early. ``info`` is the
    language tag (letters, digits, ``_``, ``+``, ``-``)."""
    if not isinstance(info, str) or not _INFO_STRING.fullmatch(info):
        raise InputError("code block language", "letters, digits, '_', '+' or '-'", info)
    body = _neutralise_code(clean(text, keep_newlines=True))
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    return f"{fence}{info}\n{body}\n{fence}"
