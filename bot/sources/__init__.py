"""Where a run's series come from: profile files and stores (``profiles``), series files,
Prometheus (``prometheus``), gathered for one release window (``gather``), and the check that
each configured source covered its baseline (``baseline``)."""

from regbot.bot.sources.gather import RunSeries, configured_sources, gather_series
from regbot.bot.sources.source import FetchWindow, Source

__all__ = ["FetchWindow", "RunSeries", "Source", "configured_sources", "gather_series"]
