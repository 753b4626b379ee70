"""Series names and titles made fit for one terminal line: control characters out, and a series
id shortened to a width so that what identifies it (a gCPU id's function, a Prometheus metric's
name) is the last thing to go. Pure functions of strings; widths are terminal cells."""

from __future__ import annotations

import re
import unicodedata

from rich.cells import cell_len

__all__ = ["ELLIPSIS", "one_line", "series_wanted_width", "shorten_series"]

ELLIPSIS = "…"
GCPU_PREFIX = "gcpu:"
WANTED_CAP = 72
"""The most cells a series column asks for before the tables keep a lower-priority column."""
MIN_FUNCTION = 8
"""A gCPU id narrower than ``gcpu:`` plus this many cells drops ``gcpu:`` to keep its function."""

_GCPU_WITH_PATH = re.compile(r"^gcpu:(?P<function>.+) \((?P<path>[^()]*)\)$")
_PROMETHEUS = re.compile(r"^(?P<name>[^{}]+)\{(?P<labels>.*)\}$")
_LABEL = re.compile(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*')


def one_line(text: str) -> str:
    """``text`` as one line of plain characters: every control character (newline, tab, escape,
    C1 codes) becomes a space, so a name or a title can neither break a table row nor send a
    terminal sequence. Markup such as ``[bold]`` is kept as written (the views print ``Text``)."""
    return "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)


def head(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: whole when it fits, else its start and ``…``."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    kept = ""
    for ch in text:
        if cell_len(kept + ch) > width - 1:
            break
        kept += ch
    return kept + ELLIPSIS


def _left_cut_paths(path: str) -> list[str]:
    """The shorter forms of a source path, longest first: ``…/`` and each tail of whole
    components (``…/handlers/views.py``, ``…/views.py``), then ``…``."""
    parts = path.split("/")
    return [ELLIPSIS + "/" + "/".join(parts[i:]) for i in range(1, len(parts))] + [ELLIPSIS]


def _shorten_gcpu(function: str, path: str, width: int) -> str:
    for shown in _left_cut_paths(path):
        text = f"{GCPU_PREFIX}{function} ({shown})"
        if cell_len(text) <= width:
            return text
    rest = f"{function} {ELLIPSIS}"  # the function, then a mark that the path was cut
    if width >= cell_len(GCPU_PREFIX) + MIN_FUNCTION:
        return GCPU_PREFIX + head(rest, width - cell_len(GCPU_PREFIX))
    return head(rest, width)


def _shorten_prometheus(name: str, labels: list[str], width: int) -> str:
    for count in range(len(labels) - 1, -1, -1):
        text = name + "{" + ",".join([*labels[:count], ELLIPSIS]) + "}"
        if cell_len(text) <= width:
            return text
    return head(name, width)


def _labels(text: str) -> list[str] | None:
    """The ``name="value"`` matchers of a Prometheus label set, or None when ``text`` is not one."""
    labels, at = [], 0
    while at < len(text):
        match = _LABEL.match(text, at)
        if match is None:
            return None
        labels.append(match.group().strip())
        at = match.end()
        if at < len(text):
            if text[at] != ",":
                return None
            at += 1
    return labels


def shorten_series(series: str, width: int) -> str:
    """``series`` in at most ``width`` terminal cells, shortened where a reader loses least.

    - Whole when it fits.
    - A gCPU id ``gcpu:<function> (<path>)`` keeps its function whole and cuts the path from the
      left by whole components (``gcpu:handle (…/views.py)``), then to ``(…)``, then drops it
      (``gcpu:handle …``); only then is the function cut, ending in ``…`` (``gcpu:handle_che…``).
      Below ``gcpu:`` plus ``MIN_FUNCTION`` cells the ``gcpu:`` goes first, so the result is
      never ``gcpu:…``.
    - A Prometheus id ``name{a="x",b="y"}`` keeps its name and as many leading labels as fit
      (``name{a="x",…}``), then ``name{…}``, then the name's start and ``…``.
    - Anything else keeps its start and ends in ``…``.

    The full id is in the report and in ``regbot explain``."""
    if cell_len(series) <= width:
        return series
    if width <= 0:
        return ""
    gcpu = _GCPU_WITH_PATH.match(series)
    if gcpu is not None:
        return _shorten_gcpu(gcpu["function"], gcpu["path"], width)
    if series.startswith(GCPU_PREFIX) and width >= cell_len(GCPU_PREFIX) + MIN_FUNCTION:
        return GCPU_PREFIX + head(series[len(GCPU_PREFIX) :], width - cell_len(GCPU_PREFIX))
    if series.startswith(GCPU_PREFIX):
        return head(series[len(GCPU_PREFIX) :], width)
    prometheus = _PROMETHEUS.match(series)
    labels = None if prometheus is None else _labels(prometheus["labels"])
    if prometheus is not None and labels is not None:
        return _shorten_prometheus(prometheus["name"], labels, width)
    return head(series, width)


def series_wanted_width(series: str) -> int:
    """The cells ``series`` needs to read well (at most ``WANTED_CAP``): all of it when short; for
    a gCPU id its function and the file's name (``gcpu:handle (…/views.py)``); for a Prometheus id
    its name and ``{…}``. The tables drop low-priority columns before giving a series less."""
    full = cell_len(series)
    gcpu = _GCPU_WITH_PATH.match(series)
    prometheus = _PROMETHEUS.match(series)
    if gcpu is not None:
        basename = gcpu["path"].rsplit("/", 1)[-1]
        wanted = cell_len(f"{GCPU_PREFIX}{gcpu['function']} ({ELLIPSIS}/{basename})")
    elif prometheus is not None:
        wanted = cell_len(prometheus["name"]) + 3
    else:
        wanted = full
    return min(full, wanted, WANTED_CAP)
