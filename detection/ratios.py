"""Relative changes, and when there is none to give.

``relative_change(before, delta) = delta / |before|``, except where the level before the
change is zero or near it: a function that did not run before the deploy (its share was 0,
or a few stray samples) has no relative change — ``+3.3e16`` says nothing and breaks every
table. "Near" is the rule the cost-shift check uses for a level that did not exist before
(``CostShiftSettings.new_share``): ``|before| <= NEW_LEVEL_SHARE × |delta|``, i.e. a rise of
more than 100×. Such a change is ``None`` in JSON (``null``) and "new" in text.
"""

from __future__ import annotations

import math

NEW_LEVEL_SHARE = 0.01

__all__ = ["NEW_LEVEL_SHARE", "relative_change"]


def relative_change(before: float, delta: float) -> float | None:
    """``delta / |before|``, or None when ``before`` is zero or near it (module docstring) or
    either is not finite."""
    if not (math.isfinite(before) and math.isfinite(delta)):
        return None
    if abs(before) <= NEW_LEVEL_SHARE * abs(delta) or before == 0:
        return None
    return delta / abs(before)
