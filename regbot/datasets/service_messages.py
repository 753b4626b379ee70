"""Commit titles and bodies in a seeded team style: conventional commits, terse titles,
descriptive titles that name functions, ticket references; and the team's authors.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

import numpy as np

# Role phrases: (conventional type, title naming the function(s), title that does not).
_PHRASES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "slower": (
        ("fix", "validate every field in {f}", "validate every field"),
        ("feat", "handle legacy records in {f}", "handle legacy records"),
        ("perf", "use exact decimal math in {f}", "use exact decimal math"),
        ("fix", "recompute checksums in {f}", "recompute checksums on read"),
        ("refactor", "normalize input inside {f}", "normalize input earlier"),
    ),
    "calls_more": (
        ("fix", "retry {g} in {f} until it succeeds", "retry flaky lookups"),
        ("feat", "fetch every page in {f}", "fetch every page"),
        ("fix", "call {g} for each item in {f}", "look items up one by one"),
        ("fix", "re-read {g} results in {f} for consistency", "re-read results for consistency"),
    ),
    "note": (
        ("docs", "explain the loop in {f}", "explain a hot loop"),
        ("docs", "comment on ordering in {f}", "comment on ordering"),
    ),
    "doc": (("docs", "clarify the {f} docstring", "clarify docstrings"),),
    "local": (("refactor", "rename a local in {f}", "rename locals"),),
    "salt": (("refactor", "use a prime multiplier in {f}", "use prime multipliers"),),
    "guard": (("fix", "guard {f} against empty requests", "guard against empty requests"),),
    "names_function": (
        ("perf", "prepare {t} for batching in {g}", "prepare {t} for batching"),
        ("refactor", "move {t} constants next to {g}", "move {t} constants"),
        ("perf", "speed up {t} callers by trimming {g}", "speed up {t} callers"),
        ("fix", "follow-up to the {t} review: tidy {g}", "follow-up to the {t} review"),
    ),
    "cost_shift": (
        ("refactor", "move the {f} checks into {g}", "move checks between helpers"),
        ("refactor", "fold {f} validation into {g}", "fold validation into one place"),
    ),
    "docs": (
        ("docs", "document the {m} module", "update the README"),
        ("docs", "describe {m} in the runbook", "fix typos in the runbook"),
    ),
    "tests": (
        ("test", "cover {f} edge cases", "add tests"),
        ("test", "add a regression test for {f}", "more tests"),
    ),
    "config": (
        ("chore", "raise the cache TTL", "tune config"),
        ("chore", "bump the connection pool", "bump pool size"),
        ("chore", "run more workers", "update service config"),
    ),
}
_TERSE = ("wip", "fix", "fix tests", "address review comments", "cleanup", "tweaks", "update")
_STYLES = ("conventional", "terse", "descriptive", "ticket")
_AUTHORS = (
    ("Ada Lindqvist", "ada"),
    ("Bram Okafor", "bram"),
    ("Chen Wei", "chen"),
    ("Dana Ruiz", "dana"),
    ("Emeka Obi", "emeka"),
    ("Freya Holm", "freya"),
    ("Gil Navon", "gil"),
)


class Messages:
    """Commit titles and bodies in the seed's team style (a mix of the four styles)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.weights = rng.dirichlet(np.full(len(_STYLES), 0.8))
        self.prefix = str(rng.choice(["SVC", "SHOP", "PLAT", "CORE"]))
        self.ticket = int(rng.integers(100, 900))
        self.authors = [_AUTHORS[int(i)] for i in rng.choice(len(_AUTHORS), size=5, replace=False)]

    def style(self) -> str:
        return str(self.rng.choice(_STYLES, p=self.weights))

    def message(self, role: str, must_name: bool = False, **names: str) -> tuple[str, str]:
        """(title, body) for a change of ``role``; ``names`` fill the phrase (f, g, t, m)."""
        kind, named, vague = _PHRASES[role][int(self.rng.integers(len(_PHRASES[role])))]
        style = self.style()
        if must_name and style == "terse":
            style = "descriptive"
        use_named = must_name or style == "descriptive" or self.rng.random() < 0.5
        phrase = (named if use_named else vague).format(**names)
        scope = names.get("m", "app")
        if style == "terse":
            title = str(self.rng.choice(_TERSE))
        elif style == "conventional":
            title = f"{kind}({scope}): {phrase}"
        elif style == "ticket":
            self.ticket += int(self.rng.integers(1, 40))
            title = f"[{self.prefix}-{self.ticket}] {phrase[0].upper()}{phrase[1:]}"
        else:
            title = phrase[0].upper() + phrase[1:]
        body = ""
        if self.rng.random() < 0.35:
            sentence = named.format(**names)
            reviewer, handle = self.authors[int(self.rng.integers(len(self.authors)))]
            body = (
                f"{sentence[0].upper()}{sentence[1:]}.\n\n"
                f"Reviewed-by: {reviewer} <{handle}@example.com>"
            )
        return title, body
