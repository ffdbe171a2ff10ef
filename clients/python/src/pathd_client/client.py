"""The pathd client: one method per operation of openapi.yaml."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union, cast

import httpx

from .errors import PathdConnectionError, PathdError, PathdTimeout
from .sse import EventStream
from .types import (
    BatchResponse,
    FlowField,
    FlowFieldEvent,
    FlowFieldRequest,
    Health,
    LivePlan,
    LivePlanCreated,
    LivePlanEvent,
    LosResponse,
    MapCells,
    MapList,
    MapPatch,
    MapSummary,
    MatrixRequest,
    MatrixResponse,
    PatchResult,
    PathRequest,
    PathResult,
    PlanProgress,
    PlanRequest,
    PlanResult,
    Point,
    RandomResponse,
    Subscription,
    SubscriptionCreated,
    SubscriptionEvent,
)

_ADMIN, _QUERY, _NONE = "admin", "query", "none"


@dataclass
class PutResult:
    """The answer of ``put_map``: the summary, and whether the name was new (201)."""

    created: bool
    map: MapSummary


class Client:
    """A pathd client (synchronous, on httpx).

    Error answers raise :class:`PathdError` with the stable ``code``; a ``503`` with
    ``Retry-After`` is retried after the time the server asked for (``retries`` times, each
    wait at most ``max_retry_delay`` seconds); every request has ``timeout`` seconds (per
    attempt; ``timeout=`` on a call overrides it). Use it as a context manager, or call
    ``close()``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        admin_token: Optional[str] = None,
        query_token: Optional[str] = None,
        timeout: float = 30.0,
        retries: int = 3,
        max_retry_delay: float = 30.0,
        reconnect_delay: float = 500,
        max_reconnect_failures: int = 10,
        sleep: Callable[[float], None] = time.sleep,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        """``reconnect_delay`` is in milliseconds (as the SSE ``retry:`` field)."""
        self.base_url = base_url.rstrip("/")
        self.admin_token = admin_token
        self.query_token = query_token
        self.timeout = timeout
        self.retries = retries
        self.max_retry_delay = max_retry_delay
        self.reconnect_delay = reconnect_delay
        self.max_reconnect_failures = max_reconnect_failures
        self._sleep = sleep
        self._http = httpx.Client(transport=transport) if transport else httpx.Client()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- operations ----------------------------------------------------------------

    def health(self) -> Health:
        """``GET /healthz``."""
        return self._json("GET", "/healthz", auth=_NONE)

    def ready(self) -> Health:
        """``GET /readyz`` (``not_ready`` while the startup maps load)."""
        return self._json("GET", "/readyz", auth=_NONE)

    def metrics(self) -> str:
        """``GET /metrics``: Prometheus text."""
        return self._send("GET", "/metrics", auth=_NONE, accept="text/plain").text

    def openapi(self) -> str:
        """``GET /openapi.yaml``: the contract."""
        return self._send("GET", "/openapi.yaml", auth=_NONE, accept="application/yaml").text

    def list_maps(self) -> MapList:
        """``GET /v1/maps``: every map's summary, sorted by name."""
        return self._json("GET", "/v1/maps")

    def get_map(self, name: str, *, min_version: Optional[int] = None) -> MapSummary:
        """``GET /v1/maps/{name}``; ``min_version`` waits until this replica has it."""
        return self._json("GET", f"/v1/maps/{_seg(name)}", params=_params(min_version=min_version))

    def get_map_text(self, name: str, *, min_version: Optional[int] = None) -> str:
        """``GET /v1/maps/{name}`` as a Moving AI file."""
        r = self._send("GET", f"/v1/maps/{_seg(name)}", accept="text/plain",
                       params=_params(min_version=min_version))
        return r.text

    def get_map_cells(self, name: str) -> MapCells:
        """``GET /v1/maps/{name}/cells``."""
        return self._json("GET", f"/v1/maps/{_seg(name)}/cells")

    def put_map_text(self, name: str, text: str, *, movement: Optional[str] = None) -> PutResult:
        """``PUT /v1/maps/{name}`` with a Moving AI ``.map`` file."""
        r = self._send("PUT", f"/v1/maps/{_seg(name)}", auth=_ADMIN, content=text.encode(),
                       content_type="text/plain", params=_params(movement=movement))
        return PutResult(created=r.status_code == 201, map=r.json())

    def put_map(self, name: str, body: Mapping[str, Any]) -> PutResult:
        """``PUT /v1/maps/{name}`` with JSON costs (``MapCosts``) or rows (``MapRows``)."""
        r = self._send("PUT", f"/v1/maps/{_seg(name)}", auth=_ADMIN, body=body)
        return PutResult(created=r.status_code == 201, map=r.json())

    def delete_map(self, name: str) -> None:
        """``DELETE /v1/maps/{name}``."""
        self._send("DELETE", f"/v1/maps/{_seg(name)}", auth=_ADMIN)

    def patch_map(self, name: str, patch: MapPatch) -> PatchResult:
        """``PATCH /v1/maps/{name}``; ``if_version`` gives ``version_conflict`` when the map
        moved on."""
        return self._json("PATCH", f"/v1/maps/{_seg(name)}", auth=_ADMIN, body=patch)

    def find_path(self, name: str, query: PathRequest, *, timeout: Optional[float] = None) -> PathResult:
        """``POST /v1/maps/{name}/path``; "no path" is ``status: no_path``, not an error."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/path", body=query, timeout=timeout)

    def find_paths(self, name: str, queries: Sequence[PathRequest], *,
                   min_version: Optional[int] = None, timeout: Optional[float] = None) -> BatchResponse:
        """``POST /v1/maps/{name}/paths``: in order; a bad query gets an error item
        (see :func:`is_batch_error`)."""
        body: Dict[str, Any] = {"queries": list(queries)}
        if min_version is not None:
            body["min_version"] = min_version
        return self._json("POST", f"/v1/maps/{_seg(name)}/paths", body=body, timeout=timeout)

    def posthoc(self, name: str, query: PathRequest) -> Dict[str, Any]:
        """``POST /v1/maps/{name}/posthoc``: the search trace as a Posthoc document."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/posthoc", body=query)

    def matrix(self, name: str, table: MatrixRequest) -> MatrixResponse:
        """``POST /v1/maps/{name}/matrix``: path costs from each source to each target."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/matrix", body=table)

    def los(self, name: str, source: Point, target: Point, *,
            min_version: Optional[int] = None) -> LosResponse:
        """``POST /v1/maps/{name}/los``: line of sight, with the first blocking cell."""
        body: Dict[str, Any] = {"from": list(source), "to": list(target)}
        if min_version is not None:
            body["min_version"] = min_version
        return self._json("POST", f"/v1/maps/{_seg(name)}/los", body=body)

    def random(self, name: str, x: int, y: int, radius: float, *, seed: Optional[int] = None,
               size: Optional[int] = None, min_version: Optional[int] = None,
               timeout_ms: Optional[int] = None) -> RandomResponse:
        """``GET /v1/maps/{name}/random``: a uniformly random cell within path cost
        ``radius`` of ``(x, y)``; the same ``seed`` draws the same cell."""
        params = _params(x=x, y=y, seed=seed, size=size, min_version=min_version,
                         timeout_ms=timeout_ms)
        params["radius"] = repr(float(radius))
        return self._json("GET", f"/v1/maps/{_seg(name)}/random", params=params)

    def create_subscription(self, name: str, query: PathRequest) -> SubscriptionCreated:
        """``POST /v1/maps/{name}/subscriptions``; keep the ``secret``."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/subscriptions", body=query)

    def get_subscription(self, sub_id: str) -> Subscription:
        """``GET /v1/subscriptions/{id}``."""
        return self._json("GET", f"/v1/subscriptions/{_seg(sub_id)}")

    def move_subscription(self, sub_id: str, secret: Optional[str], position: Point) -> Subscription:
        """``PATCH /v1/subscriptions/{id}``: the agent moved (``secret=None``: the admin token)."""
        headers, auth = _secret("x-subscription-secret", secret)
        return self._json("PATCH", f"/v1/subscriptions/{_seg(sub_id)}", auth=auth, headers=headers,
                          body={"position": list(position)})

    def delete_subscription(self, sub_id: str, secret: Optional[str] = None) -> None:
        """``DELETE /v1/subscriptions/{id}`` (the secret, or the admin token)."""
        headers, auth = _secret("x-subscription-secret", secret)
        self._send("DELETE", f"/v1/subscriptions/{_seg(sub_id)}", auth=auth, headers=headers)

    def subscription_events(self, sub_id: str, *, last_event_id: Optional[int] = None
                            ) -> EventStream[SubscriptionEvent]:
        """``GET /v1/subscriptions/{id}/events``, resumed with ``Last-Event-ID``."""
        return EventStream(self, f"/v1/subscriptions/{_seg(sub_id)}/events", last_event_id)

    def create_flow_field(self, name: str, request: FlowFieldRequest) -> FlowField:
        """``POST /v1/maps/{name}/flowfields``; keep the ``secret``."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/flowfields", body=request)

    def get_flow_field(self, field_id: str) -> FlowField:
        """``GET /v1/flowfields/{id}``."""
        return self._json("GET", f"/v1/flowfields/{_seg(field_id)}")

    def delete_flow_field(self, field_id: str, secret: Optional[str] = None) -> None:
        """``DELETE /v1/flowfields/{id}`` (the secret, or the admin token)."""
        headers, auth = _secret("x-flowfield-secret", secret)
        self._send("DELETE", f"/v1/flowfields/{_seg(field_id)}", auth=auth, headers=headers)

    def flow_field_events(self, field_id: str, *, last_event_id: Optional[int] = None
                          ) -> EventStream[FlowFieldEvent]:
        """``GET /v1/flowfields/{id}/events``; on ``resync`` fetch the field again
        (:func:`watch_flow_field` does)."""
        return EventStream(self, f"/v1/flowfields/{_seg(field_id)}/events", last_event_id)

    def plan_agents(self, name: str, request: PlanRequest) -> PlanResult:
        """``POST /v1/maps/{name}/plans``: one collision-free plan for many agents."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/plans",
                          body={**request, "subscribe": False})

    def create_live_plan(self, name: str, request: PlanRequest) -> LivePlanCreated:
        """``POST /v1/maps/{name}/plans`` with ``subscribe``: a live plan, re-planned when
        patches wall its agents' ways and when they fall behind; keep the ``secret``."""
        return self._json("POST", f"/v1/maps/{_seg(name)}/plans",
                          body={**request, "subscribe": True})

    def get_plan(self, plan_id: str) -> LivePlan:
        """``GET /v1/plans/{id}``."""
        return self._json("GET", f"/v1/plans/{_seg(plan_id)}")

    def report_plan_progress(self, plan_id: str, secret: Optional[str],
                             progress: PlanProgress) -> LivePlan:
        """``PATCH /v1/plans/{id}``: the agents' progress (``secret=None``: the admin token);
        delayed agents are re-planned before the answer."""
        headers, auth = _secret("x-plan-secret", secret)
        return self._json("PATCH", f"/v1/plans/{_seg(plan_id)}", auth=auth, headers=headers,
                          body=dict(progress))

    def delete_plan(self, plan_id: str, secret: Optional[str] = None) -> None:
        """``DELETE /v1/plans/{id}`` (the secret, or the admin token)."""
        headers, auth = _secret("x-plan-secret", secret)
        self._send("DELETE", f"/v1/plans/{_seg(plan_id)}", auth=auth, headers=headers)

    def plan_events(self, plan_id: str, *, last_event_id: Optional[int] = None
                    ) -> EventStream[LivePlanEvent]:
        """``GET /v1/plans/{id}/events``: every new plan, resumed with ``Last-Event-ID``."""
        return EventStream(self, f"/v1/plans/{_seg(plan_id)}/events", last_event_id)

    # --- transport -----------------------------------------------------------------

    def _headers(self, auth: str, accept: str, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        h = {"accept": accept}
        token = None
        if auth == _ADMIN:
            token = self.admin_token or self.query_token
        elif auth == _QUERY:
            token = self.query_token or self.admin_token
        if token:
            h["authorization"] = f"Bearer {token}"
        h.update(extra or {})
        return h

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        return self._send(method, path, **kw).json()

    def _send(self, method: str, path: str, *, auth: str = _QUERY, accept: str = "application/json",
              headers: Optional[Mapping[str, str]] = None, params: Optional[Dict[str, str]] = None,
              body: Any = None, content: Optional[bytes] = None, content_type: Optional[str] = None,
              timeout: Optional[float] = None) -> httpx.Response:
        h = self._headers(auth, accept, headers)
        if body is not None:
            content, content_type = json.dumps(body).encode(), "application/json"
        if content_type:
            h["content-type"] = content_type
        url = self.base_url + path
        t = self.timeout if timeout is None else timeout
        attempt = 0
        while True:
            try:
                r = self._http.request(method, url, headers=h, params=params, content=content, timeout=t)
            except httpx.TimeoutException as e:
                raise PathdTimeout(f"no answer from {url} within {t} s") from e
            except httpx.TransportError as e:
                raise PathdConnectionError(f"cannot reach {url}: {e}") from e
            if r.is_success:
                return r
            err = _error_of(r)
            if not err.retryable or attempt >= self.retries:
                raise err
            attempt += 1
            self._sleep(min(float(cast(int, err.retry_after)), self.max_retry_delay))

    def _open_stream(self, path: str, last_event_id: Optional[int]) -> httpx.Response:
        extra = {} if last_event_id is None else {"last-event-id": str(last_event_id)}
        h = self._headers(_QUERY, "text/event-stream", extra)
        url = self.base_url + path
        # The timeout covers connecting and the headers, not the (long-lived) body.
        timeout = httpx.Timeout(self.timeout, read=None)
        try:
            req = self._http.build_request("GET", url, headers=h, timeout=timeout)
            r = self._http.send(req, stream=True)
        except httpx.TimeoutException as e:
            raise PathdTimeout(f"no answer from {url} within {self.timeout} s") from e
        except httpx.TransportError as e:
            raise PathdConnectionError(f"cannot reach {url}: {e}") from e
        if not r.is_success:
            r.read()
            r.close()
            raise _error_of(r)
        return r


def _error_of(r: httpx.Response) -> PathdError:
    code, message = "internal", r.text
    try:
        body = r.json()
        code, message = body["error"]["code"], body["error"]["message"]
    except (ValueError, KeyError, TypeError):
        pass
    ra = r.headers.get("retry-after", "").strip()
    return PathdError(r.status_code, code, message, int(ra) if ra.isdigit() else None)


def _params(**kw: Optional[Union[int, str]]) -> Dict[str, str]:
    return {k: str(v) for k, v in kw.items() if v is not None}


def _secret(header: str, secret: Optional[str]):
    if secret is None:
        return {}, _ADMIN
    return {header: secret}, _QUERY


def _seg(s: str) -> str:
    from urllib.parse import quote

    return quote(s, safe="")


def is_batch_error(item: Mapping[str, Any]) -> bool:
    """Whether a batch item is an error (``{"status": "error", "error": {...}}``) rather
    than a result: ``status`` tells them apart (the contract's discriminator)."""
    return item.get("status") == "error"
