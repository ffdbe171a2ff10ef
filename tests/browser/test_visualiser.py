#!/usr/bin/env python3
"""Browser tests of the visualiser's engine in the tab, its lessons and the fixes of issue 25
(run by scripts/browser-test.sh after test_ui.py; same server, same Chromium).

Each `d<N>_...` test is the check of defect N of the issue: written first and seen to fail
on the page as it was. The `offline_...` tests open ui/index.html as a file:// page with no
server at all and compare its answers with the server's for the same map and query.

BROWSER_TESTS=substring[,substring] runs only the tests whose names contain one of them.
"""

import json
import os
import random
import sys
import time
import traceback
import urllib.request

from playwright.sync_api import sync_playwright

from test_ui import ARGS, BASE, SHOTS, Ui, fmt, http, wait_for

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The tree whose ui/ the file:// tests open (PATHD_UI_ROOT: another checkout's, e.g. to run
# these checks against an older page).
UI_ROOT = os.environ.get("PATHD_UI_ROOT", ROOT)
MAP = "arena2"
LONG = ((5, 100), (250, 190))  # 15,892 A* expansions: more than the server's trace cap


def put_map(name, text):
    req = urllib.request.Request(
        f"{BASE}/v1/maps/{name}", data=text.encode(), method="PUT"
    )
    req.add_header("Content-Type", "text/plain")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


def city_map(n=1024, seed=7):
    """A Berlin-like 1024x1024 map: blocks of buildings between streets, and long walls
    with a few gaps that make a corner-to-corner search wander (more than 100k A*
    expansions, as Berlin_0_1024's 136,820)."""
    rnd = random.Random(seed)
    rows = [bytearray(b"." * n) for _ in range(n)]
    y = 4
    while y < n - 8:
        h = rnd.randint(6, 18)
        x = 4
        while x < n - 8:
            w = rnd.randint(6, 22)
            if rnd.random() < 0.8:
                for yy in range(y, min(n - 4, y + h)):
                    rows[yy][x:min(n - 4, x + w)] = b"@" * (min(n - 4, x + w) - x)
            x += w + rnd.randint(2, 5)
        y += h + rnd.randint(2, 5)
    for k in range(1, 8):
        c = k * n // 8
        gap = rnd.randint(40, n - 40)
        for yy in range(0, n):
            if gap <= yy < gap + 6:
                rows[yy][c - 6:c + 7] = b"." * 13  # the gap and a street to it
            else:
                rows[yy][c] = ord("@")
    for line in (n // 3, 2 * n // 3):  # avenues across, so every block is reachable
        for yy in range(line, line + 4):
            for x in range(n):
                if x % (n // 8) != 0:
                    rows[yy][x] = ord(".")
    for yy in (0, n - 1):
        rows[yy][0] = rows[yy][n - 1] = ord(".")
    rows[0][0:3] = b"..."
    rows[n - 1][n - 3:n] = b"..."
    return f"type octile\nheight {n}\nwidth {n}\nmap\n" + "\n".join(r.decode() for r in rows) + "\n"


def main():
    only = [s for s in os.environ.get("BROWSER_TESTS", "").split(",") if s]
    results = []
    console_errors = []
    expected_errors = []

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console_errors.append(f"pageerror: {e}"))
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

        def open_map(name=MAP):
            page.goto("about:blank")
            page.goto(f"{BASE}/#{name}")
            page.wait_for_function(f"S.name === {json.dumps(name)} && S.costs && !S.loading"
                                   " && (typeof PathdWasm === 'undefined' || !!S.engine.grid)", timeout=10000)

        def query(start, goal):
            ui.js(f"S.start = {list(start)}; S.goal = {list(goal)}; updatePoints(); runQuery()")
            wait_for("result", lambda: ui.js("S.panes[0].result && S.panes[0].result.status"))

        def slow_play():
            page.fill("#speed", "3")
            page.dispatch_event("#speed", "input")
            ui.js("seek(1); setPlaying(true)")

        # ------------------------------------------------------------ defects 1-8

        @test("d1_changing_the_algorithm_while_playing_reruns_within_a_second")
        def _():
            open_map()
            ui.click_cell((30, 100))
            ui.click_cell((150, 150))
            wait_for("astar", lambda: ui.js("S.panes[0].result && S.panes[0].result.algorithm") == "astar")
            slow_play()
            assert ui.js("S.playing")
            time.sleep(0.2)
            before = ui.canvas_signature()
            page.select_option("#algo-a", "jps")
            wait_for("jps drawn", lambda: ui.js("S.panes[0].result.algorithm") == "jps", 1.0)
            assert ui.text("#pane-a-title").startswith("jps"), ui.text("#pane-a-title")
            time.sleep(0.1)
            assert ui.canvas_signature()[1] != before[1], "the drawn search did not change"
            # A weight and smoothing re-run too, and so does a compare algorithm.
            page.select_option("#algo-a", "weighted_astar")
            wait_for("weighted", lambda: ui.js("S.panes[0].result.algorithm") == "weighted_astar", 1.0)
            e1 = ui.js("S.panes[0].result.expanded")
            page.fill("#weight", "3")
            page.dispatch_event("#weight", "input")
            wait_for("weight 3", lambda: ui.js("S.panes[0].result.expanded") != e1, 1.0)
            page.check("#smooth")
            wait_for("smoothed", lambda: ui.js("!!S.panes[0].result.waypoints"), 1.0)
            page.uncheck("#smooth")
            page.select_option("#algo-b", "theta")
            wait_for("compare", lambda: ui.js("S.panes[1].result && S.panes[1].result.algorithm") == "theta", 1.0)
            page.select_option("#algo-b", "")
            page.select_option("#algo-a", "astar")

        @test("d2_a_trace_longer_than_the_servers_cap_plays_to_the_goal")
        def _():
            open_map()
            query(*LONG)
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": list(LONG[0]), "goal": list(LONG[1])})
            assert direct["expanded"] > 10000, direct["expanded"]
            total = int(ui.text("#step-counter").split("/")[1])
            assert total == direct["expanded"], (total, direct["expanded"])
            page.click("#to-end")
            ui.hover_cell(LONG[1])
            wait_for("goal closed", lambda: "closed g=" in ui.text("#hover-info"), 3)
            assert "cut" not in ui.text("#res-a-trace"), ui.text("#res-a-trace")

        @test("d2_a_1024x1024_city_corner_to_corner_astar_animates_every_expansion")
        def _():
            assert put_map("city1024", city_map()) in (200, 201)
            open_map("city1024")
            start, goal = (0, 0), (1023, 1023)
            _, direct = http("POST", "/v1/maps/city1024/path", {"start": list(start), "goal": list(goal)})
            assert direct["status"] == "found" and direct["expanded"] > 100000, direct["expanded"]
            query(start, goal)
            total = int(ui.text("#step-counter").split("/")[1])
            assert total == direct["expanded"], (total, direct["expanded"])
            assert ui.js("S.panes[0].result.cost") == direct["cost"]
            # Played (not jumped) to the end at the fastest speed: every expansion drawn.
            page.fill("#speed", "60")
            page.dispatch_event("#speed", "input")
            ui.js("seek(0); setPlaying(true)")
            frames = ui.js("S.frames = 0")
            wait_for("played to the end", lambda: ui.js("S.step") == total, 120)
            frames = ui.js("S.frames")
            closed = ui.js("countOverlay(S.panes[0], 'closed')")
            assert closed == direct["expanded"], (closed, direct["expanded"])
            assert frames > 10, f"played in {frames} frames: not animated"
            page.screenshot(path=os.path.join(SHOTS, "city-1024.png"))

        @test("d2_berlin_0_1024_corner_to_corner_when_present")
        def _():
            # Optional: the benchmark map itself, when a checkout has it (tests/data/ or
            # $PATHD_BERLIN_MAP); the generated city map above stands in for it otherwise.
            found = os.environ.get("PATHD_BERLIN_MAP") or next(
                (os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, "tests", "data"))
                 for f in fs if f == "Berlin_0_1024.map"), None)
            if not found or not os.path.exists(found):
                print("     skipped: no Berlin_0_1024.map in tests/data/ (set PATHD_BERLIN_MAP)")
                return
            assert put_map("Berlin_0_1024", open(found).read()) in (200, 201)
            open_map("Berlin_0_1024")
            start, goal = ui.js("""(() => {
                const near = (x0, y0, dx, dy) => { for (let k = 0; k < 1024; k++) for (let i = 0; i <= k; i++) {
                    const x = x0 + dx * i, y = y0 + dy * (k - i);
                    if (S.costs[y * S.W + x]) return [x, y]; } };
                return [near(0, 0, 1, 1), near(1023, 1023, -1, -1)]; })()""")
            _, direct = http("POST", "/v1/maps/Berlin_0_1024/path", {"start": start, "goal": goal})
            query(start, goal)
            total = int(ui.text("#step-counter").split("/")[1])
            assert total == direct["expanded"], (total, direct["expanded"])
            page.fill("#speed", "60")
            page.dispatch_event("#speed", "input")
            ui.js("seek(0); setPlaying(true)")
            wait_for("played to the end", lambda: ui.js("S.step") == total, 120)
            assert ui.js("countOverlay(S.panes[0], 'closed')") == direct["expanded"]
            print(f"     Berlin_0_1024 {start} -> {goal}: {total} expansions animated")

        @test("d3_a_new_start_mid_animation_stops_the_old_trace")
        def _():
            open_map()
            query((30, 100), (150, 150))
            slow_play()
            ui.click_cell((60, 100))
            assert ui.js("S.start") == [60, 100] and ui.js("S.goal") is None
            assert not ui.js("S.playing"), "the old trace still plays"
            assert ui.js("S.panes[0].events") is None and ui.js("S.panes[0].result") is None

        @test("d3_clear_removes_the_trace_and_the_path")
        def _():
            open_map()
            query((30, 100), (150, 150))
            page.click("#clear-points")
            assert ui.js("S.panes[0].result") is None and ui.js("S.panes[0].overlay") is None
            assert ui.text("#res-a-status") == "" and ui.text("#step-counter") == "step 0 / 0"

        @test("d3_after_a_patch_the_path_follows_the_new_map")
        def _():
            open_map()
            query((30, 100), (150, 150))
            path = ui.js("S.panes[0].result.path")
            mid = path[len(path) // 2]
            status, r = http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 0}]})
            assert status == 200, r
            wait_for("new version in the table", lambda: ui.text("#res-a-version") == str(r["version"]), 6)
            assert mid not in ui.js("S.panes[0].result.path")
            http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 1}]})

        @test("d3_a_server_answer_is_marked_stale_when_the_map_moves_on")
        def _():
            open_map()
            page.check("#on-server")
            query((30, 100), (150, 150))
            assert ui.js("S.panes[0].result.source") == "server"
            path = ui.js("S.panes[0].result.path")
            mid = path[len(path) // 3]
            status, r = http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 0}]})
            wait_for("stale", lambda: "stale" in ui.text("#res-a-version"), 6)
            page.uncheck("#on-server")
            http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 1}]})

        @test("d4_after_picking_an_algorithm_the_arrow_keys_step")
        def _():
            open_map()
            query((30, 100), (150, 150))
            ui.js("setPlaying(false); seek(5)")
            page.focus("#algo-a")
            page.select_option("#algo-a", "dijkstra")
            wait_for("dijkstra", lambda: ui.js("S.panes[0].result.algorithm") == "dijkstra", 2)
            ui.js("setPlaying(false)")
            step = ui.js("S.step")
            page.keyboard.press("ArrowRight")
            assert page.input_value("#algo-a") == "dijkstra", page.input_value("#algo-a")
            assert ui.js("S.step") == step + 1, (ui.js("S.step"), step)
            page.select_option("#algo-a", "astar")

        @test("d5_hpa_is_offered_only_where_the_map_has_an_abstraction")
        def _():
            assert put_map("tiny-nohpa", "type octile\nheight 4\nwidth 6\nmap\n......\n.@@@@.\n......\n......\n") in (200, 201)
            open_map("tiny-nohpa")
            assert ui.js("document.querySelector('#algo-a option[value=hpa]').disabled"), "hpa offered"
            assert ui.js("document.querySelector('#algo-b option[value=hpa]').disabled")
            wait_for("arena2's abstraction",
                     lambda: (http("GET", f"/v1/maps/{MAP}")[1].get("hpa") or {}).get("status") == "ready", 20)
            open_map()
            assert not ui.js("document.querySelector('#algo-a option[value=hpa]').disabled")

        @test("d6_limit_reached_and_no_path_are_shown_as_failures")
        def _():
            open_map()
            page.fill("#max-exp", "5")
            page.dispatch_event("#max-exp", "input")
            query((30, 100), (150, 150))
            wait_for("limit", lambda: ui.js("S.panes[0].result.status") == "limit_reached", 2)
            assert "ok" not in (page.get_attribute("#message", "class") or ""), ui.text("#message")
            assert ui.text("#res-a-cost") == "–", ui.text("#res-a-cost")
            assert "bad" in (page.get_attribute("#pane-a-title", "class") or "")
            page.fill("#max-exp", "")
            page.dispatch_event("#max-exp", "input")
            assert put_map("two-rooms", "type octile\nheight 3\nwidth 5\nmap\n..@..\n..@..\n..@..\n") in (200, 201)
            open_map("two-rooms")
            query((0, 0), (4, 2))
            assert ui.js("S.panes[0].result.status") == "no_path"
            assert "ok" not in (page.get_attribute("#message", "class") or ""), ui.text("#message")
            assert ui.text("#res-a-cost") == "–"

        @test("d7_picking_no_map_clears_the_old_maps_version_and_info")
        def _():
            open_map()
            page.select_option("#map-select", "")
            assert ui.text("#map-version") == "–", ui.text("#map-version")
            assert ui.text("#map-info") == "", ui.text("#map-info")

        @test("d7_fit_keeps_the_bottom_rows_above_the_hover_bar")
        def _():
            # A map taller than the pane is wide: fit is bounded by the height.
            tall = "type octile\nheight 90\nwidth 30\nmap\n" + ("." * 30 + "\n") * 90
            assert put_map("tall", tall) in (200, 201)
            open_map("tall")
            page.click("#fit")
            bottom = ui.js("document.getElementById('canvas-a').getBoundingClientRect().top + S.view.oy + S.H * S.view.scale")
            bar = ui.js("document.getElementById('hover-info').getBoundingClientRect().top")
            assert bottom <= bar, (bottom, bar)

        @test("d7_hpa_entrances_at_fit_zoom_stay_inside_their_cells")
        def _():
            wait_for("arena2's abstraction",
                     lambda: (http("GET", f"/v1/maps/{MAP}")[1].get("hpa") or {}).get("status") == "ready", 20)
            open_map()
            page.wait_for_function("!document.querySelector('#algo-a option[value=hpa]').disabled", timeout=10000)
            page.select_option("#algo-a", "hpa")
            query((30, 100), (150, 150))
            wait_for("hpa", lambda: ui.js("S.panes[0].result.algorithm") == "hpa", 5)
            ui.js("setPlaying(false); seek(0)")  # entrances only: no search drawn yet
            page.click("#fit")
            time.sleep(0.3)
            entrances = ui.js("S.panes[0].hpa.entrances.length")
            scale = ui.js("S.view.scale * (window.devicePixelRatio || 1)")
            yellow = ui.js("""(() => { const c = document.getElementById('canvas-a');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0;
                // The entrance colour over an open cell (the cluster borders are another yellow).
                for (let i = 0; i < d.length; i += 4) if (d[i] >= 250 && d[i + 1] >= 203 && d[i + 1] <= 218 && d[i + 2] >= 95 && d[i + 2] <= 125) n++;
                return n; })()""")
            page.select_option("#algo-a", "astar")
            # Each entrance's marker at most 0.85 of its cell wide (neighbours stay apart).
            limit = entrances * (0.85 * scale) ** 2
            assert entrances > 10 and yellow <= limit, (entrances, scale, yellow, limit)

        def pixel_at(cell, dx=0.5, dy=0.5):
            """The pane's [r, g, b] at a point of a cell."""
            return ui.js(f"""(() => {{
                const c = document.getElementById('canvas-a');
                const d = window.devicePixelRatio || 1;
                const x = Math.round((S.view.ox + ({cell[0]} + {dx}) * S.view.scale) * d);
                const y = Math.round((S.view.oy + ({cell[1]} + {dy}) * S.view.scale) * d);
                return [...c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3)];
            }})()""")

        def zoom_on(cell, scale):
            ui.js(f"""(() => {{ const r = document.getElementById('canvas-a').getBoundingClientRect();
                S.view = {{ scale: {scale}, ox: r.width / 2 - ({cell[0]} + 0.5) * {scale},
                           oy: r.height / 2 - ({cell[1]} + 0.5) * {scale} }}; S.dirty = true; }})()""")
            time.sleep(0.2)

        @test("d7_the_repaired_path_shows_over_the_touched_shading")
        def _():
            open_map()
            query((30, 100), (150, 150))
            page.click("#to-end")
            page.click("#subscribe")
            wait_for("initial", lambda: page.get_attribute("#sub-status", "data-reason") == "initial")
            path = ui.js("S.sub.path")
            mid = path[len(path) // 2]
            status, r = http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 0}]})
            wait_for("repair", lambda: page.get_attribute("#sub-status", "data-reason") == "blocked", 3)
            new = ui.js("S.sub.path")
            touched = {tuple(c) for c in ui.js("S.sub.touched")}
            on_path = [tuple(c) for c in new if tuple(c) in touched]
            assert on_path, "no repaired cell among the touched ones"
            # Zoomed in on the repaired stretch, with the pane's search and path as they are:
            # the repaired path must stand out from the shading beside it.
            cell = on_path[len(on_path) // 2]
            zoom_on(cell, 16)
            path_cells = set(map(tuple, new))
            diffs = []
            for (x, y) in on_path:
                if abs(x - cell[0]) > 20 or abs(y - cell[1]) > 20:
                    continue
                for dx, dy in ((0, 1), (1, 0), (0, -1), (-1, 0), (0, 2), (2, 0), (0, -2), (-2, 0)):
                    # A touched cell beside the path: its centre is at least 0.7 cells
                    # (11 px) from the path's line through the path cells' centres.
                    o = (x + dx, y + dy)
                    if o in touched and o not in path_cells:
                        p, q = pixel_at((x, y)), pixel_at(o)
                        diffs.append(sum(abs(a - b) for a, b in zip(p, q)))
                        break
            page.click("#unsubscribe")
            http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 1}]})
            assert len(diffs) >= 3, f"only {len(diffs)} path/shading pairs in view"
            diffs.sort()
            median = diffs[len(diffs) // 2]
            assert median >= 150, f"the repaired path differs from the shading beside it by {median} (median of {diffs})"

        @test("d7_parent_links_are_legible")
        def _():
            open_map()
            query((30, 100), (150, 150))
            page.click("#to-end")
            zoom_on((40, 102), 12)
            page.uncheck("#links")
            time.sleep(0.2)
            ui.js("window.before = (() => { const c = document.getElementById('canvas-a');"
                  " return c.getContext('2d').getImageData(0, 0, c.width, c.height).data; })()")
            page.check("#links")
            time.sleep(0.2)
            change = ui.js("""(() => { const c = document.getElementById('canvas-a');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0, sum = 0;
                for (let i = 0; i < d.length; i += 4) {
                    const v = Math.abs(d[i] - before[i]) + Math.abs(d[i + 1] - before[i + 1]) + Math.abs(d[i + 2] - before[i + 2]);
                    if (v > 8) { n++; sum += v; }
                }
                return [n, n ? sum / n : 0]; })()""")
            page.uncheck("#links")
            assert change[0] > 100, f"links drew {change[0]} pixels"
            assert change[1] >= 150, f"links change their pixels by {change[1]:.0f} on average: too faint"

        @test("d8_heuristic_tie_break_and_movement_are_offered")
        def _():
            open_map()
            assert ui.js("[...document.querySelectorAll('#heuristic option')].map(o => o.value)") == [
                "", "octile", "manhattan", "euclidean", "chebyshev", "zero"]
            assert ui.js("[...document.querySelectorAll('#tie-break option')].map(o => o.value)") == [
                "high_g", "none", "cross_product", "epsilon"]
            assert ui.js("[...document.querySelectorAll('#movement option')].map(o => o.value)") == [
                "", "octile", "cardinal"]
            query((30, 100), (150, 150))
            e = ui.js("S.panes[0].result.expanded")
            page.select_option("#tie-break", "none")
            wait_for("re-run", lambda: ui.js("S.panes[0].result.expanded") != e, 1.0)
            page.select_option("#tie-break", "high_g")
            page.select_option("#movement", "cardinal")
            wait_for("cardinal", lambda: ui.js("S.panes[0].result.cost") > ui.js("S.panes[0].result.path.length") - 1 - 1e-9
                     and ui.js("S.panes[0].result.path.every((p, i, a) => i === 0 || Math.abs(p[0]-a[i-1][0]) + Math.abs(p[1]-a[i-1][1]) === 1)"), 1.0)
            page.select_option("#movement", "")

        @test("d8_undo_and_reset_to_a_version_after_painting")
        def _():
            open_map()
            v0 = ui.version()
            cell = (120, 60)
            before = ui.js(f"S.costs[{cell[1]} * S.W + {cell[0]}]")
            assert before != 0
            page.check("#mode-paint")
            page.select_option("#brush-cost", "0")
            ui.click_cell(cell)
            wait_for("painted", lambda: ui.version() == v0 + 1)
            ui.click_cell((121, 60))
            wait_for("painted twice", lambda: ui.version() == v0 + 2)
            page.click("#undo")
            wait_for("undone", lambda: ui.version() == v0 + 3)
            _, c = http("GET", f"/v1/maps/{MAP}")
            assert c["version"] == v0 + 3
            assert ui.js(f"S.costs[60 * S.W + 121]") == before and ui.js(f"S.costs[60 * S.W + 120]") == 0
            page.select_option("#reset-version", str(v0))
            page.click("#reset")
            wait_for("reset", lambda: ui.js(f"S.costs[60 * S.W + 120]") == before)
            page.check("#mode-query")

        @test("d8_dragging_the_start_re_searches_while_dragging")
        def _():
            open_map()
            query((30, 100), (150, 150))
            x, y = ui.cell_xy((30, 100))
            page.mouse.move(x, y)
            page.mouse.down()
            runs = ui.js("S.runs")
            for k in range(1, 6):
                x2, y2 = ui.cell_xy((30 + 2 * k, 100))
                page.mouse.move(x2, y2)
                time.sleep(0.05)
            assert ui.js("S.runs") > runs, "no search while dragging"
            page.mouse.up()
            assert ui.js("S.start") == [40, 100], ui.js("S.start")
            assert ui.js("S.panes[0].result.path[0]") == [40, 100]

        @test("d8_agent_size_and_flow_field_views")
        def _():
            open_map()
            page.fill("#size", "2")
            page.dispatch_event("#size", "input")
            query((30, 100), (150, 150))
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": [30, 100], "goal": [150, 150], "size": 2})
            wait_for("sized", lambda: ui.js("S.panes[0].result.cost") == direct["cost"], 2)
            page.fill("#size", "1")
            page.dispatch_event("#size", "input")
            before = ui.canvas_signature()
            page.check("#flow")
            wait_for("flow field", lambda: ui.js("S.flow && S.flow.dirs.length") == ui.js("S.W * S.H"), 2)
            time.sleep(0.2)
            assert ui.canvas_signature()[1] != before[1]
            page.uncheck("#flow")

        @test("d8_a_subscriptions_events_can_be_replayed")
        def _():
            open_map()
            query((30, 100), (150, 150))
            page.click("#subscribe")
            wait_for("initial", lambda: page.get_attribute("#sub-status", "data-reason") == "initial")
            path = ui.js("S.sub.path")
            mid = path[len(path) // 2]
            status, r = http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 0}]})
            wait_for("repair", lambda: page.get_attribute("#sub-status", "data-reason") == "blocked", 3)
            n = ui.js("S.sub.events.length")
            assert n >= 2, n
            page.click("#sub-log li:last-child")  # the oldest: the initial path
            assert ui.js("S.sub.shown") == 0 and ui.js("S.sub.path") == path
            page.click("#sub-log li:first-child")
            assert mid not in ui.js("S.sub.path")
            page.click("#unsubscribe")
            http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 1}]})

        # ------------------------------------------------------------ the engine in the tab

        @test("local_answers_equal_the_servers")
        def _():
            open_map()
            for algo in ["astar", "dijkstra", "weighted_astar", "jps", "theta"]:
                for h in [None, "manhattan", "euclidean"] if algo in ("astar",) else [None]:
                    body = {"start": [30, 100], "goal": [150, 150], "algorithm": algo}
                    if h:
                        body["heuristic"] = h
                    _, direct = http("POST", f"/v1/maps/{MAP}/path", body)
                    opts = json.dumps({"algorithm": algo, "heuristic": h})
                    local = ui.js(f"S.engine.grid.findPath([30, 100], [150, 150], {opts})")
                    assert local["cost"] == direct["cost"], (algo, h, local["cost"], direct["cost"])
                    assert local["expanded"] == direct["expanded"], (algo, h, local["expanded"], direct["expanded"])

        @test("check_on_the_server_says_both_agree")
        def _():
            open_map()
            for algo in ["astar", "jps", "theta"]:
                page.select_option("#algo-a", algo)
                query((30, 100), (150, 150))
                wait_for(algo, lambda: ui.js("S.panes[0].result.algorithm") == algo, 2)
                page.click("#verify")
                wait_for("verdict", lambda: "server" in ui.text("#message"), 5)
                assert "server agrees" in ui.text("#message"), ui.text("#message")
            page.select_option("#algo-a", "astar")

        def open_offline():
            page.goto("about:blank")
            page.goto("file://" + os.path.join(UI_ROOT, "ui", "index.html"))
            page.wait_for_function("typeof S !== 'undefined' && S.engine.ready")

        @test("offline_file_page_answers_a_dropped_map_like_the_server")
        def _():
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            open_offline()
            assert ui.js("S.offline") is True
            text = open(os.path.join(ROOT, "maps", "den520d.map")).read()
            path = os.path.join(SHOTS, "den-dropped.map")
            with open(path, "w") as f:
                f.write(text)
            page.set_input_files("#file-input", path)
            wait_for("dropped map", lambda: ui.js("S.W") == 256 and ui.js("S.H") == 257 and ui.js("!!S.engine.grid"))
            put_map("den-dropped", text)
            for algo in ["astar", "jps", "theta"]:
                page.select_option("#algo-a", algo)
                query((100, 40), (150, 220))
                wait_for(algo, lambda: ui.js("S.panes[0].result.algorithm") == algo, 2)
                _, direct = http("POST", "/v1/maps/den-dropped/path",
                                 {"start": [100, 40], "goal": [150, 220], "algorithm": algo})
                assert ui.js("S.panes[0].result.cost") == direct["cost"], (algo, ui.js("S.panes[0].result.cost"), direct["cost"])
                assert ui.js("S.panes[0].result.expanded") == direct["expanded"]
                assert ui.text("#res-a-cost") == fmt(direct["cost"])
            page.select_option("#algo-a", "astar")
            off = [u for u in requests if not u.startswith("file://") and not u.startswith("data:")]
            assert not off, off
            page.screenshot(path=os.path.join(SHOTS, "offline.png"))

        @test("offline_a_drawn_map_is_searched")
        def _():
            open_offline()
            page.fill("#new-w", "40")
            page.fill("#new-h", "30")
            page.click("#new-map")
            wait_for("blank map", lambda: ui.js("S.W") == 40 and ui.js("S.H") == 30)
            page.check("#mode-paint")
            page.select_option("#brush-cost", "0")
            page.fill("#brush-size", "1")
            x0, y0 = ui.cell_xy((20, 0))
            x1, y1 = ui.cell_xy((20, 25))
            page.mouse.move(x0, y0)
            page.mouse.down()
            page.mouse.move(x1, y1, steps=40)
            page.mouse.up()
            assert ui.js("S.costs[10 * 40 + 20]") == 0
            page.check("#mode-query")
            query((5, 10), (35, 10))
            assert ui.js("S.panes[0].result.status") == "found"
            assert ui.js("S.panes[0].result.path.every(p => p[1] >= 25 || p[0] !== 20)")
            page.click("#undo")
            assert ui.js("S.costs[10 * 40 + 20]") == 1
            wait_for("re-run", lambda: ui.js("S.panes[0].result.path.length") == 31, 2)

        # ------------------------------------------------------------ lessons

        @test("lesson_worked_3x3_trace_shows_g_h_f_in_order")
        def _():
            open_offline()
            page.select_option("#lesson", "worked3x3")
            wait_for("lesson", lambda: ui.js("S.W") == 3 and ui.js("!!S.panes[0].result"), 2)
            # A* from (0,0) to (2,2) round the obstacle at (1,1), Manhattan, 4-way: every
            # expansion, with g, h and f as the worked example gives them.
            want = [
                ("(0, 0)", "0", "4", "4"),
                ("(1, 0)", "1", "3", "4"),
                ("(2, 0)", "2", "2", "4"),
                ("(2, 1)", "3", "1", "4"),
                ("(2, 2)", "4", "0", "4"),
            ]
            page.click("#to-end")
            rows = ui.js("[...document.querySelectorAll('#lesson-table tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
            got = [(r[1], r[2], r[3], r[4]) for r in rows if r[0] == "expand"]
            assert got == want, got
            # Stepping shows the table up to the step.
            ui.js("seek(2)")
            shown = ui.js("[...document.querySelectorAll('#lesson-table tbody tr.done')].length")
            assert shown >= 2
            page.eval_on_selector("#lesson", "e => e.scrollIntoView()")
            ui.hover_cell((1, 0))
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "lesson-3x3.png"))

        @test("lesson_manhattan_on_an_octile_map_is_flagged_and_longer")
        def _():
            open_offline()
            page.select_option("#lesson", "manhattan_octile")
            wait_for("lesson", lambda: ui.js("!!S.panes[0].result && !!S.panes[1].result"), 2)
            a = ui.js("S.panes[0].result")
            b = ui.js("S.panes[1].result")
            assert a["optimal"] is False and b["optimal"] is True, (a["optimal"], b["optimal"])
            assert a["cost"] > b["cost"] + 1e-9, (a["cost"], b["cost"])
            assert "Manhattan overestimates a diagonal step" in ui.text("#lesson-note")
            assert "not optimal" in ui.text("#res-a-status")
            page.click("#to-end")
            page.eval_on_selector("#lesson", "e => e.scrollIntoView()")
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "lesson-manhattan.png"))

        @test("lesson_presets_each_show_their_point")
        def _():
            open_offline()
            checks = {
                # ties: no tie-breaking expands far more than breaking toward depth
                "ties": lambda a, b: a["expanded"] > 2 * b["expanded"] and a["cost"] == b["cost"],
                # Dijkstra's disc against A*'s ellipse (the same cost, up to the order of
                # the sums)
                "dijkstra_disc": lambda a, b: a["expanded"] > 2 * b["expanded"] and abs(a["cost"] - b["cost"]) < 1e-9,
                # weighted A*: fewer expansions, a cost within w
                "weighted": lambda a, b: a["expanded"] < b["expanded"] and b["cost"] <= a["cost"] <= 2 * b["cost"],
                # Euclidean on a 4-way grid: optimal but slow
                "euclidean_cardinal": lambda a, b: a["expanded"] > b["expanded"] and a["cost"] == b["cost"],
                # cross product: another of the equal paths, nearer the line
                "cross_product": lambda a, b: a["cost"] == b["cost"] and a["path"] != b["path"],
            }
            for name, ok in checks.items():
                page.select_option("#lesson", name)
                wait_for(name, lambda: ui.js("S.lesson === " + json.dumps(name) + " && !!S.panes[1].result"), 2)
                a = ui.js("S.panes[0].result")
                b = ui.js("S.panes[1].result")
                assert ok(a, b), (name, a["expanded"], b["expanded"], a["cost"], b["cost"])
                assert ui.text("#lesson-note"), name
                if name == "ties":
                    page.click("#to-end")
                    time.sleep(0.2)
                    page.screenshot(path=os.path.join(SHOTS, "lesson-ties.png"))

        @test("unit_types_the_profile_picker_shows_and_searches_each_profiles_costs")
        def _():
            # A lake in a field: the boat crosses it, ground walks around it.
            rows = ["".join("W" if 2 <= x < 18 and 2 <= y < 10 else "." for x in range(20)) for y in range(12)]
            status, _ = http("PUT", "/v1/maps/lake", {"width": 20, "height": 12, "rows": rows,
                                                      "profiles": {"boat": {"W": 1}}})
            assert status in (200, 201), status
            open_map("lake")
            options = ui.js("[...document.querySelectorAll('#profile option')].map(o => o.textContent)")
            assert options == ["boat", "ground (default)"], options
            start, goal = (2, 5), (17, 5)
            for profile, want_passable in (("", "."), ("boat", "W")):
                page.select_option("#profile", profile)
                wait_for("cells of " + (profile or "ground"),
                         lambda: ui.js("S.profile") == profile and not ui.js("S.loading")
                         and ui.js(f"S.costs[5 * 20 + 8]") == (1 if want_passable == "W" else 0), 5)
                for on_server in (False, True):
                    (page.check if on_server else page.uncheck)("#on-server")
                    ui.js("S.panes[0].result = null")
                    query(start, goal) if profile == "boat" else query((0, 0), (19, 11))
                    r = ui.js("S.panes[0].result")
                    body = {"start": list(start), "goal": list(goal)} if profile == "boat" else {"start": [0, 0], "goal": [19, 11]}
                    if profile:
                        body["profile"] = profile
                    _, direct = http("POST", "/v1/maps/lake/path", body)
                    assert abs(r["cost"] - direct["cost"]) < 1e-9, (profile, on_server, r["cost"], direct["cost"])
                    assert r["source"] == ("server" if on_server else "local"), r["source"]
            page.uncheck("#on-server")
            page.screenshot(path=os.path.join(SHOTS, "unit-types.png"))

        # ------------------------------------------------------------ the games' questions

        def answer_with(field, n=None):
            """Pane A's server answer once it asks `field` (with n points, for goals)."""
            cond = f"(() => {{ const r = S.panes[0].result; return !!(r && r.asked && r.asked.{field} !== undefined" + \
                (f" && r.asked.{field}.length === {n}" if n is not None else "") + "); })()"
            wait_for(f"an answer with {field}", lambda: ui.js(cond), 5)
            return ui.js("S.panes[0].result")

        def wall_beside_open(x0, x1, y0, y1):
            """A wall cell whose right-hand neighbour is open, in the box."""
            return ui.js(f"""(() => {{ for (let y = {y0}; y < {y1}; y++) for (let x = {x0}; x < {x1}; x++)
                if (S.costs[y * S.W + x] === 0 && S.costs[y * S.W + x + 1] !== 0) return [x, y]; }})()""")

        @test("games_goals_set_reaches_the_goal_the_server_names_and_shows_its_cost")
        def _():
            open_map()
            page.check("#mode-goals")
            start = (30, 100)
            goals = [(150, 150), (250, 190), (60, 100)]
            for c in (start, *goals):
                assert ui.js(f"S.costs[{c[1]} * S.W + {c[0]}]") != 0, c
            ui.click_cell(start)
            for g in goals:
                ui.click_cell(g)
            r = answer_with("goals", 3)
            assert r["source"] == "server" and r["asked"]["goals"] == [list(g) for g in goals], r["asked"]
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": list(start), "goals": [list(g) for g in goals]})
            i = direct["goal_index"]
            assert r["goal_index"] == i and r["goal"] == direct["goal"] == list(goals[i]), (r["goal_index"], direct)
            assert r["cost"] == direct["cost"] and r["path"] == direct["path"]
            wait_for("reached drawn", lambda: ui.js("S.panes[0].games && S.panes[0].games.reached") == list(goals[i]), 2)
            assert ui.js("S.panes[0].games.goals") == [list(g) for g in goals]
            items = ui.js("[...document.querySelectorAll('#goals-list li')].map(li => [li.className, li.textContent])")
            assert [k for k, (c, _) in enumerate(items) if c == "reached"] == [i], items
            assert f"cost {fmt(direct['cost'])}" in items[i][1], items
            assert f"goal {i} of 3 reached" in ui.text("#message"), ui.text("#message")
            page.eval_on_selector("#games", "e => e.scrollIntoView()")
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "games-goals.png"))
            # Removing the goal reached: the nearest of the other two.
            ui.click_cell(goals[i])
            rest = [g for k, g in enumerate(goals) if k != i]
            r = answer_with("goals", 2)
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": list(start), "goals": [list(g) for g in rest]})
            assert r["goal_index"] == direct["goal_index"] and r["cost"] == direct["cost"], (r["goal_index"], direct)
            # Cleared: nothing of them stays.
            page.click("#clear-goals")
            assert ui.js("GAMES.goals.length") == 0 and ui.js("S.panes[0].result") is None
            # With a unit type: the profile goes with the goals (ground cannot reach the water).
            rows = ["".join("W" if 2 <= x < 18 and 2 <= y < 10 else "." for x in range(20)) for y in range(12)]
            status, _ = http("PUT", "/v1/maps/lake", {"width": 20, "height": 12, "rows": rows, "profiles": {"boat": {"W": 1}}})
            assert status in (200, 201), status
            open_map("lake")
            page.select_option("#profile", "boat")
            wait_for("boat cells", lambda: ui.js("S.profile") == "boat" and not ui.js("S.loading") and ui.js("S.costs[5 * 20 + 8]") == 1, 5)
            page.check("#mode-goals")
            for c in ((3, 3), (16, 8), (10, 5)):
                ui.click_cell(c)
            r = answer_with("goals", 2)
            assert r["asked"]["profile"] == "boat", r["asked"]
            _, direct = http("POST", "/v1/maps/lake/path", {"start": [3, 3], "goals": [[16, 8], [10, 5]], "profile": "boat"})
            assert r["goal_index"] == direct["goal_index"] and abs(r["cost"] - direct["cost"]) < 1e-9, (r, direct)

        @test("games_snap_draws_the_asked_and_the_used_ends_linked")
        def _():
            open_map()
            page.fill("#snap", "3")
            page.dispatch_event("#snap", "input")
            start = wall_beside_open(1, 60, 90, 120)
            goal = wall_beside_open(140, 200, 140, 170)
            assert start and goal, (start, goal)
            ui.click_cell(start)
            ui.click_cell(goal)
            r = answer_with("snap")
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": start, "goal": goal, "snap": 3})
            assert direct["snapped"] is True and direct["start"] != start and direct["goal"] != goal, direct
            assert r["snapped"] is True and r["start"] == direct["start"] and r["goal"] == direct["goal"], r
            assert r["cost"] == direct["cost"]
            wait_for("snap drawn", lambda: len(ui.js("S.panes[0].games.snapped")) == 2, 2)
            drawn = ui.js("S.panes[0].games.snapped")
            assert drawn == [{"end": "start", "asked": start, "used": direct["start"]},
                             {"end": "goal", "asked": goal, "used": direct["goal"]}], drawn
            msg = ui.text("#message")
            want = f"snapped: start ({start[0]}, {start[1]}) → ({direct['start'][0]}, {direct['start'][1]})"
            assert want in msg, msg
            assert ui.js("S.panes[0].result.path[0]") == direct["start"]
            # Zoomed in on the start, where the link from the wall clicked is seen.
            ui.js(f"S.view = {{ scale: 16, ox: 540 - {start[0] + 0.5} * 16, oy: 420 - {start[1] + 0.5} * 16 }}; S.dirty = true")
            page.eval_on_selector("#games", "e => e.scrollIntoView()")
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "games-snap.png"))
            # Nothing to move: said so, nothing drawn.
            ui.js("S.panes[0].result = null")
            query((30, 100), (150, 150))
            r = answer_with("snap")
            wait_for("no snap", lambda: "snap: nothing moved" in ui.text("#message"), 3)
            assert r["snapped"] is False and ui.js("S.panes[0].games.snapped") == []

        @test("games_goal_radius_and_flee_reach_the_servers_cell_and_draw_their_circle")
        def _():
            open_map()
            start = (30, 100)
            goal = wall_beside_open(140, 200, 140, 170)
            page.fill("#goal-radius", "4")
            page.dispatch_event("#goal-radius", "input")
            ui.click_cell(start)
            ui.click_cell(goal)
            r = answer_with("goal_radius")
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": list(start), "goal": goal, "goal_radius": 4})
            assert direct["status"] == "found" and r["goal"] == direct["goal"] and r["cost"] == direct["cost"], (r, direct)
            wait_for("radius drawn", lambda: ui.js("S.panes[0].games.radius") == {"centre": goal, "radius": 4}, 2)
            assert ui.js("S.panes[0].games.reached") == direct["goal"]
            assert f"reached ({direct['goal'][0]}, {direct['goal'][1]}) within 4" in ui.text("#message")
            page.fill("#goal-radius", "")
            page.dispatch_event("#goal-radius", "input")
            page.fill("#flee-distance", "40")
            page.check("#flee")
            flee_goal = (60, 100)
            ui.js("S.panes[0].result = null")
            query(start, flee_goal)
            r = answer_with("flee")
            _, direct = http("POST", f"/v1/maps/{MAP}/path", {"start": list(start), "flee": {"from": list(flee_goal), "distance": 40}})
            assert r["goal"] == direct["goal"] and r["cost"] == direct["cost"], (r, direct)
            wait_for("flee drawn", lambda: ui.js("S.panes[0].games.flee") == {"from": list(flee_goal), "distance": 40}, 2)
            assert ui.js("S.panes[0].games.reached") == direct["goal"]
            assert "fled to" in ui.text("#message")
            page.uncheck("#flee")

        @test("games_distance_table_equals_the_matrix_answer")
        def _():
            # POST /matrix is another branch's (games-t); until it is merged the route is
            # missing and this test says so (the page then says the server has no tables).
            status, probe = http("POST", f"/v1/maps/{MAP}/matrix", {"sources": [[30, 100]], "targets": [[60, 100]]})
            if status == 404 and (probe or {}).get("error", {}).get("code") == "not_found":
                print("     skipped: this server has no POST /v1/maps/{name}/matrix")
                return
            open_map()
            page.check("#mode-goals")
            start = (30, 100)
            goals = [(150, 150), (250, 190), (60, 100)]
            other = ui.js("""(() => { for (let y = 150; y < 200; y++) for (let x = 40; x < 120; x++)
                if (S.costs[y * S.W + x] !== 0) return [x, y]; })()""")
            ui.click_cell(start)
            for g in goals:
                ui.click_cell(g)
            page.keyboard.down("Shift")
            ui.click_cell(other)
            page.keyboard.up("Shift")
            page.check("#matrix")
            wait_for("the table", lambda: ui.js("document.querySelectorAll('#matrix-table tbody tr').length") == 2, 5)
            _, direct = http("POST", f"/v1/maps/{MAP}/matrix",
                             {"sources": [list(start), other], "targets": [list(g) for g in goals]})
            assert ui.js("GAMES.matrix.costs") == direct["costs"], (ui.js("GAMES.matrix.costs"), direct)
            shown = ui.js("[...document.querySelectorAll('#matrix-table tbody tr')].map(r => [...r.cells].slice(1).map(c => c.textContent))")
            want = [["–" if c is None else fmt(c) for c in row] for row in direct["costs"]]
            assert shown == want, (shown, want)
            # The goals query's goal is the cheapest of the start's row, at its cost.
            r = answer_with("goals", 3)
            row = direct["costs"][0]
            best = min(c for c in row if c is not None)
            assert abs(r["cost"] - best) < 1e-9 and row[r["goal_index"]] == best, (r["cost"], r["goal_index"], row)
            page.eval_on_selector("#games", "e => e.scrollIntoView()")
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "games-matrix.png"))

        @test("no_unexpected_console_errors")
        def _():
            bad = [e for e in console_errors if not any(x in e for x in expected_errors)]
            assert not bad, bad

        browser.close()

    failed = [n for n, e in results if e is not None]
    print(f"browser (visualiser): {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
