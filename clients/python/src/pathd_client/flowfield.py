"""Flow fields decoded, and kept current from their event stream."""

from __future__ import annotations

import base64
import math
import struct
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

from .types import FlowField, FlowFieldEvent, Point

if TYPE_CHECKING:
    from .client import Client

STEPS: List[Point] = [(0, -1), (1, 0), (0, 1), (-1, 0), (1, -1), (1, 1), (-1, 1), (-1, -1)]
"""The moves of directions 0-7: N, E, S, W, NE, SE, SW, NW (``y`` grows downwards)."""
GOAL = 8
UNREACHABLE = 255


class DecodedFlowField:
    """A flow field with its base64 arrays decoded."""

    def __init__(self, field: FlowField) -> None:
        self.id = field["id"]
        self.region = field["region"]
        self.goal = tuple(field["goal"])
        self.seq = field["seq"]
        self.map_version = field["map_version"]
        self.directions = bytearray(base64.b64decode(field["directions"]))
        raw = base64.b64decode(field["costs"])
        self.costs: List[float] = list(struct.unpack(f"<{len(raw) // 8}d", raw))

    def _index(self, p: Point) -> int:
        r = self.region
        x, y = p
        if x < r["x"] or y < r["y"] or x >= r["x"] + r["width"] or y >= r["y"] + r["height"]:
            return -1
        return (y - r["y"]) * r["width"] + (x - r["x"])

    def direction(self, p: Point) -> int:
        i = self._index(p)
        return UNREACHABLE if i < 0 else self.directions[i]

    def cost(self, p: Point) -> float:
        i = self._index(p)
        return math.inf if i < 0 else self.costs[i]

    def next(self, p: Point) -> Optional[Point]:
        """The cell after ``p`` towards the goal (None at the goal or when unreachable)."""
        d = self.direction(p)
        if d >= len(STEPS):
            return None
        return (p[0] + STEPS[d][0], p[1] + STEPS[d][1])

    def apply(self, event: FlowFieldEvent) -> None:
        """Applies a ``changed`` event's absolute values (harmless if already included)."""
        for x, y, d, c in event["cells"]:
            i = self._index((x, y))
            if i >= 0:
                self.directions[i] = d
                self.costs[i] = math.inf if c is None else float(c)
        self.seq = max(self.seq, event["seq"])
        self.map_version = max(self.map_version, event["map_version"])


def watch_flow_field(client: "Client", field_id: str) -> Iterator[Tuple[FlowFieldEvent, DecodedFlowField]]:
    """Fetches a field (yielded first, as a ``current`` event) and follows its events from
    its ``seq``, so nothing is lost in between; applies ``changed`` events, fetches again
    on ``resync``; ends after a final event."""
    field = DecodedFlowField(client.get_flow_field(field_id))
    current: Any = {"id": field_id, "seq": field.seq, "map_version": field.map_version,
                    "reason": "current", "cells": []}
    yield current, field
    with client.flow_field_events(field_id, last_event_id=field.seq) as stream:
        for event in stream:
            if event["reason"] == "changed":
                field.apply(event)
            elif event["reason"] == "resync":
                field = DecodedFlowField(client.get_flow_field(field_id))
            yield event, field
