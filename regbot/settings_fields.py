"""What a settings field says about how ``regbot.yml`` writes it: small markers for
``typing.Annotated``, shared by the stages' settings dataclasses (``regbot.detection``,
``regbot.attribution``) and the bot's own, and read by the config walker
(``regbot.bot.config_reader``).

A field's type says most of it (``float``, ``int``, ``bool``, ``str``, ``Literal[...]``, a
nested settings dataclass, a tuple of them...); a marker adds the rest: the range a number must
lie in (``alpha: Probability = 0.01``), that a text is a regular expression, or that the field is
no key of the file at all (``NotInConfig``). Plain data, no behaviour: the settings modules stay
free of the reader, and the reader of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

__all__ = [
    "Band",
    "Bound",
    "Correlation",
    "Count",
    "Form",
    "GitHubRepository",
    "NON_NEGATIVE",
    "NOT_IN_CONFIG",
    "NonNegative",
    "NotInConfig",
    "Percentile",
    "Positive",
    "PositiveCount",
    "Probability",
    "Regex",
    "Score",
    "Share",
    "Url",
    "DaskAddress",
]


@dataclass(frozen=True, slots=True)
class Bound:
    """A number (or a whole number, for ``int`` fields) at least ``low`` and at most ``high``
    (strictly, when ``exclusive``); ``expected`` is what the message says when it is not."""

    expected: str
    low: float | None = None
    high: float | None = None
    exclusive: bool = False

    def allows(self, number: float) -> bool:
        if self.exclusive:
            return (self.low is None or number > self.low) and (
                self.high is None or number < self.high
            )
        return (self.low is None or number >= self.low) and (
            self.high is None or number <= self.high
        )


@dataclass(frozen=True, slots=True)
class Form:
    """The form a value takes beyond its type: for text, ``regex`` (a Python regular
    expression), ``url`` (http or https) or ``owner/name`` (a GitHub repository); for a pair of
    numbers, ``band`` (``[low, high]``, 0 <= low <= high)."""

    kind: Literal["regex", "url", "owner/name", "band", "dask-address"]


@dataclass(frozen=True, slots=True)
class NotInConfig:
    """The field is no key of ``regbot.yml``: the caller fills it (the workload a run picks, a
    constant the file does not offer)."""


NON_NEGATIVE = Bound("a number >= 0", low=0.0)
NOT_IN_CONFIG = NotInConfig()

NonNegative = Annotated[float, NON_NEGATIVE]
Positive = Annotated[float, Bound("a number > 0", low=0.0, exclusive=True)]
Share = Annotated[float, Bound("a number between 0 and 1", low=0.0, high=1.0)]
Probability = Annotated[
    float, Bound("a number between 0 and 1 (exclusive)", low=0.0, high=1.0, exclusive=True)
]
Percentile = Annotated[float, Bound("a percentile between 0 and 100", low=0.0, high=100.0)]
Correlation = Annotated[float, Bound("a correlation between -1 and 1", low=-1.0, high=1.0)]
# A 0-100 score, as rapidfuzz gives: below 0 is refused as any negative number is.
Score = Annotated[float, NON_NEGATIVE, Bound("a score from 0 to 100", high=100.0)]
PositiveCount = Annotated[int, Bound("a whole number >= 1", low=1.0)]
Count = Annotated[int, Bound("a whole number >= 0", low=0.0)]
Band = Annotated[tuple[float, float], Form("band")]
Regex = Annotated[str, Form("regex")]
Url = Annotated[str, Form("url")]
GitHubRepository = Annotated[str, Form("owner/name")]
DaskAddress = Annotated[str, Form("dask-address")]
