"""Which reader a profile file needs, told from its name and first bytes."""

from __future__ import annotations

import gzip
import importlib
import re
from collections.abc import Callable
from pathlib import Path

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples
from regbot.profiles.stacks import StackTable

Parser = Callable[..., ProfileSamples]

# format name -> (module, function); modules are imported on first use.
READERS: dict[str, tuple[str, str]] = {
    "folded": ("regbot.profiles.folded", "parse_folded"),
    "pprof": ("regbot.profiles.pprof", "parse_pprof"),
    "speedscope": ("regbot.profiles.speedscope", "parse_speedscope"),
    "chrometrace": ("regbot.profiles.chrometrace", "parse_chrometrace"),
    "perf-script": ("regbot.profiles.perf_script", "parse_perf_script"),
}
# Formats whose samples carry no absolute time of their own: the time comes from --at or the name.
NEEDS_OUTSIDE_TIME = frozenset({"folded", "speedscope", "chrometrace"})

PROFILE_SUFFIXES = (".folded", ".txt", ".pb.gz", ".pb", ".json", ".perf", ".perf.txt", ".collapsed")
_PERF_HEADER = re.compile(rb"^\S.*?\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?\d+\.\d+:")


def detect_format(path: Path, head: bytes) -> str:
    """Name of the reader for a file, from its first bytes, then its name.

    gzip magic → pprof (pprof is the one gzip-compressed format regbot reads); a JSON object with
    ``shared`` and ``profiles`` → speedscope; a JSON array of events or an object with
    ``traceEvents`` → chrometrace; a first line shaped like a ``perf script`` sample header
    (``comm pid [cpu] 123.456:``) → perf-script; ``.pb`` → pprof; otherwise folded stacks.
    """
    name = path.name.lower()
    if head[:2] == b"\x1f\x8b":
        return "pprof"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"["):
        if b'"traceEvents"' in head or stripped[:1] == b"[":
            return "chrometrace"
        return "speedscope"
    if name.endswith(".pb"):
        return "pprof"
    first_line = stripped.split(b"\n", 1)[0]
    if _PERF_HEADER.match(first_line) or name.endswith((".perf", ".perf.txt")):
        return "perf-script"
    return "folded"


def reader(format_name: str) -> Parser:
    module_name, function = READERS[format_name]
    parser: Parser = getattr(importlib.import_module(module_name), function)
    return parser


def parse_profile(
    format_name: str,
    data: bytes,
    *,
    source: str,
    table: StackTable,
    at_s: float | None,
    options: ParseOptions,
) -> ProfileSamples:
    return reader(format_name)(data, source=source, table=table, at_s=at_s, options=options)


def read_profile_bytes(path: Path) -> bytes:
    """The file's bytes; a gzip-compressed text profile (``x.folded.gz``) is decompressed here,
    pprof's own gzip is left to the pprof reader."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(str(path), "a readable profile file", error.strerror) from None
    if data[:2] == b"\x1f\x8b" and not path.name.lower().endswith((".pb.gz", ".pb")):
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise InputError(str(path), "a complete gzip file", str(error)) from None
        if inner[:1] not in (b"\x0a",):  # a pprof protobuf starts with field 1 (sample_type)
            return inner
    return data
