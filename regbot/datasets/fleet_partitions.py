"""A simulated fleet too large for one process, as partitions each worker generates itself.

``simulated_partitions(total, points, size, seed)`` cuts ``total`` series into balanced
partitions (``partition_ranges``); partition k is ``simulate_fleet`` of its own size with seed
``seed + k``, its ids prefixed ``p<k>/`` so that ids are unique across the fleet. A partition is
a small picklable description: a Dask or process-pool worker regenerates its series from it (the
same series every time), so a million-series fleet never exists in one process. The planted
truth of a partition comes from the same call (``SimulatedPartition.events``).

Samples per bucket grow with the partition (20 per subroutine, as ``detect_scale``'s fleet),
so a subroutine is sampled as densely in a large fleet as in a small one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from regbot.datasets.fleet import FleetScenario, PlantedEvent, simulate_fleet
from regbot.partition_ranges import partition_ranges
from regbot.profiles.model import Series

__all__ = ["SimulatedPartition", "simulated_partitions"]

SAMPLES_PER_SERIES = 20


@dataclass(frozen=True, slots=True)
class SimulatedPartition:
    """Partition ``index`` of a simulated fleet: ``scenario`` simulated with ``seed``."""

    scenario: FleetScenario
    seed: int
    index: int

    def _simulated(self) -> tuple[list[Series], list[PlantedEvent]]:
        series, events, _ = simulate_fleet(self.scenario, self.seed)
        prefix = f"p{self.index:05d}/"
        renamed = [replace(s, id=prefix + s.id) for s in series]
        return renamed, [replace(e, series_id=prefix + e.series_id) for e in events]

    def load(self) -> list[Series]:
        """The partition's series (regenerated on each call)."""
        return self._simulated()[0]

    def events(self) -> list[PlantedEvent]:
        """The planted truth of the partition's series, in their order."""
        return self._simulated()[1]


def simulated_partitions(
    total: int, points: int, size: int, seed: int, **scenario: object
) -> list[SimulatedPartition]:
    """The partitions of a ``total``-series fleet of ``points`` points (module docstring);
    ``scenario``: further ``FleetScenario`` fields."""
    parts = []
    for k, (a, b) in enumerate(partition_ranges(total, size)):
        settings = FleetScenario(
            n_series=b - a,
            n_points=points,
            samples_per_bucket=SAMPLES_PER_SERIES * (b - a),
            **scenario,  # type: ignore[arg-type]
        )
        parts.append(SimulatedPartition(settings, seed + k, k))
    return parts
