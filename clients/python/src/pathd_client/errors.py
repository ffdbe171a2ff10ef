"""Errors: an error answer carries the stable ``code``; transport failures are their own."""

from __future__ import annotations

from typing import Optional


class PathdError(Exception):
    """An error answer of pathd: HTTP ``status``, the stable ``code`` (``map_not_found``,
    ``version_conflict``, ...), the ``message`` and ``retry_after`` (seconds) when sent."""

    def __init__(self, status: int, code: str, message: str, retry_after: Optional[int] = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether the server asked to come back later (503 with Retry-After)."""
        return self.status == 503 and self.retry_after is not None


class PathdTimeout(Exception):
    """No (complete) answer within the timeout."""


class PathdConnectionError(Exception):
    """The server could not be reached, or the connection broke."""
