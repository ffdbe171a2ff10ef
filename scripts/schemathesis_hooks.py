"""Checks of our own for scripts/schemathesis.sh, beside schemathesis' `--checks all`.

The contract cannot say everything the server checks: a point inside 0..8191 may lie off
the fuzz map (`400 out_of_bounds`), `goal`, `goals` and `flee` are exclusive, a radius's
region may not fit its time budget (`400 limit_reached`). So `positive_data_acceptance`
takes `400` for a schema-valid request (scripts/schemathesis.toml), and these checks keep
what that gives up:

- `schema_valid_data_is_parsed`: a schema-valid request is never refused by the *parser*
  (`400 invalid_request` "Failed to deserialize..."/"Failed to parse...", the answers to a
  body or query of the wrong shape): such a refusal means the contract and the server's
  types disagree (the integral floats and the overflowing `min_version` of issue 24).
- `batch_reports_invalid_queries`: the batch's `negative_data_rejection`. A batch answers
  each query's own error as its item (`status: error`) and still runs the others, so a
  schema-violating query inside a batch is answered `200` with an error item, or `4xx`
  when the body itself cannot be read; never `200` with every item a result.
"""

import schemathesis
from schemathesis.core.parameters import ParameterLocation

PARSE_FAILURES = ("Failed to deserialize", "Failed to parse")


def _error_message(response):
    try:
        body = response.json()
    except Exception:  # not JSON: not one of ours to judge here
        return None
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return None
    return body["error"].get("message")


def _mode(case):
    meta = getattr(case, "meta", None)
    return None if meta is None else meta.generation.mode


@schemathesis.check
def schema_valid_data_is_parsed(ctx, response, case):
    mode = _mode(case)
    if mode is None or not mode.is_positive or response.status_code != 400:
        return None
    message = _error_message(response) or ""
    if message.startswith(PARSE_FAILURES):
        raise AssertionError(
            "A schema-valid request was refused by the parser (the contract and the "
            f"server's types disagree): {message}"
        )
    return None


@schemathesis.check
def batch_reports_invalid_queries(ctx, response, case):
    if case.operation.definition.raw.get("operationId") != "findPaths":
        return None
    meta = getattr(case, "meta", None)
    body = None if meta is None else meta.components.get(ParameterLocation.BODY)
    if body is None or not body.mode.is_negative or response.status_code != 200:
        return None
    results = response.json().get("results", [])
    queries = case.body.get("queries") if isinstance(case.body, dict) else None
    if isinstance(queries, list) and any(r.get("status") == "error" for r in results):
        return None
    raise AssertionError(
        "A schema-violating batch was answered 200 with no error item: "
        f"{response.text[:300]}"
    )


# The fuzz map is 64x64 and a generated point is anywhere in 0..8191; most maps have no
# profile of a generated name, and plans take no `profile` and only `size` 1. So nearly every
# generated subscription, flow field or plan would be a `400`, and the stateful phase would
# never get an id and secret to follow the contract's links with. For positive cases only
# (schema-valid ones, which stay schema-valid), this hook moves the points onto the map's
# open left half (x, y < 32) and drops `profile`, `size` and `min_version`; `subscribe` is
# left to the generator, so about half of the plans are live ones with links to follow.
# Negative cases are sent as generated.
LINKED_CREATES = ("createSubscription", "createFlowField", "planAgents")


def _on_map(value):
    # Integral floats (`233.0`) are valid integers too.
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(c, (int, float)) and float(c).is_integer() for c in value)
    ):
        return [int(value[0]) % 32, int(value[1]) % 32]
    return value


def _points_on_map(body):
    if not isinstance(body, dict):
        return body
    for key in ("start", "goal", "position"):
        if key in body:
            body[key] = _on_map(body[key])
    for key in ("goals", "targets"):
        if isinstance(body.get(key), list):
            body[key] = [_on_map(p) for p in body[key]]
    if isinstance(body.get("agents"), list):
        body["agents"] = [_points_on_map(a) for a in body["agents"]]
    for key in ("profile", "size", "min_version"):
        body.pop(key, None)
    return body


@schemathesis.hook
def map_case(ctx, case):
    if case.operation.definition.raw.get("operationId") not in LINKED_CREATES:
        return case
    mode = _mode(case)
    if mode is not None and mode.is_positive and isinstance(case.body, dict):
        case.body = _points_on_map(case.body)
    return case

