"""How busy a run kept the cluster, read back from its trials (``started_at``, ``finished_at``,
``seconds``, ``node``): the benchmark's efficiency figures and the cluster test's overlap check."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Usage:
    trials: int
    busy_s: float  # seconds spent inside workers, summed over trials
    span_s: float  # first trial's start to last trial's end
    cells_at_once: int  # the most cells with a trial running at one instant
    cells_at_once_on_every_node: int  # the same, at instants when every node has a trial running
    nodes: int  # distinct nodes that ran trials

    def efficiency(self, slots: int, wall_s: float | None = None) -> float:
        """busy seconds ÷ (wall × slots); the wall defaults to the span of the trials."""
        wall = self.span_s if wall_s is None else wall_s
        return self.busy_s / (wall * slots) if wall > 0 and slots > 0 else 0.0


def usage(trials: pd.DataFrame) -> Usage:
    """From rows of the ``trials`` table (at least cell_id, started_at, finished_at, seconds, node)."""
    t = trials.dropna(subset=["started_at", "finished_at"])
    if t.empty:
        return Usage(0, 0.0, 0.0, 0, 0, 0)
    start, end = pd.to_datetime(t.started_at), pd.to_datetime(t.finished_at)
    span = (end.max() - start.min()).total_seconds()
    # Sweep the start and end instants (ends sort before starts at the same instant), counting the
    # cells and the nodes with a trial running.
    nodes = t.node.fillna("?")
    events = sorted([(s, 1, c, n) for s, c, n in zip(start, t.cell_id, nodes, strict=True)]
                    + [(e, -1, c, n) for e, c, n in zip(end, t.cell_id, nodes, strict=True)])
    cells: dict[str, int] = {}
    on: dict[str, int] = {}
    most = most_everywhere = 0
    for _, step, cell, node in events:
        for running, key in ((cells, cell), (on, node)):
            running[key] = running.get(key, 0) + step
            if not running[key]:
                del running[key]
        most = max(most, len(cells))
        if len(on) == nodes.nunique():
            most_everywhere = max(most_everywhere, len(cells))
    return Usage(trials=len(t), busy_s=float(t.seconds.fillna(0).sum()), span_s=span, cells_at_once=most,
                 cells_at_once_on_every_node=most_everywhere, nodes=int(nodes.nunique()))
