"""The shared client scenario (clients/SCENARIO.md) against a real pathd: the README's curl
session, a subscription that survives forced reconnects (replay, then resync), flow
fields, min_version, if_version, tokens and secrets."""

from __future__ import annotations

import base64

import pytest

from pathd_client import Client, DecodedFlowField, PathdError, is_batch_error, watch_flow_field

from conftest import ADMIN_TOKEN, until

TINY = "type octile\nheight 3\nwidth 4\nmap\n....\n.@@.\n....\n"


def raises(status: int, code: str):
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(PathdError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self.ctx.__exit__(*exc)
            assert (self.info.value.status, self.info.value.code) == (status, code), self.info.value
            return suppressed

    return Check()


def test_the_shared_scenario(pathd, proxy):
    admin = Client(pathd.url, admin_token=ADMIN_TOKEN)
    anon = Client(pathd.url)
    via_proxy = Client(proxy.url, reconnect_delay=50)  # the stream goes through the proxy

    # Health and the token: an anonymous write is refused with a typed error.
    assert admin.ready()["status"] == "ready"
    with raises(401, "unauthorized"):
        anon.put_map_text("tiny", TINY)

    # Upload (201 created), a JSON map with costs.
    tiny = admin.put_map_text("tiny", TINY)
    assert tiny.created
    assert (tiny.map["name"], tiny.map["version"], tiny.map["width"], tiny.map["height"]) == ("tiny", 1, 4, 3)
    assert admin.put_map("hills", {"width": 3, "height": 2, "costs": [1, 5, 1, 1, 0, 1], "movement": "octile"}).created

    # Paths, as in the README.
    p = admin.find_path("tiny", {"start": (0, 1), "goal": (3, 1)})
    assert p["status"] == "found"
    assert p["path"] == [[0, 1], [0, 0], [1, 0], [2, 0], [3, 0], [3, 1]]
    assert (p["cost"], p["algorithm"], p["map_version"]) == (5.0, "astar", 1)
    d = admin.find_path("den520d", {"start": (70, 50), "goal": (200, 200), "algorithm": "jps", "smooth": True})
    assert (d["cost"], d["path_cost"]) == (215.89051812430688, 225.52186130069825)
    assert d["waypoints"] == [[70, 50], [71, 73], [140, 109], [149, 114], [200, 174], [200, 200]]

    # A batch, answered in order; a bad query is an error item of its own.
    b = admin.find_paths("arena2", [
        {"start": (5, 100), "goal": (100, 100)},
        {"start": (250, 190), "goal": (250, 190)},
        {"start": (9999, 0), "goal": (1, 1)},
    ])
    assert b["map_version"] == 1
    r0, r1, r2 = b["results"]
    assert not is_batch_error(r0) and not is_batch_error(r1) and is_batch_error(r2)
    assert r0["cost"] == 99.14213562373095
    assert r0["path"][:4] == [[5, 100], [6, 100], [7, 100], [8, 101]]
    assert (r1["path"], r1["cost"]) == ([[250, 190]], 0.0)
    assert r2["error"]["code"] == "out_of_bounds"

    # min_version: a version the map has is answered at once; one never written is 409.
    assert admin.find_path("hills", {"start": (0, 0), "goal": (2, 0), "min_version": 1})["status"] == "found"
    with raises(409, "version_conflict"):
        admin.find_path("hills", {"start": (0, 0), "goal": (2, 0), "min_version": 99})
    assert admin.get_map("hills", min_version=1)["version"] == 1

    # A subscription, followed through the proxy.
    sub = admin.create_subscription("tiny", {"start": (0, 1), "goal": (3, 1)})
    assert sub["cost"] == 5.0 and len(sub["id"]) == 32 and sub["secret"]
    stream = via_proxy.subscription_events(sub["id"])
    events = iter(stream)
    e1 = next(events)
    assert (e1["reason"], e1["seq"], e1["cost"]) == ("initial", 1, 5.0)

    # Forced reconnect 1: the connection drops, a patch lands meanwhile; the stream comes
    # back with Last-Event-ID 1 and the server replays the missed event.
    assert proxy.cut() == 2
    patched = admin.patch_map("tiny", {"cells": [{"x": 1, "y": 0, "cost": 0}], "if_version": 1})
    assert (patched["version"], patched["changed_cells"]) == (2, 1)
    until("event 2 published", lambda: anon.get_subscription(sub["id"])["seq"] == 2)
    e2 = next(events)
    assert (e2["reason"], e2["seq"], e2["map_version"]) == ("blocked", 2, 2)
    assert stream.reconnects >= 1

    # A stale if_version is a typed conflict.
    with raises(409, "version_conflict"):
        admin.patch_map("tiny", {"cells": [{"x": 0, "y": 0, "cost": 1}], "if_version": 1})

    # The agent moves along its path, with the secret.
    moved = anon.move_subscription(sub["id"], sub["secret"], (0, 2))
    assert moved["path"] == [[0, 2], [1, 2], [2, 2], [3, 2], [3, 1]]
    assert (moved["cost"], moved["map_version"], moved["position"]) == (4.0, 2, [0, 2])

    # Forced reconnect 2: two events while away, more than the server keeps (one): the
    # stream comes back with one resync holding the full state.
    before = stream.reconnects
    proxy.cut()
    admin.patch_map("tiny", {"cells": [{"x": 2, "y": 2, "cost": 0}]})
    admin.patch_map("tiny", {"cells": [{"x": 2, "y": 2, "cost": 1}]})
    until("event 4 published", lambda: anon.get_subscription(sub["id"])["seq"] == 4)
    e3 = next(events)
    assert (e3["reason"], e3["seq"], e3["map_version"], e3["cost"]) == ("resync", 4, 4, 4.0)
    assert e3["path"] == moved["path"]
    assert stream.reconnects > before

    # Deleting needs the secret: 403 without, then the stream's final event.
    with raises(403, "forbidden"):
        anon.delete_subscription(sub["id"], "not-the-secret")
    anon.delete_subscription(sub["id"], sub["secret"])
    assert next(events)["reason"] == "deleted"
    assert next(events, None) is None
    with raises(404, "subscription_not_found"):
        anon.get_subscription(sub["id"])

    # A flow field, kept current: a patch's changed cells are applied to the local copy
    # and equal a fresh read.
    ff = admin.create_flow_field("hills", {"goal": (0, 0)})
    assert ff["secret"]
    watch = watch_flow_field(admin, ff["id"])
    ev, field = next(watch)
    assert ev["reason"] == "current"
    assert (field.cost((0, 0)), field.cost((1, 0))) == (0.0, 3.0)
    admin.patch_map("hills", {"cells": [{"x": 1, "y": 0, "cost": 1}]})
    ev, field = next(watch)
    assert ev["reason"] == "changed"
    assert field.cost((1, 0)) == 1.0
    fresh = DecodedFlowField(admin.get_flow_field(ff["id"]))
    assert (field.costs, field.directions) == (fresh.costs, fresh.directions)
    assert field.next((2, 0)) == (1, 0)
    with raises(403, "forbidden"):
        anon.delete_flow_field(ff["id"], "wrong")
    anon.delete_flow_field(ff["id"], ff["secret"])
    ev, _ = next(watch)
    assert ev["reason"] == "deleted"
    assert next(watch, None) is None

    # The other operations: liveness, the contract, a search trace.
    assert anon.health()["status"] == "ok"
    assert anon.openapi().startswith("openapi: 3.2")
    kinds = [e["type"] for e in anon.posthoc("tiny", {"start": (0, 2), "goal": (3, 1)})["events"]]
    assert (kinds[0], kinds[-1]) == ("source", "end")

    # The rest of the README's session.
    names = [m["name"] for m in admin.list_maps()["maps"]]
    assert names == sorted(names) and "tiny" in names and "Berlin_0_256" in names
    assert admin.get_map_text("tiny") == "type octile\nheight 3\nwidth 4\nmap\n.@..\n.@@.\n....\n"
    assert len(base64.b64decode(admin.get_map_cells("tiny")["costs"])) == 12
    admin.delete_map("tiny")
    with raises(404, "map_not_found"):
        admin.get_map("tiny")
    assert "pathd_" in admin.metrics()


def test_abstraction_building_is_retried(pathd):
    """A fresh map's JPS+ table is built in the background (503 abstraction_building with
    Retry-After meanwhile); the client waits it out."""
    c = Client(pathd.url, admin_token=ADMIN_TOKEN)
    c.put_map("open512", {"width": 512, "height": 512, "rows": ["." * 512] * 512})
    r = c.find_path("open512", {"start": (0, 0), "goal": (511, 511), "algorithm": "jps_plus"})
    assert (r["status"], r["algorithm"]) == ("found", "jps_plus")


def test_matrix_los_random(pathd):
    admin = Client(pathd.url, admin_token=ADMIN_TOKEN)
    admin.put_map_text("games", TINY)
    m = admin.matrix("games", {"sources": [(0, 1), (3, 0)], "targets": [(3, 1), (1, 1), (0, 1)]})
    assert m["costs"] == [[5.0, None, 0.0], [1.0, None, 4.0]]
    with raises(400, "matrix_too_large"):
        admin.matrix("games", {"sources": [(0, 0)] * 257, "targets": []})
    sight = admin.los("games", (0, 0), (3, 2))
    assert (sight["visible"], sight["blocked_at"]) == (False, [1, 1])
    assert admin.los("games", (0, 0), (3, 0))["blocked_at"] is None
    r = admin.random("games", 0, 1, 2, seed=7)
    assert r["distance"] <= 2 and r["candidates"] == 5 and r["seed"] == 7
    assert admin.random("games", 0, 1, 2, seed=7) == r
    with raises(400, "start_blocked"):
        admin.random("games", 1, 1, 2)
    admin.delete_map("games")


def test_a_live_plan(pathd):
    """Created, followed, progressed, re-planned after a wall on an agent's way, deleted."""
    admin = Client(pathd.url, admin_token=ADMIN_TOKEN)
    admin.put_map_text("corridor", "type octile\nheight 3\nwidth 6\nmap\n......\n.@@@@.\n......\n",
                       movement="cardinal")
    assert admin.plan_agents("corridor", {"agents": [{"start": (0, 0), "goal": (5, 0)}]})["status"] == "solved"
    live = admin.create_live_plan("corridor", {
        "agents": [{"start": (0, 0), "goal": (5, 0)}, {"start": (5, 2), "goal": (0, 2)}],
        "time_limit_ms": 200,
    })
    assert (live["status"], live["seq"], len(live["secret"])) == ("solved", 1, 32)
    with admin.plan_events(live["id"]) as stream:
        events = iter(stream)
        first = next(events)
        assert (first["reason"], first["paths"]) == ("initial", live["paths"])
        moved = admin.report_plan_progress(live["id"], live["secret"], {"time_step": 1})
        assert moved["time_step"] == 1
        assert moved["positions"] == [live["paths"][0][1], live["paths"][1][1]]
        admin.patch_map("corridor", {"cells": [{"x": 3, "y": 0, "cost": 0}]})
        ev = next(events)
        assert (ev["reason"], ev["start_step"]) == ("blocked", 1)
        assert all([3, 0] not in p for p in ev["paths"])
        assert admin.get_plan(live["id"])["paths"] == ev["paths"]
        with raises(403, "forbidden"):
            Client(pathd.url).report_plan_progress(live["id"], "wrong", {"time_step": 2})
        admin.delete_plan(live["id"], live["secret"])
        assert next(events)["reason"] == "deleted"
    with raises(404, "plan_not_found"):
        admin.get_plan(live["id"])
