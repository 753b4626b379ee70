"""Frames ↔ modified subroutines (FBDetect §5.6): which of a deploy's modified functions each
profile subroutine is, so that gCPU attribution can find the samples a change touched.

Frames are first reduced by ``frame_names.normalize_frame``; ``match_subroutines`` then applies,
per profile subroutine, (a) the exact rule for a frame with a file, (b) the exact rule for a
frame without one, and (c) a fuzzy fallback for functions absent from the file's outline.
Cost: O(1) dict lookups for the exact rules, one ``rapidfuzz.process.cdist`` per candidate
group for the fuzzy rule.

Design: docs/design/attribution_frame_match.md
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

from regbot.attribution.frame_names import (
    FrameName,
    language_of,
    normalize_frame,
    path_components,
    paths_agree,
    qualname_components,
    shared_suffix,
)
from regbot.attribution.model import ModifiedSubroutine
from regbot.errors import InputError

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True, slots=True)
class _Target:
    """A modified subroutine prepared for matching: ``full`` is the module's components (Python)
    followed by the qualname's, ``qual`` the qualname's alone."""

    sub: ModifiedSubroutine
    order: int
    language: str | None
    paths: tuple[tuple[str, ...], ...]
    qual: tuple[str, ...]
    full: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.qual[-1]


def _prepare(modified: Iterable[ModifiedSubroutine]) -> list[_Target]:
    targets: list[_Target] = []
    seen: set[ModifiedSubroutine] = set()
    for sub in modified:
        if not isinstance(sub, ModifiedSubroutine):
            raise InputError("modified subroutines", "ModifiedSubroutine values", sub)
        if sub in seen:
            continue
        seen.add(sub)
        language = language_of(sub.path)
        qual = qualname_components(sub.qualname, language)
        if not qual:
            continue
        module = tuple(sub.module.split(".")) if sub.module else ()
        paths = tuple(path_components(p) for p in (sub.path, sub.old_path) if p)
        targets.append(_Target(sub, len(targets), language, paths, qual, (*module, *qual)))
    return targets


def _context_agrees(frame: FrameName, target: _Target) -> bool:
    """Where a language ties a symbol's qualifiers to the file's path, they must agree: Java's
    top-level class is the ``.java`` file's stem; a Go symbol's import path ends in the file's
    directory (package ``main`` is named ``main`` wherever it lives; a file at the repository's
    root says nothing); a C (``.c``) function has no ``::`` qualifiers."""
    if len(frame.parts) > 1 and target.paths[0][-1].endswith(".c"):
        return False
    if target.language == "jvm" and target.paths[0][-1].endswith(".java"):
        k = len(frame.namespace)
        if len(frame.parts) > k + 1:
            stems = {p[-1].rsplit(".", 1)[0] for p in target.paths}
            return frame.parts[k] in stems
    if target.language == "go" and frame.namespace and frame.namespace[-1] != "main":
        dirs = {p[-2] for p in target.paths if len(p) >= 2}
        return not dirs or frame.namespace[-1] in dirs
    return True


def _compatible(frame: FrameName, frame_path: tuple[str, ...], target: _Target, k: int) -> bool:
    """Whether frame and target can be one function, names aside: (a)'s path rule for a frame
    with a file; for one without, (b)'s language and context rules. ``k`` is how many trailing
    name components they share: with ``k >= 2`` a target of an unknown language is allowed (the
    qualified name is evidence enough), with fewer its language must be one the frame allows."""
    if frame.file is not None:
        return any(paths_agree(frame_path, p) for p in target.paths)
    if target.language is None:
        return k >= 2
    return target.language in frame.languages and _context_agrees(frame, target)


def _exact(frame: FrameName, frame_path: tuple[str, ...], target: _Target) -> bool:
    shared = shared_suffix(frame.parts, target.full)
    if shared == 0 or shared < min(len(frame.parts), len(target.full)):
        return False  # neither name is a suffix of the other: `Svc.serve` vs `serve` ok,
        # `Svc.serve` vs `Other.serve` not
    return _compatible(frame, frame_path, target, shared)


def match_subroutines(
    subroutines: Sequence[str],
    modified: Sequence[ModifiedSubroutine],
    *,
    fuzzy_floor: float = 90.0,
    known_functions: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, list[tuple[ModifiedSubroutine, float]]]:
    """For each profile subroutine that is one of the modified subroutines, those it is, with a
    score: 1.0 for the exact rules (a)/(b), ``ratio/100`` for the fuzzy rule (c), which applies
    only to subroutines no exact rule matched and whose function is not in ``known_functions``
    (file path → the qualnames of every function in it at either side of the diff).
    Subroutines matching nothing are left out. Each list is best first (ties in the order of
    ``modified``); a modified subroutine given twice counts once.

    Cost: one normalisation per distinct subroutine (cached), a dict lookup by innermost name
    for (a)/(b), and for (c) one ``cdist`` per group of candidates sharing a file name (frames
    with a file) or a language set (frames without).
    """
    if isinstance(fuzzy_floor, bool) or not isinstance(fuzzy_floor, int | float):
        raise InputError("fuzzy_floor", "a number in (0, 100]", fuzzy_floor)
    if not 0 < fuzzy_floor <= 100:
        raise InputError("fuzzy_floor", "a number in (0, 100]", fuzzy_floor)
    targets = _prepare(modified)
    if not targets:
        return {}
    by_name: dict[str, list[_Target]] = defaultdict(list)
    by_file_name: dict[str, list[_Target]] = defaultdict(list)
    for target in targets:
        by_name[target.name].append(target)
        for file_name in {p[-1] for p in target.paths if p}:
            by_file_name[file_name].append(target)

    outline = _Outline(known_functions or {})
    result: dict[str, list[tuple[ModifiedSubroutine, float]]] = {}
    unmatched: dict[tuple[str, frozenset[str]], list[tuple[str, FrameName, tuple[str, ...]]]]
    unmatched = defaultdict(list)
    for subroutine in dict.fromkeys(subroutines):
        frame = normalize_frame(subroutine)
        if not frame.is_function:
            continue
        frame_path = path_components(frame.file) if frame.file else ()
        hits = [t for t in by_name.get(frame.name, ()) if _exact(frame, frame_path, t)]
        if hits:
            result[subroutine] = [(t.sub, 1.0) for t in hits]
        elif frame.file is None:
            unmatched[("", frame.languages)].append((subroutine, frame, frame_path))
        elif frame_path and frame_path[-1] in by_file_name and not outline.has(frame, frame_path):
            unmatched[(frame_path[-1], frozenset())].append((subroutine, frame, frame_path))

    for (file_name, languages), frames in unmatched.items():
        if file_name:
            group = by_file_name[file_name]
        else:
            group = [t for t in targets if t.language in languages]
        for i, j, score in _fuzzy_pairs([f for _, f, _ in frames], group, fuzzy_floor):
            subroutine, frame, frame_path = frames[i]
            target = group[j]
            if frame.name == target.name or _word_replaced(frame.name, target.name, fuzzy_floor):
                continue
            if frame.name.startswith("<") or target.name.startswith("<"):
                continue  # `<module>` is only ever the module's own import-time code
            both_qualified = len(frame.parts) > 1 and len(target.qual) > 1
            if both_qualified and frame.parts[-2] != target.qual[-2]:
                continue  # a renamed method stays in its class
            if not _compatible(frame, frame_path, target, 0):
                continue
            result.setdefault(subroutine, []).append((target.sub, score / 100.0))

    order = {t.sub: t.order for t in targets}
    for scored in result.values():
        scored.sort(key=lambda hit: (-hit[1], order[hit[0]]))
    return result


def _fuzzy_pairs(
    frames: Sequence[FrameName], targets: Sequence[_Target], floor: float
) -> Iterable[tuple[int, int, float]]:
    """(frame index, target index, ratio) for every pair whose innermost names reach
    ``floor``."""
    if not frames or not targets:
        return
    queries = [f.parts[-1] for f in frames]
    choices = [t.qual[-1] for t in targets]
    scores = process.cdist(
        queries, choices, scorer=fuzz.ratio, score_cutoff=floor, dtype=np.float32, workers=-1
    )
    for row, col in zip(*np.nonzero(scores >= floor)):
        yield int(row), int(col), float(scores[row, col])


class _Outline:
    """Every function of the modified files (both sides of their diffs), for the question "does
    the file have this frame's function?"."""

    def __init__(self, known: Mapping[str, frozenset[str]]) -> None:
        self.by_file: dict[str, list[tuple[tuple[str, ...], set[tuple[str, ...]]]]] = {}
        for path, qualnames in known.items():
            components = path_components(path)
            if not components:
                continue
            language = language_of(path)
            names = {qualname_components(q, language) for q in qualnames}
            self.by_file.setdefault(components[-1], []).append((components, names))

    def has(self, frame: FrameName, frame_path: tuple[str, ...]) -> bool:
        for path, names in self.by_file.get(frame_path[-1], ()):
            if not paths_agree(frame_path, path):
                continue
            for name in names:
                shared = shared_suffix(frame.parts, name)
                if shared and shared == min(len(frame.parts), len(name)):
                    return True
        return False


def _word_replaced(a: str, b: str, floor: float) -> bool:
    """Whether two names with the same number of words (``_``, camelCase, digits) differ in a
    word pair that is itself below the floor and not a prefix pair: ``get_handle``/
    ``set_handle`` (``get``/``set``: 66.7), ``handler_v1``/``handler_v2``. A different verb or
    version is a different function, however close the whole names are by characters. A word
    extended or respelled (``request``/``requests``, ``colour``/``color``: 90.9) is a rename."""
    words_a = [w.lower() for w in _WORDS.findall(a)]
    words_b = [w.lower() for w in _WORDS.findall(b)]
    if len(words_a) != len(words_b):
        return False
    return any(
        x != y and not (x.startswith(y) or y.startswith(x)) and fuzz.ratio(x, y) < floor
        for x, y in zip(words_a, words_b)
    )
