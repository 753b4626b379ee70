"""regbot.bot: what users meet — the command line (``cli``), the configuration (``config``), the
GitHub adapter, comments and publishing (``github``), the sources of a run's series
(``sources``), the state (``state``), the gate (``gate``), and the terminal views (``views``,
``explanation``).

The entry points other packages use are re-exported here, resolved on first use (PEP 562), so
importing one room does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regbot.lazy_exports import resolver

if TYPE_CHECKING:
    from regbot.bot.config import Config, GateSettings, load_config, parse_config
    from regbot.bot.gate import GateDecision, decide_gate
    from regbot.bot.state import StateStore, open_state, open_state_read_only

_HOME = {
    "Config": "config",
    "GateDecision": "gate",
    "GateSettings": "config",
    "StateStore": "state",
    "decide_gate": "gate",
    "load_config": "config",
    "open_state": "state",
    "open_state_read_only": "state",
    "parse_config": "config",
}

__all__ = [
    "Config",
    "GateDecision",
    "GateSettings",
    "StateStore",
    "decide_gate",
    "load_config",
    "open_state",
    "open_state_read_only",
    "parse_config",
]


__getattr__ = resolver(__name__, _HOME)
