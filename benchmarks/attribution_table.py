"""The attribution benchmark's plain-text tables (a title, a header and a rule; the first column
left-aligned, the others right-aligned) and its percentages (``  5.0%``; ``    -`` of nothing)."""

from __future__ import annotations

from collections.abc import Sequence


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def text_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [title, line.format(*header), line.format(*("-" * w for w in widths))]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)
