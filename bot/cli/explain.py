"""`regbot explain REGRESSION_ID`: everything the state store knows about one regression.

What it reads (read only: the SQLite file is opened with ``mode=ro``, so explaining never
creates, migrates or locks the state a running job writes):

* the stored reports (``StateStore.reports()``): each run's whole SPEC §4 report, whose
  ``regressions`` and ``filtered`` entries carry every stage's verdict with its numbers, the
  attribution (``candidates``, ``ranking``, ``attribution_notes``, ``stack_paths``), the window
  and the deploy;
* the dedup groups (``StateStore.groups()``): each member's series around its change (stored
  oriented: higher is worse) and its stack share;
* the regressions table (``StateStore.regression(id)``): when a regression was first and last
  seen, and its entry when no stored report holds it any more.

Which entry is shown: the newest report holding the id. Within one report an entry listed in
``regressions`` wins over ``filtered`` ones (a same-regression twin shares its regression's id);
among ``filtered`` entries with that id the one a stage other than ``same_regression`` removed
wins. A filtered entry is a *duplicate* when a representative of the same report lists it in
``duplicates``, or when the stage that removed it merged it (``som_dedup`` names the
representative's series, ``pairwise_dedup`` its group, whose first stored member is the
representative). A duplicate is explained with its own verdicts and then its representative in
full (attribution is only run on representatives).

Settings: the detection and dedup constants in force (``settings_in_force``) close the view
and the ``settings`` key of ``--json``: those of the config explain reads, the stages' own
defaults where it says nothing (a stored report does not record its run's settings).

Ids: the exact id, else a unique prefix (with or without the ``r-``), matched without regard to
case. An unknown id lists the closest known ids (rapidfuzz ratio).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import cast

from rich.console import Console

from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.config import Config, load_config
from regbot.bot.explanation.build import build_explanation, explanation_json
from regbot.bot.explanation.lookup import known_ids, resolve_id
from regbot.bot.state import open_state_read_only
from regbot.errors import InputError
from regbot.report.plain import json_plain

# --- finding a regression -----------------------------------------------------------------


# --- the group and the series --------------------------------------------------------------


# --- JSON -----------------------------------------------------------------------------------


# --- the command ----------------------------------------------------------------------------


def explain_config(args: argparse.Namespace) -> Config:
    """The config explain reads: ``-c``, else ``regbot.yml`` in the current directory, unless
    only ``--state`` is given (then the defaults hold). The state is ``--state``, else the
    config's ``state`` (default ``.regbot/state.db``)."""
    return load_config(args.config) if args.config is not None or args.state is None else Config()


INFLATION_KEYS = ("enabled", "share_inflation", "inflation_alpha")  # shown on their own


def settings_in_force(config: Config) -> dict[str, object]:
    """The detection and dedup constants of ``config`` as the stages get them (their own
    defaults where the file says nothing): ``detection.change_point``, ``detection.fleet_load``
    and the dedup stages' settings (``cost_shift`` None when off). ``source``: the file read
    (None: no file, the defaults). A stored report does not record its run's settings, so these
    are the ones the config gives now."""
    from regbot.detection.share_inflation import ShareInflationSettings  # scipy: only here

    detection, cost = config.detection, config.cost_shift
    shift = {k: v for k, v in asdict(cost).items() if k not in INFLATION_KEYS}
    source = config.source if config.source and Path(config.source).is_file() else None
    plain = json_plain(
        {
            "source": source,
            "detection": {
                "change_point": asdict(detection.change_point),
                "fleet_load": asdict(detection.fleet_load),
            },
            "dedup": {
                **asdict(config.dedup),
                "cost_shift": shift if cost.enabled else None,
                "share_inflation": asdict(ShareInflationSettings(alpha=cost.inflation_alpha))
                if cost.share_inflation
                else None,
            },
        }
    )
    return cast(dict[str, object], plain)  # json_plain keeps a mapping a mapping


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.views.explain import (  # the view imports this module
        explain_renderables,
        settings_renderables,
    )

    config = explain_config(args)
    path = Path(args.state if args.state is not None else config.state)
    try:
        with open_state_read_only(path) as state:
            reports = state.reports()
            ids = known_ids(reports, [k.id for k in state.known_regressions()])
            rid = resolve_id(args.regression_id, ids, path)
            explanation = build_explanation(
                args.regression_id,
                rid,
                reports,
                state.regression,
                state.groups(),
                config.higher_is_better,
            )
    except (sqlite3.Error, json.JSONDecodeError) as error:
        raise InputError(str(path), "a regbot state database (SQLite)", str(error)) from None
    settings = settings_in_force(config)
    if args.json:
        payload = {**explanation_json(explanation), "settings": settings}
        out.out(json.dumps(payload, indent=2, allow_nan=False), highlight=False)
        return EXIT_OK
    for renderable in [*explain_renderables(explanation), *settings_renderables(settings)]:
        out.print(renderable)
    return EXIT_OK
