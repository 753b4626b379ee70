"""regbot.attribution: which commits of a deploy caused a regression (FBDetect §5.6).

The entry points other packages use are re-exported here; importing them from their defining
modules works as well.
"""

from regbot.attribution.attribute import (
    AttributionSettings,
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
from regbot.attribution.signal_correlation import Signal, signal_names
from regbot.attribution.stack_paths import heaviest_paths, path_to

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
