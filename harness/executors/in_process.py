"""Cells run one by one in this process: the serial path (one worker, or one cell)."""
from __future__ import annotations

from collections import deque
from typing import Any

from harness.executors.base import LostRow, MayStart, OnRow, RunCell


class InProcess:
    """One cell at a time, here; a run that raises stops the batch (nothing else runs it)."""

    def run(self, cells: list[Any], run_cell: RunCell, on_row: OnRow, may_start: MayStart | None,
            lost_row: LostRow) -> list[Any]:
        queue = deque(cells)
        while queue and (may_start is None or may_start()):
            on_row(run_cell(queue.popleft()))
        return list(queue)
