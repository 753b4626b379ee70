"""Text similarity between a regression and a commit (FBDetect §5.6): the cosine between their
TF-IDF vectors over identifier-aware tokens.

FBDetect's example: a regression in ``foo`` and a commit titled "loosening constraints for foo"
that does not touch ``foo``'s code; gCPU attribution cannot see it, its text can. The regression's
document holds what names it (series id, metric kind, the frames of its heaviest stacks, the day
it began); a commit's holds what a developer wrote and touched (title, body, file paths, the
identifiers of its diff, the qualnames of its modified functions, the day it was authored).

The IDF is fitted on the deploy's commit documents plus the regression's, so a word every commit
of the deploy shares (the team's component name, a ticket prefix) weighs least: scikit-learn's
smoothed idf ``ln((1 + n) / (1 + df)) + 1`` gives it 1 against up to ``ln((1 + n) / 2) + 1`` for
a word one commit shares with the regression. Term frequencies are sublinear (``1 + ln tf``) so a
diff repeating an identifier fifty times does not drown its title. Cost: O(total tokens).

Timing (FBDetect puts it in the regression's vector) is the UTC day as one token, ``20261122``,
in both documents: with continuous deploys a commit landed the day a regression began is a
likelier cause, and the IDF discounts the day when the whole deploy shares it. Being one token
among tens, it moves an otherwise unrelated commit by a few hundredths at most.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from regbot.attribution.frame_names import normalize_frame
from regbot.attribution.model import Commit

# English function words, code noise (keywords, builtin type names, file extensions, URL parts)
# and change verbs that describe the kind of change, not what it touches. A regression's document
# never holds these, so in a commit they only lengthen its vector; `fix` and `refactor` are in
# every other title. Words that are also common function names (add, update, remove, get, set,
# do, once: Go's `Client.Do`, `sync.Once`) are kept: `Cache.remove` must stay findable.
STOP_WORDS = frozenset(
    """
    a about after all also an and any are as at be been before being but by can could for from
    had has have he her his how if in into is it its itself may might more most must no nor not
    of off on only or other our out over own same she should so some
    such than that the their them then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    self cls def fn func function return returns import from class struct impl pub let var
    const static void int str bool float double char none null nil true false elif else std
    py pyi js ts tsx jsx go rs cc cpp cxx hh hpp java kt rb md txt src lib www https com org
    fix fixes fixed fixing wip nit nits bump minor typo typos refactor refactoring cleanup
    """.split()
)
_WORD = re.compile(r"\w+")
_SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[^\W\d_A-Z]+|[A-Z]+|\d+")
_TRAILER = re.compile(r"^[A-Z][\w-]*-(?:by|id|Id|ID|to):.*$", re.MULTILINE)
_SERIES_KIND = re.compile(r"^(\w+):(?!:)")


def identifier_tokens(text: str) -> list[str]:
    """Lowercased tokens of a text in which identifiers are split into their words.

    Words are runs of letters, digits and ``_`` (so paths split on ``/ . : -`` and spaces);
    each is split on ``_``, camelCase and PascalCase boundaries (``parseHTTPRequest`` → parse,
    http, request; camel boundaries are ASCII capitals) and between letters and digits
    (``utf8`` → utf, 8). A word that split into several keeps its whole lowercased self as a
    token too, after its parts (``parse_request`` → parse, request, parse_request), so that the
    exact identifier weighs more than its words appearing apart. Tokens shorter than 2
    characters and ``STOP_WORDS`` are dropped.
    """
    tokens: list[str] = []
    for word in _WORD.findall(text):
        parts = _SUBWORD.findall(word)
        for part in parts:
            token = part.lower()
            if len(token) >= 2 and token not in STOP_WORDS:
                tokens.append(token)
        whole = word.strip("_").lower()
        if len(parts) > 1 and len(whole) >= 2 and whole not in STOP_WORDS:
            tokens.append(whole)
    return tokens


def _day(time_s: float) -> str:
    """A day as one digit run (``20261122``): one token that only another day can match."""
    return datetime.fromtimestamp(time_s, UTC).strftime("%Y%m%d")


def _frame_text(frame: str) -> str:
    """A frame as its qualified name and file, without the template and argument lists whose
    type names (``int``, ``allocator``) would match every C++ commit."""
    name = normalize_frame(frame)
    pieces = [name.qualified] if name.is_function else []
    if name.file:
        pieces.append(name.file)
    return " ".join(pieces) if pieces else frame


def regression_document(
    series_id: str,
    kind: str,
    frames: Sequence[str],
    change_time_s: float | None = None,
) -> str:
    """The regression's text: the series id (a gCPU series' subroutine read as a frame), the
    metric kind, the words of its stack frames, and the change's UTC day when known.

    The frames contribute each distinct word once: the heaviest stacks repeat their roots, and
    every frame of ``app/`` repeats ``app``, which would otherwise outweigh the one function
    that regressed. That function is both the series and a frame, so its words count twice.
    """
    lines: list[str] = []
    prefix = _SERIES_KIND.match(series_id)
    if prefix and prefix.group(1) == "gcpu":
        lines.append(_frame_text(series_id[prefix.end() :]))
    else:
        lines.append(series_id)
    lines.append(kind)
    frame_words = _WORD.findall(" ".join(_frame_text(f) for f in dict.fromkeys(frames)))
    lines.append(" ".join(dict.fromkeys(frame_words)))
    if change_time_s is not None:
        lines.append(_day(change_time_s))
    return "\n".join(line for line in lines if line)


def commit_document(commit: Commit) -> str:
    """The commit's text: title (twice), body without trailer lines (``Signed-off-by:``,
    ``Change-Id:``: names and hashes, not content), file paths, the diff's identifiers, the
    modified subroutines' qualnames (with their module), and the UTC day it was authored.

    The title is counted twice because it is the author's one-line statement of what the change
    is about, written for readers like us, and it is short: without the weight a long body or
    diff drowns it. Twice, not more: with sublinear tf that is 1 + ln 2 ≈ 1.7 times a body word.
    """
    lines = [commit.title, commit.title, _TRAILER.sub("", commit.body)]
    lines.extend(commit.files)
    lines.append(" ".join(commit.identifiers))
    lines.extend(s.full_name for s in commit.subroutines)
    if commit.authored_at_s:
        lines.append(_day(commit.authored_at_s))
    return "\n".join(line for line in lines if line)


def text_similarities(regression_doc: str, commit_docs: Sequence[str]) -> np.ndarray:
    """Cosine similarity in [0, 1] of the regression's document with each commit's (float64,
    one per commit, in order). The IDF corpus is the commit documents plus the regression's;
    a document with no tokens scores 0, and so does every commit when the regression has none.
    """
    if not commit_docs:
        return np.zeros(0)
    vectorizer = TfidfVectorizer(analyzer=identifier_tokens, sublinear_tf=True, norm="l2")
    try:
        matrix = vectorizer.fit_transform([*commit_docs, regression_doc])
    except ValueError:  # no document has a token: the vocabulary is empty
        return np.zeros(len(commit_docs))
    regression = matrix[len(commit_docs)]
    cosine = (matrix[: len(commit_docs)] @ regression.T).toarray().ravel()
    clipped: np.ndarray = np.clip(cosine, 0.0, 1.0)
    return clipped
