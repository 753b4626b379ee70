"""Reader of folded stacks (`frame;frame;...;frame COUNT`), as stackcollapse-*.pl and py-spy write."""

from __future__ import annotations

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples
from regbot.profiles.stacks import StackTable


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
    if "(" not in stack_text:
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
    name the line. O(lines); a stack seen before costs one dictionary lookup.
    """
    if at_s is None:
        raise InputError(
            source,
            "a time for this folded file: pass --at, or start the file name with epoch seconds "
            "or an ISO 8601 time (1732262400.folded, 2026-11-22T10:00:00Z-web01.folded)",
        )
    text = _decode(data, source)
    lines = text.splitlines()
    try:
        stack_ids, counts = _parse_lines_fast(lines, table)
        weights = np.array(counts, dtype=np.float64)
        if len(weights) and not (np.isfinite(weights).all() and weights.min() >= 0):
            raise ValueError
    except ValueError:
        stack_ids, weights_list = _parse_lines_checked(lines, table, source)
        weights = np.array(weights_list, dtype=np.float64)
    ids = np.array(stack_ids, dtype=np.int64)
    return ProfileSamples(source, np.full(len(ids), float(at_s)), ids, weights, "samples")


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Native symbols are bytes; keep every byte rather than refuse the file.
        return data.decode("utf-8", errors="surrogateescape")


def _parse_lines_fast(lines: list[str], table: StackTable) -> tuple[list[int], list[str]]:
    """The hot loop: no validation beyond what raises ValueError for the checked path to explain."""
    get = table._folded_ids.get
    intern = table.intern_folded
    stack_ids: list[int] = []
    counts: list[str] = []
    add_id = stack_ids.append
    add_count = counts.append
    for line in lines:
        stack, sep, count = line.rpartition(" ")
        if not sep:
            raise ValueError(line)
        stack_id = get(stack)
        add_id(intern(stack) if stack_id is None else stack_id)
        add_count(count)
    return stack_ids, counts


def _parse_lines_checked(
    lines: list[str], table: StackTable, source: str
) -> tuple[list[int], list[float]]:
    stack_ids: list[int] = []
    weights: list[float] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        stack, sep, count_text = line.rstrip().rpartition(" ")
        try:
            count = float(count_text)
        except ValueError:
            count = float("nan")
        if not sep or not (count >= 0 and count != float("inf")):
            raise InputError(
                f"{source}:{number}", "'frame;frame;...;frame COUNT' with a count >= 0", line
            )
        stack_ids.append(table.intern_folded(stack))
        weights.append(count)
    return stack_ids, weights
