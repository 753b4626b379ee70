"""regbot.attribution: which commits of a deploy caused a regression (FBDetect §5.6).

The entry points other packages use are re-exported here, resolved on first use (PEP 562), so
importing one module (the settings, for reading the configuration) does not import the whole
package; importing them from their defining modules works as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regbot.lazy_exports import resolver

if TYPE_CHECKING:
    from regbot.attribution.attribute import (
        DeployChanges,
        RegressionEvidence,
        attribute,
        attribute_all,
        prepare_changes,
        with_lines,
    )
    from regbot.attribution.changes import read_change_set, resolve_revision
    from regbot.attribution.deploy_lines import DeployLines, read_deploy_lines
    from regbot.attribution.gcpu_attribution import TimeSplit, attributed_share
    from regbot.attribution.model import Attribution, Commit, ModifiedSubroutine, ScoredCommit
    from regbot.attribution.rank import RankSettings, rank_commits
    from regbot.attribution.settings import AttributionSettings
    from regbot.attribution.signal_correlation import Signal, signal_names
    from regbot.attribution.stack_paths import heaviest_paths, path_to

_HOME = {
    "Attribution": "model",
    "AttributionSettings": "settings",
    "Commit": "model",
    "DeployChanges": "attribute",
    "DeployLines": "deploy_lines",
    "ModifiedSubroutine": "model",
    "RankSettings": "rank",
    "RegressionEvidence": "attribute",
    "ScoredCommit": "model",
    "Signal": "signal_correlation",
    "TimeSplit": "gcpu_attribution",
    "attribute": "attribute",
    "attribute_all": "attribute",
    "attributed_share": "gcpu_attribution",
    "heaviest_paths": "stack_paths",
    "path_to": "stack_paths",
    "prepare_changes": "attribute",
    "rank_commits": "rank",
    "read_change_set": "changes",
    "read_deploy_lines": "deploy_lines",
    "resolve_revision": "changes",
    "signal_names": "signal_correlation",
    "with_lines": "attribute",
}

__getattr__ = resolver(__name__, _HOME)

__all__ = [
    "Attribution",
    "AttributionSettings",
    "Commit",
    "DeployChanges",
    "DeployLines",
    "ModifiedSubroutine",
    "RankSettings",
    "RegressionEvidence",
    "ScoredCommit",
    "Signal",
    "TimeSplit",
    "attribute",
    "attribute_all",
    "attributed_share",
    "heaviest_paths",
    "path_to",
    "prepare_changes",
    "rank_commits",
    "read_change_set",
    "read_deploy_lines",
    "resolve_revision",
    "signal_names",
    "with_lines",
]
