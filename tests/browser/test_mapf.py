#!/usr/bin/env python3
"""Browser tests of the visualiser's "many agents" panel (issue 26; run by
scripts/browser-test.sh after test_visualiser.py, same server, same Chromium).

Each test drives the page as a user does (the panel's buttons, clicks on the map, the
paint tools) and checks what it shows against the server and against a checker of this
file's own (`conflicts`, `check_moves`): the plan the page plays is the server's for the
same request; the agents drawn at step t stand where the plan says; planning each agent
alone on a corridor shows conflicts and the plan none; a wall painted on an agent's way
during playback brings a new plan from the agents' cells at that step, round the wall.

BROWSER_TESTS=substring[,substring] runs only the tests whose names contain one of them.
"""

import json
import os
import sys
import time
import traceback
import urllib.request
from collections import deque

from playwright.sync_api import sync_playwright

from test_ui import ARGS, BASE, SHOTS, Ui, http, wait_for

BIG = "arena2"  # a bundled octile map
CORRIDOR = "mapf-corridor"
ROOM = "mapf-room"

# A one-cell corridor with two dead-end bays: agents walking it alone run into each other;
# planned together, some wait in a bay.
CORRIDOR_MAP = """type cardinal
height 5
width 14
map
@@@@@@@@@@@@@@
@............@
@@@@@.@@@.@@@@
@@@@@.@@@.@@@@
@@@@@@@@@@@@@@
"""

# A small room with pillars, large on screen (for pixels and clicks).
ROOM_MAP = """type cardinal
height 12
width 18
map
@@@@@@@@@@@@@@@@@@
@................@
@..@@.....@@@....@
@..@@.....@......@
@.........@...@@.@
@....@@.......@@.@
@....@@..........@
@..........@@....@
@.@@@......@@....@
@.@..............@
@................@
@@@@@@@@@@@@@@@@@@
"""


def put_map(name, text):
    req = urllib.request.Request(f"{BASE}/v1/maps/{name}", data=text.encode(), method="PUT")
    req.add_header("Content-Type", "text/plain")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


def cells(name):
    """(W, H, costs) of a map, from the server's raw cells."""
    req = urllib.request.Request(f"{BASE}/v1/maps/{name}/cells",
                                 headers={"Accept": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return int(r.headers["x-map-width"]), int(r.headers["x-map-height"]), r.read()


def region_of(w, h, costs, start):
    """The 4-connected open cells reachable from `start`."""
    seen = {tuple(start)}
    todo = deque([tuple(start)])
    while todo:
        x, y = todo.popleft()
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if 0 <= nx < w and 0 <= ny < h and (nx, ny) not in seen and costs[ny * w + nx]:
                seen.add((nx, ny))
                todo.append((nx, ny))
    return seen


def conflicts(paths, octile):
    """Vertex, swap and (octile) crossing conflicts, counted per pair of agents as the page
    does, by a different method (all pairs)."""
    T = max(len(p) for p in paths) - 1
    at = lambda p, t: tuple(p[min(t, len(p) - 1)])  # noqa: E731
    out = []
    for t in range(T + 1):
        for i in range(len(paths)):
            for j in range(i + 1, len(paths)):
                a, b = at(paths[i], t), at(paths[j], t)
                if a == b:
                    out.append((t, "vertex", i, j))
                if t == 0:
                    continue
                a0, b0 = at(paths[i], t - 1), at(paths[j], t - 1)
                if a0 != a and a0 == b and b0 == a:
                    out.append((t, "swap", i, j))
                if octile and a0[0] != a[0] and a0[1] != a[1] and b0[0] != b[0] and b0[1] != b[1]:
                    # Two diagonal moves over one 2x2 square, crossing.
                    if {b0, b} == {(a[0], a0[1]), (a0[0], a[1])}:
                        out.append((t, "cross", i, j))
    return out


def check_moves(paths, w, costs, octile):
    """Every cell open, every step a wait or a move to a neighbour (octile: no corner cut)."""
    for i, p in enumerate(paths):
        for t, (x, y) in enumerate(p):
            assert costs[y * w + x] != 0, f"agent {i} on a wall {(x, y)} at step {t}"
            if t == 0:
                continue
            px, py = p[t - 1]
            dx, dy = abs(x - px), abs(y - py)
            assert max(dx, dy) <= 1 and (octile or dx + dy <= 1), f"agent {i} jumps {p[t - 1]} -> {(x, y)}"
            if dx and dy:
                assert costs[py * w + x] and costs[y * w + px], f"agent {i} cuts a corner at step {t}"


def main():
    only = [s for s in os.environ.get("BROWSER_TESTS", "").split(",") if s]
    results = []
    console_errors = []
    expected_errors = []

    assert put_map(CORRIDOR, CORRIDOR_MAP) in (200, 201)
    assert put_map(ROOM, ROOM_MAP) in (200, 201)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console_errors.append(f"pageerror: {e} {e.stack}"))
        ui = Ui(page)

        def test(name):
            def deco(fn):
                if only and not any(s in name for s in only):
                    return fn
                try:
                    fn()
                    results.append((name, None))
                    print(f"ok   {name}")
                except Exception as e:  # noqa: BLE001 - report every failure
                    results.append((name, e))
                    print(f"FAIL {name}: {e}")
                    traceback.print_exc()
                    try:
                        page.screenshot(path=os.path.join(SHOTS, f"fail-{name}.png"))
                    except Exception:  # noqa: BLE001
                        pass
                return fn

            return deco

        def open_map(name):
            page.goto("about:blank")
            page.goto(f"{BASE}/#{name}")
            page.wait_for_function(f"S.name === {json.dumps(name)} && S.costs && !S.loading", timeout=10000)
            page.eval_on_selector("#mapf", "e => e.scrollIntoView()")

        def random_agents(n, seed):
            page.fill("#mapf-n", str(n))
            page.fill("#mapf-seed", str(seed))
            page.click("#mapf-random")
            wait_for("agents", lambda: ui.js("MAPF.agents.length") == n, 5)
            return ui.js("MAPF.agents")

        def plan(mode="plan", first=True):
            """Sets the panel (the mode without its change event, which plans at once) and
            clicks "Plan agents"."""
            page.eval_on_selector("#mapf-mode", "(e, v) => { e.value = v; }", mode)
            if first != page.is_checked("#mapf-first"):
                page.click("#mapf-first")
            page.click("#mapf-plan")
            wait_for("a plan", lambda: not ui.js("MAPF.busy") and ui.js("MAPF.segments.length") == 1
                     and ui.js("MAPF.segments[0].kind") == mode, 20)
            return ui.js("MAPF.segments[0]")

        def set_speed(v):
            page.fill("#mapf-speed", str(v))
            page.dispatch_event("#mapf-speed", "input")

        def seek(t):
            page.fill("#mapf-t", str(t))
            page.dispatch_event("#mapf-t", "input")

        def shown_conflicts():
            return int(ui.js("document.getElementById('mapf-conflicts').dataset.count"))

        def pixel(x, y):
            return ui.js(f"Array.from(document.getElementById('canvas-a').getContext('2d')"
                         f".getImageData({round(x)}, {round(y)}, 1, 1).data).slice(0, 3)")

        def colour_of(css):
            return ui.js(f"""(() => {{ const c = document.createElement('canvas'); c.width = c.height = 1;
                const x = c.getContext('2d'); x.fillStyle = {json.dumps(css)}; x.fillRect(0, 0, 1, 1);
                return Array.from(x.getImageData(0, 0, 1, 1).data).slice(0, 3); }})()""")

        def canvas_xy(cell, dx=0.0, dy=0.0):
            """Canvas pixel (device pixels) of a point inside `cell` (offsets in cells)."""
            return ui.js(f"""(() => {{ const d = window.devicePixelRatio || 1;
                return [d * (S.view.ox + ({cell[0]} + 0.5 + {dx}) * S.view.scale),
                        d * (S.view.oy + ({cell[1]} + 0.5 + {dy}) * S.view.scale)]; }})()""")

        # ------------------------------------------------------------ the plan

        @test("mapf_random_agents_plan_equals_the_server")
        def _():
            open_map(BIG)
            n, seed = 30, 5
            agents = random_agents(n, seed)
            w, h, costs = cells(BIG)
            starts = [tuple(a["start"]) for a in agents]
            goals = [tuple(a["goal"]) for a in agents]
            assert len(set(starts)) == n and len(set(goals)) == n, "starts and goals must be distinct"
            region = region_of(w, h, costs, starts[0])
            assert all(s in region for s in starts) and all(g in region for g in goals), "one region"
            open_cells = sum(1 for c in costs if c)
            assert len(region) > open_cells // 2, (len(region), open_cells)  # the largest one
            # The same seed, the same agents; another seed, others.
            assert random_agents(n, seed) == agents
            assert random_agents(n, seed + 1) != agents
            random_agents(n, seed)
            seg = plan("plan", first=True)
            page_paths = ui.js("MAPF.paths")
            body = {"agents": [{"start": a["start"], "goal": a["goal"]} for a in agents],
                    "time_limit_ms": int(page.input_value("#mapf-limit")), "first_solution": True}
            assert seg["request"] == body, (seg["request"], body)
            status, direct = http("POST", f"/v1/maps/{BIG}/plans", body)
            assert status == 200, direct
            assert direct["status"] == "solved", direct["status"]
            assert page_paths == direct["paths"], "the page plays a plan other than the server's"
            check_moves(page_paths, w, costs, True)
            assert [tuple(p[0]) for p in page_paths] == starts and [tuple(p[-1]) for p in page_paths] == goals
            assert conflicts(page_paths, True) == [] and shown_conflicts() == 0
            assert "collision-free" in ui.text("#mapf-conflicts")
            assert ui.text("#mapf-status") == "solved"
            assert ui.text("#mapf-soc") == str(direct["sum_of_costs"])
            assert ui.text("#mapf-makespan") == str(direct["makespan"])
            assert ui.text("#mapf-lb") == str(direct["lower_bound"])
            assert ui.text("#mapf-version").startswith(str(direct["map_version"]))
            assert int(page.get_attribute("#mapf-t", "max")) == direct["makespan"]

        @test("mapf_playback_positions_equal_the_plan")
        def _():
            open_map(ROOM)
            random_agents(12, 2)
            plan("plan", first=True)
            wait_for("playing", lambda: ui.js("MAPF.t") > 0, 5)
            page.click("#mapf-play")  # pause
            assert not ui.js("MAPF.playing")
            paths = ui.js("MAPF.paths")
            T = ui.js("MAPF.T")
            assert T >= 3, T
            _, _, costs = cells(ROOM)
            for t in sorted({0, 1, T // 2, T - 1, T}):
                seek(t)
                page.wait_for_timeout(60)  # a frame
                want = [p[min(t, len(p) - 1)] for p in paths]
                assert ui.js("MAPF.drawn") == want, (t, ui.js("MAPF.drawn"), want)
                assert ui.text("#mapf-t-label").startswith(f"step {t} / {T}")
                # And on the canvas: each agent's colour inside its cell (above its label).
                for i, c in enumerate(want):
                    got = pixel(*canvas_xy(c, 0, -0.3))
                    exp = colour_of(ui.js(f"mapfColour({i})"))
                    assert all(abs(a - b) <= 6 for a, b in zip(got, exp)), (t, i, c, got, exp)
            seek(1)
            page.click("#mapf-step")
            page.wait_for_timeout(60)
            assert ui.js("MAPF.t") == 2 and ui.js("MAPF.drawn") == [p[min(2, len(p) - 1)] for p in paths]
            # Playing again moves the agents along, step by step, to the end.
            set_speed(30)
            page.click("#mapf-play")
            wait_for("the end", lambda: ui.js("MAPF.t") == T and not ui.js("MAPF.playing"), 10)
            assert ui.js("MAPF.drawn") == [p[-1] for p in paths]
            del costs

        # ------------------------------------------------------------ conflicts

        @test("mapf_alone_on_a_corridor_conflicts_the_plan_none")
        def _():
            open_map(CORRIDOR)
            page.check("#mode-agents")
            ends = [((1, 1), (12, 1)), ((12, 1), (1, 1)), ((3, 1), (10, 1))]
            for s, g in ends:  # clicked, as a user places them
                ui.click_cell(s)
                ui.click_cell(g)
            assert ui.js("MAPF.agents") == [{"start": list(s), "goal": list(g)} for s, g in ends]
            w, _, costs = cells(CORRIDOR)
            seg = plan("alone")
            alone = ui.js("MAPF.paths")
            # Each path is the server's own for that agent, padded with waits.
            _, direct = http("POST", f"/v1/maps/{CORRIDOR}/paths",
                             {"queries": [{"start": list(s), "goal": list(g), "algorithm": "astar"} for s, g in ends]})
            T = max(len(r["path"]) for r in direct["results"]) - 1
            assert alone == [r["path"] + [r["path"][-1]] * (T + 1 - len(r["path"])) for r in direct["results"]]
            mine = conflicts(alone, False)
            assert len(mine) > 0
            assert shown_conflicts() == len(mine), (shown_conflicts(), mine)
            assert sorted((c["t"], c["kind"], c["a"], c["b"]) for c in ui.js("MAPF.conflicts")) == sorted(mine)
            assert ui.js("document.getElementById('mapf-conflicts').className").endswith("bad")
            assert ui.js("document.querySelectorAll('#mapf-conflict-list li').length") == len(mine)
            assert seg["response"]["lower_bound"] is None
            # At the first conflict's step it is marked in red on the map.
            first = ui.js("MAPF.conflicts[0]")
            page.click(f"#mapf-conflict-list li >> nth=0")
            page.wait_for_timeout(80)
            assert ui.js("MAPF.t") == first["t"] and not ui.js("MAPF.playing")
            assert ui.text("#mapf-t-label").endswith("here"), ui.text("#mapf-t-label")
            ring = ui.js("Math.max(0.9, 13 / S.view.scale)")
            red = pixel(*canvas_xy(first["cell"], 0, -ring))
            assert red[0] > 200 and red[1] < 80 and red[2] < 80, red
            page.screenshot(path=os.path.join(SHOTS, "mapf-alone.png"))
            # Planned together: no conflict, every agent at its goal.
            seg = plan("plan", first=False)
            together = ui.js("MAPF.paths")
            assert seg["response"]["status"] == "solved"
            check_moves(together, w, costs, False)
            assert conflicts(together, False) == [] and shown_conflicts() == 0
            assert [tuple(p[-1]) for p in together] == [g for _, g in ends]
            assert "collision-free" in ui.text("#mapf-conflicts")

        # ------------------------------------------------------------ live re-plans

        @test("mapf_wall_painted_during_playback_replans_from_that_step")
        def _():
            open_map(ROOM)
            agents = random_agents(10, 7)
            goals = {tuple(a["goal"]) for a in agents}
            v0 = ui.version()
            plan("plan", first=True)
            set_speed(1)
            if not ui.js("MAPF.playing"):
                page.click("#mapf-play")
            wait_for("step 1", lambda: ui.js("MAPF.t") >= 1, 5)
            old = ui.js("MAPF.paths")
            now = int(ui.js("MAPF.t"))
            at = lambda p, t: tuple(p[min(t, len(p) - 1)])  # noqa: E731
            # A cell some agent reaches later, that no agent stands on for the next steps
            # (the re-plan starts from one of them) and no goal.
            target = None
            for i, p in enumerate(old):
                for k in range(now + 5, len(p)):
                    c = tuple(p[k])
                    if c in goals or any(at(q, t) == c for q in old for t in range(now, now + 5)):
                        continue
                    target = (i, k, c)
                    break
                if target:
                    break
            assert target, "no cell to wall"
            _, _, cell = target
            page.check("#mode-paint")
            page.select_option("#brush-cost", "0")
            page.fill("#brush-size", "1")
            ui.click_cell(cell)
            wait_for("the re-plan", lambda: ui.js("MAPF.segments.length") == 2 and not ui.js("MAPF.busy"), 15)
            seg = ui.js("MAPF.segments[1]")
            t0 = seg["from"]
            assert now <= t0 < target[1], (now, t0, target)
            _, summary = http("GET", f"/v1/maps/{ROOM}")
            assert summary["version"] == v0 + 1 and seg["response"]["map_version"] == v0 + 1
            w, _, costs = cells(ROOM)
            assert costs[cell[1] * w + cell[0]] == 0
            # The new request starts at the agents' cells at step t0, to the same goals.
            assert seg["request"]["agents"] == [{"start": list(at(p, t0)), "goal": a["goal"]}
                                                for p, a in zip(old, agents)]
            new = seg["response"]["paths"]
            assert [tuple(p[0]) for p in new] == [at(p, t0) for p in old]
            assert all(tuple(c) != cell for p in new for c in p), "a new path crosses the wall"
            check_moves(new, w, costs, False)
            assert conflicts(new, False) == []
            # It is the server's plan for that request; the run keeps steps 0..t0-1.
            status, direct = http("POST", f"/v1/maps/{ROOM}/plans", seg["request"])
            assert status == 200 and direct["paths"] == new
            played = ui.js("MAPF.paths")
            assert [p[:t0] for p in played] == [p[:t0] for p in old]
            assert [p[t0:] for p in played] == new
            assert shown_conflicts() == 0 and conflicts(played, False) == []
            assert "re-plan" in ui.text("#mapf-version")
            # The animation goes on from t0 with the new plan.
            wait_for("playing on", lambda: ui.js("MAPF.t") >= t0 + 1, 5)
            t = int(ui.js("MAPF.t"))
            assert ui.js("MAPF.playing") or t == ui.js("MAPF.T")
            if ui.js("MAPF.playing"):
                page.click("#mapf-play")  # pause, for the picture: the wall, the new paths
            page.wait_for_timeout(100)
            page.screenshot(path=os.path.join(SHOTS, "mapf-replan.png"))
            page.check("#mode-query")

        @test("mapf_patches_replan_only_when_they_touch_the_plan_also_another_clients")
        def _():
            open_map(ROOM)
            agents = random_agents(8, 4)
            goals = {tuple(a["goal"]) for a in agents}
            plan("plan", first=True)
            set_speed(30)
            wait_for("step 2", lambda: ui.js("MAPF.t") >= 2, 5)
            page.click("#mapf-play")  # pause: the step re-planned from is this one
            now = int(ui.js("MAPF.t"))
            old = ui.js("MAPF.paths")
            T = ui.js("MAPF.T")
            assert now < T - 1, (now, T)
            at = lambda p, t: tuple(p[min(t, len(p) - 1)])  # noqa: E731
            ahead = {tuple(c) for p in old for c in p[now:]}
            w, h, costs = cells(ROOM)
            # A wall off every way still to go: the plan goes on, nothing is re-planned.
            free = next((x, y) for y in range(h) for x in range(w)
                        if costs[y * w + x] and (x, y) not in ahead and (x, y) not in goals)
            v = ui.version()
            page.check("#mode-paint")
            page.select_option("#brush-cost", "0")
            page.fill("#brush-size", "1")
            ui.click_cell(free)
            wait_for("the patch", lambda: ui.version() == v + 1, 10)
            page.wait_for_timeout(300)
            assert ui.js("MAPF.segments.length") == 1 and ui.js("MAPF.paths") == old
            assert "the plan goes on" in ui.text("#mapf-note"), ui.text("#mapf-note")
            page.check("#mode-query")
            # Another client walls a cell some agent reaches later: the page follows the new
            # version and re-plans from the step shown.
            target = next(c for p in old for c in map(tuple, p[now + 1:])
                          if c not in goals and all(at(q, now) != c for q in old))
            status, _ = http("PATCH", f"/v1/maps/{ROOM}", {"cells": [{"x": target[0], "y": target[1], "cost": 0}]})
            assert status == 200, status
            wait_for("the re-plan", lambda: ui.js("MAPF.segments.length") == 2 and not ui.js("MAPF.busy"), 15)
            seg = ui.js("MAPF.segments[1]")
            assert seg["from"] == now, (seg["from"], now)
            assert [tuple(p[0]) for p in seg["response"]["paths"]] == [at(p, now) for p in old]
            assert all(tuple(c) != target for p in seg["response"]["paths"] for c in p)
            assert ui.js("MAPF.blocked.cells").count(list(target)) >= 1
            assert shown_conflicts() == 0

        @test("mapf_screenshot")
        def _():
            open_map(BIG)
            random_agents(60, 11)
            plan("alone")
            page.click("#mapf-play")  # pause
            busiest = ui.js("""(() => { const n = new Map(); for (const c of MAPF.conflicts) n.set(c.t, (n.get(c.t) || 0) + 1);
                return [...n].sort((a, b) => b[1] - a[1])[0][0]; })()""")
            seek(busiest)
            page.wait_for_timeout(150)
            page.screenshot(path=os.path.join(SHOTS, "mapf-alone-arena2.png"))
            plan("plan", first=False)
            page.click("#mapf-play")
            seek(busiest)
            page.wait_for_timeout(150)
            assert shown_conflicts() == 0
            page.screenshot(path=os.path.join(SHOTS, "mapf.png"))

        @test("no_unexpected_console_errors")
        def _():
            bad = [e for e in console_errors if not any(x in e for x in expected_errors)]
            assert not bad, bad

        browser.close()

    failed = [n for n, e in results if e is not None]
    print(f"browser (mapf): {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
