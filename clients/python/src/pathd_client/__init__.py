"""A client for pathd, the pathfinding microservice.

>>> from pathd_client import Client
>>> with Client("http://localhost:8080") as c:           # doctest: +SKIP
...     c.find_path("arena2", {"start": [5, 100], "goal": [100, 100]})["cost"]
"""

from .client import Client, PutResult, is_batch_error
from .errors import PathdConnectionError, PathdError, PathdTimeout
from .flowfield import GOAL, STEPS, UNREACHABLE, DecodedFlowField, watch_flow_field
from .sse import EventStream, Frame, read_frames

__all__ = [
    "Client", "PutResult", "is_batch_error", "PathdError", "PathdTimeout",
    "PathdConnectionError", "DecodedFlowField", "watch_flow_field", "STEPS", "GOAL",
    "UNREACHABLE", "EventStream", "Frame", "read_frames",
]
