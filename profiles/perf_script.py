"""Reader of `perf script` text (`perf record -g`): one record per sample, frames as
stackcollapse-perf.pl folds them with its default options, so a recording gives the same frames
whether it was folded first or read here.

Cost: one pass over the lines, O(lines); a stack line seen before costs one dictionary lookup.
100,000 samples of 30 frames (330 MB of text) take about 2.5 s.

Design: docs/design/profiles_perf_script.md
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples
from regbot.profiles.stacks import StackTable

EPOCH_MIN_S = 1e9
"""Timestamps at or above this are epoch seconds (2001-09-09 on); below, seconds since boot."""

_HEADER_FORM = "a sample header 'comm pid[/tid] [cpu] time: [period] event:'"
# The usual header, `comm pid[/tid] [cpu] time: [period] event: [ip sym (dso)]`, in one match; any
# other form goes through the token-by-token reading of `_parse_header`.
_USUAL_HEADER = re.compile(
    r"(?P<comm>\S.*?)\s+-?\d+(?:/-?\d+)?(?:\s+\[\d+\])?\s+(?P<time>\d+\.\d+):"
    r"(?:\s+(?P<period>\d+))?\s+(?P<event>\S*[^\s\d.]\S*):(?:\s+(?P<location>.*?))?\s*"
)
_TOKEN = re.compile(r"\S+")
_PID = re.compile(r"-?\d+(?:/-?\d+)?")
_CPU = re.compile(r"\[\d+\]")
_NUMBER = re.compile(r"\d+(?:\.\d*)?")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]+")
_OFFSET = re.compile(r"\+0x[\da-f]+$")
_GO_METHOD = re.compile(r"\.\(.*\)\.")
_ARGUMENTS = re.compile(r"\((?!anonymous namespace\)).*")
_QUOTES = str.maketrans("", "", "\"'")


@dataclass(frozen=True, slots=True)
class _Header:
    comm: str
    time: str | None
    period: str | None
    event: str | None
    location: str  # the sampled `ip symbol (dso)` perf prints on the header without -g, or ""


def parse_perf_script(
    data: bytes, *, source: str, table: StackTable, at_s: float | None, options: ParseOptions
) -> ProfileSamples:
    """Parse `perf script` output into one record per sample (see the design file).

    Returns times in epoch seconds, stack ids root first (comm, then outermost caller ... leaf),
    and weights of 1 (or the sample period). Errors name ``source:line``.
    """
    if options.sample_type not in (None, "samples", "period"):
        raise InputError(
            "sample_type",
            "'samples' (one per sample) or 'period' (perf's sample period) for perf script input",
            options.sample_type,
        )
    by_period = options.sample_type == "period"
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    headers, stack_ids = _read_samples(lines, source, table)
    count = len(stack_ids)
    ids = np.array(stack_ids, dtype=np.int64)
    times = _times(headers, source, at_s)
    if by_period:
        missing = next((number for number, header in headers if header.period is None), None)
        if missing is not None:
            raise InputError(f"{source}:{missing}", "a period field (sample_type 'period')")
        weights = np.array([float(h.period or 0) for _, h in headers], dtype=np.float64)
    else:
        weights = np.ones(count, dtype=np.float64)
    return ProfileSamples(source, times, ids, weights, "period" if by_period else "samples")


def _times(headers: list[tuple[int, _Header]], source: str, at_s: float | None) -> np.ndarray:
    if not headers:
        return np.zeros(0, dtype=np.float64)
    timed = [h.time is not None for _, h in headers]
    if not any(timed):
        if at_s is None:
            raise InputError(
                source,
                "a time for perf script output without a time field: pass --at, or keep the "
                "time field (perf script -F ...,time,...)",
            )
        return np.full(len(headers), float(at_s))
    if not all(timed):
        number = headers[timed.index(False)][0]
        raise InputError(f"{source}:{number}", "a time field, as the other sample headers have")
    times = np.array([float(h.time or 0) for _, h in headers], dtype=np.float64)
    first = float(times.min())
    if at_s is not None:
        return float(at_s) + (times - first)
    if first < EPOCH_MIN_S:
        raise InputError(
            source,
            "epoch timestamps: these are seconds since boot; pass --at with the time of the first "
            "sample, or record with `perf record -k CLOCK_REALTIME`",
            f"{first:.6f}",
        )
    return times


def _read_samples(
    lines: list[str], source: str, table: StackTable
) -> tuple[list[tuple[int, _Header]], list[int]]:
    """The one pass: (line number, header) and stack id of every kept sample, in file order."""
    intern_frame = table.intern_frame
    intern_stack = table.intern_stack_ids
    caches: dict[bool, dict[str, tuple[int, ...]]] = {False: {}, True: {}}
    headers: list[tuple[int, _Header]] = []
    stack_ids: list[int] = []
    comm_ids: dict[str, int] = {}

    header: _Header | None = None  # the open block's header, None between blocks
    keep = False  # whether the open block's event passes the filter
    java = False
    cache = caches[False]
    frames: list[int] = []  # frame ids of the open block, leaf first
    event_filter: str | None = None

    def close() -> None:
        if keep and header is not None:
            if not frames and header.location:
                frames.extend(_location_ids(header.location, cache, java, intern_frame))
            comm = comm_ids.get(header.comm)
            if comm is None:
                comm = comm_ids[header.comm] = intern_frame(header.comm.replace(" ", "_"))
            frames.append(comm)
            frames.reverse()
            stack_ids.append(intern_stack(tuple(frames)))
        frames.clear()

    for number, line in enumerate(lines, start=1):
        if line[:1] == "\t":
            if header is None:
                raise InputError(f"{source}:{number}", f"{_HEADER_FORM} before stack lines", line)
            if keep:
                ids = cache.get(line)
                if ids is None:
                    ids = cache[line] = _stack_line_ids(line, java, intern_frame, source, number)
                frames += ids
            continue
        if not line or line.isspace():
            close()
            header = None
            continue
        if line[0] == "#":
            continue
        stripped = line.strip()
        if header is not None and line[0] == " " and " " not in stripped:
            continue  # a source line from `perf script -F +srcline`
        try:
            parsed = _parse_header(stripped)
        except ValueError as error:
            raise InputError(
                f"{source}:{number}", "a time in seconds such as 315.379888", str(error)
            ) from None
        if parsed is None:
            if header is not None and line[0] == " " and _HEX.fullmatch(stripped.split()[0]):
                if keep:  # a stack line whose tab became spaces
                    frames += _stack_line_ids(line, java, intern_frame, source, number)
                continue
            raise InputError(
                f"{source}:{number}", f"{_HEADER_FORM} or a tab-indented stack line", line
            )
        close()
        header = parsed
        if event_filter is None:
            event_filter = parsed.event
        keep = parsed.event is None or parsed.event == event_filter
        java = parsed.comm == "java"
        cache = caches[java]
        if keep:
            headers.append((number, parsed))
    close()
    return headers, stack_ids


def _parse_header(text: str) -> _Header | None:
    """The header's fields, or None if ``text`` is not a header. Raises ValueError(time text)."""
    usual = _USUAL_HEADER.fullmatch(text)
    if usual is not None:
        comm, time, period, event, location = usual.group(
            "comm", "time", "period", "event", "location"
        )
        return _Header(comm, time, period, event, location or "")
    tokens = [(match.start(), match.group()) for match in _TOKEN.finditer(text)]
    for index in range(1, len(tokens)):
        if not _PID.fullmatch(tokens[index][1]):
            continue
        fields = _fields_after_pid([token for _, token in tokens], index + 1)
        if fields is None:
            continue
        time, period, event, rest_at = fields
        if time is not None and not _NUMBER.fullmatch(time):
            raise ValueError(time)
        comm = text[: tokens[index][0]].rstrip()
        location = text[tokens[rest_at][0] :] if rest_at < len(tokens) else ""
        return _Header(comm, time, period, event, location)
    return None


def _fields_after_pid(
    tokens: list[str], at: int
) -> tuple[str | None, str | None, str | None, int] | None:
    """(time, period, event, index of the first token after them) from ``tokens[at:]``, or None
    if they do not read as ``[cpu] time: [period] event:`` with at least a time or an event."""
    count = len(tokens)
    if at < count and _CPU.fullmatch(tokens[at]):
        at += 1

    def name(i: int) -> str | None:  # `name:` -> name
        token = tokens[i] if i < count else ""
        return token[:-1] if len(token) > 1 and token[-1] == ":" else None

    def period(i: int) -> bool:
        return i < count and tokens[i].isascii() and tokens[i].isdigit()

    def event(i: int) -> str | None:
        text = name(i)
        return text if text is not None and not _NUMBER.fullmatch(text) else None

    first = name(at)
    if first is not None:
        if (second := event(at + 1)) is not None:
            return first, None, second, at + 2
        if period(at + 1) and (second := event(at + 2)) is not None:
            return first, tokens[at + 1], second, at + 3
        if _NUMBER.fullmatch(first):
            return first, None, None, at + 1
        return None, None, first, at + 1
    if period(at) and (second := event(at + 1)) is not None:
        return None, tokens[at], second, at + 2
    if at == count:
        return None, None, None, at
    return None


def _stack_line_ids(
    line: str, java: bool, intern_frame: Callable[[str], int], source: str, number: int
) -> tuple[int, ...]:
    """Frame ids of one ``ip symbol (dso)`` stack line, leaf first (the order of the file)."""
    ip, _, rest = line.strip().partition(" ")
    if not _HEX.fullmatch(ip):
        raise InputError(f"{source}:{number}", "a stack line '\\tip symbol (dso)'", line)
    return tuple(intern_frame(text) for text in reversed(frame_texts(rest, java)))


def _location_ids(
    location: str,
    cache: dict[str, tuple[int, ...]],
    java: bool,
    intern_frame: Callable[[str], int],
) -> tuple[int, ...]:
    """Frame ids, leaf first, of the ``ip symbol (dso)`` perf prints on a header without -g."""
    ids = cache.get(location)
    if ids is None:
        ip, _, rest = location.partition(" ")
        texts = frame_texts(rest, java) if _HEX.fullmatch(ip) and rest.strip() else []
        ids = cache[location] = tuple(intern_frame(text) for text in reversed(texts))
    return ids


def frame_texts(symbol_and_dso: str, java: bool = False) -> list[str]:
    """Frames of one stack line's ``symbol+0xoff (dso)`` part, outermost first (rules 3-8).

    Usually one frame; none for a dropped symbol, several for an ``a->b`` inline chain.
    ``java`` applies the Java tidying stackcollapse-perf does for the comm ``java``.
    """
    text = symbol_and_dso.strip()
    dso: str | None = None
    if text.endswith(")"):
        symbol, sep, dso_part = text.rpartition(" (")
        if sep:
            text, dso = symbol, dso_part[:-1]
    raw = _OFFSET.sub("", text) if "+0x" in text else text
    if not raw:
        raw = "[unknown]"
    if raw.startswith("("):
        return []
    pieces = raw.split("->")
    while pieces and not pieces[-1]:
        pieces.pop()
    frames: list[str] = []
    for position, func in enumerate(pieces):
        if func == "[unknown]":
            func = f"[{dso.rsplit('/', 1)[-1]}]" if dso is not None and dso != "[unknown]" else func
        func = func.replace(";", ":")
        if not _GO_METHOD.search(func):
            func = _ARGUMENTS.sub("", func, count=1)
        func = func.translate(_QUOTES)
        if java and "/" in func and func.startswith("L"):
            func = func[1:]
        frames.append(f"{func}_[i]" if position else func)
    return frames
