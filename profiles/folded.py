"""Reader of folded stacks (`frame;frame;...;frame COUNT`), as stackcollapse-*.pl and py-spy write."""

from __future__ import annotations

import re
from itertools import repeat
from typing import cast

import numpy as np
import numpy.typing as npt

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples
from regbot.profiles.stacks import StackTable

# A `(` followed, before any `)` or `(`, by a `;`: a semicolon inside parentheses.
_SEMICOLON_IN_PARENS = re.compile(r"\([^()]*;")


def split_folded(stack_text: str) -> list[str]:
    """Frames of a folded stack, root first.

    The format separates frames with `;` and has no escape, so a `;` inside a frame can only be
    told apart by context. Writers avoid it (stackcollapse-perf rewrites `;` in symbols to `:`),
    but py-spy writes file names as they are. Rule: a piece whose `(` outnumber its `)` is joined
    with the pieces after it until the parentheses balance (or the stack ends), so
    ``f (a;b.py:3)`` stays one frame. An empty text is the empty stack (py-spy writes one for
    samples with no Python frame) and has no frames.
    """
    if not stack_text:
        return []
    pieces = stack_text.split(";")
    if "(" not in stack_text or not _SEMICOLON_IN_PARENS.search(stack_text):
        return pieces
    frames: list[str] = []
    pending: str | None = None
    depth = 0
    for piece in pieces:
        pending = piece if pending is None else f"{pending};{piece}"
        depth += piece.count("(") - piece.count(")")
        if depth <= 0:
            frames.append(pending)
            pending, depth = None, 0
    if pending is not None:
        frames.append(pending)
    return frames


def parse_folded(
    data: bytes, *, source: str, table: StackTable, at_s: float | None, options: ParseOptions
) -> ProfileSamples:
    """Parse one folded file: every line is one stack and its sample count, all in one bucket.

    The whole file is one time bucket at ``at_s`` (from ``--at`` or the file name). Blank lines
    are skipped; a line ``" 5"`` (empty stack, py-spy's idle or native-only samples) counts
    toward the bucket's total but contains no frame. Counts may be integers or decimals (some
    tools write weighted folded files); negative, non-finite or missing counts are errors that
    name the line. O(lines); a stack seen before costs one dictionary lookup of its bytes.
    Frame text is UTF-8; bytes that are not (native symbols can be anything) are kept with
    ``surrogateescape`` rather than refused.
    """
    if at_s is None:
        raise InputError(
            source,
            "a time for this folded file: pass --at, or start the file name with epoch seconds "
            "or an ISO 8601 time (1732262400.folded, 2026-11-22T10:00:00Z-web01.folded)",
        )
    lines = data.splitlines()
    try:
        stack_ids, weights = _parse_lines_fast(lines, table)
    except ValueError:
        stack_ids, weights_list = _parse_lines_checked(lines, table, source)
        weights = np.array(weights_list, dtype=np.float64)
    ids = np.array(stack_ids, dtype=np.int64)
    return ProfileSamples(source, np.full(len(ids), float(at_s)), ids, weights, "samples")


def _parse_lines_fast(
    lines: list[bytes], table: StackTable
) -> tuple[list[int], npt.NDArray[np.float64]]:
    """The hot path, on bytes and in C-level ``map``/``zip`` loops (frames are decoded once, when a
    stack is first seen). Takes only well-formed files with integer counts; anything else raises
    ValueError and the checked path parses the file again and names the bad line."""
    if not lines:
        return [], np.zeros(0, dtype=np.float64)
    stacks, separators, counts = zip(*map(bytes.rpartition, lines, repeat(b" ")))
    if b"" in separators:
        raise ValueError("a line without a count")
    known = list(map(table._folded_ids.get, stacks))
    if None in known:
        intern = table.intern_folded
        stack_ids = [intern(stack) if sid is None else sid for sid, stack in zip(known, stacks)]
    else:
        stack_ids = cast(list[int], known)
    weights = np.array(list(map(int, counts)), dtype=np.float64)
    if weights.min() < 0:
        raise ValueError("a negative count")
    return stack_ids, weights


def _parse_lines_checked(
    lines: list[bytes], table: StackTable, source: str
) -> tuple[list[int], list[float]]:
    stack_ids: list[int] = []
    weights: list[float] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        stack, sep, count_text = line.rstrip().rpartition(b" ")
        try:
            count = float(count_text)
        except ValueError:
            count = float("nan")
        if not sep or not (count >= 0 and count != float("inf")):
            raise InputError(
                f"{source}:{number}",
                "'frame;frame;...;frame COUNT' with a count >= 0",
                line.decode("utf-8", "replace"),
            )
        stack_ids.append(table.intern_folded(stack))
        weights.append(count)
    return stack_ids, weights
