#!/usr/bin/env python3
"""End-to-end browser test of pathd's visualiser (run by scripts/browser-test.sh).

Drives Debian's /usr/bin/chromium with Playwright for Python against a live pathd at
$PATHD_URL (serving the bundled maps) and checks real behaviour: the page, the map list and
drawing, a query whose cost matches the API, stepping a search trace and hovering its g/h/f,
painting a wall (PATCH, version bump), a version conflict shown to the user, a live
subscription repaired after an external PATCH, side-by-side comparison, and an upload.
Screenshots go to $SCREENSHOT_DIR. Prints "browser: N passed, 0 failed"; exits non-zero on
any failure. No pytest needed.
"""

import json
import os
import re
import sys
import time
import traceback
import urllib.request

from playwright.sync_api import sync_playwright

BASE = os.environ["PATHD_URL"]
SHOTS = os.environ.get("SCREENSHOT_DIR", "/tmp")
MAP = "arena2"
START, GOAL = (30, 100), (150, 150)
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def http(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def fmt(v):
    """The page's number format: integers plain, else 4 decimals without trailing zeros."""
    if float(v) == int(v):
        return str(int(v))
    return f"{v:.4f}".rstrip("0")


def wait_for(what, cond, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Ui:
    def __init__(self, page):
        self.page = page

    def text(self, sel):
        return self.page.inner_text(sel).strip()

    def js(self, expr):
        return self.page.evaluate(expr)

    def cell_xy(self, cell, pane="a"):
        """Client coordinates of the centre of `cell` on a pane's canvas."""
        return self.js(
            f"""(() => {{
            const r = document.getElementById('canvas-{pane}').getBoundingClientRect();
            return [r.left + S.view.ox + ({cell[0]} + 0.5) * S.view.scale,
                    r.top + S.view.oy + ({cell[1]} + 0.5) * S.view.scale];
        }})()"""
        )

    def click_cell(self, cell):
        x, y = self.cell_xy(cell)
        self.page.mouse.click(x, y)

    def hover_cell(self, cell):
        x, y = self.cell_xy(cell)
        self.page.mouse.move(x, y)

    def canvas_signature(self, pane="a"):
        """(distinct colours, a hash) of what the pane's canvas shows."""
        return self.js(
            f"""(() => {{
            const c = document.getElementById('canvas-{pane}');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const seen = new Set();
            let h = 0;
            for (let i = 0; i < d.length; i += 4) {{
                const v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
                seen.add(v);
                h = (h * 31 + v) | 0;
            }}
            return [seen.size, h];
        }})()"""
        )

    def version(self):
        return int(self.text("#map-version"))


def main():
    results = []
    console_errors = []
    expected_errors = []  # substrings of console errors a test provokes on purpose

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on(
            "console",
            lambda m: console_errors.append(m.text) if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: console_errors.append(f"pageerror: {e}"))
        ui = Ui(page)
        state = {}

        def test(name):
            def deco(fn):
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

        @test("page_loads_without_console_errors")
        def _():
            resp = page.goto(BASE + "/")
            assert resp.status == 200
            assert resp.headers["content-type"].startswith("text/html")
            page.wait_for_function("document.querySelectorAll('#map-select option').length > 1")
            assert page.title() == "pathd visualiser"
            time.sleep(0.3)
            assert not console_errors, console_errors

        @test("map_list_shows_bundled_maps")
        def _():
            names = ui.js("[...document.querySelectorAll('#map-select option')].map(o => o.value)")
            bundled = sorted(f[:-4] for f in os.listdir("maps") if f.endswith(".map"))
            for n in bundled:
                assert n in names, (n, names)

        @test("every_algorithm_of_the_api_is_offered")
        def _():
            # The path query's `algorithm` enum in the served contract, in its order.
            with urllib.request.urlopen(BASE + "/openapi.yaml", timeout=30) as r:
                spec = r.read().decode()
            m = re.search(r"enum: \[(astar, [a-z_, ]+)\]", spec)
            assert m, "no algorithm enum in /openapi.yaml"
            api = [a.strip() for a in m.group(1).split(",")]
            offered = ui.js("[...document.querySelectorAll('#algo-a option')].map(o => o.value)")
            assert offered == api, (offered, api)

        @test("selecting_a_map_draws_it")
        def _():
            blank = ui.canvas_signature()
            page.select_option("#map-select", MAP)
            wait_for("map version", lambda: ui.text("#map-version").isdigit())
            time.sleep(0.3)
            colours, h = ui.canvas_signature()
            assert h != blank[1], "canvas unchanged"
            assert colours >= 2, f"only {colours} colour(s) drawn"
            _, summary = http("GET", f"/v1/maps/{MAP}")
            assert ui.version() == summary["version"]
            assert ui.js("S.W") == summary["width"] and ui.js("S.H") == summary["height"]

        @test("clicking_start_and_goal_runs_a_query_with_the_api_cost")
        def _():
            ui.click_cell(START)
            assert ui.text("#start-label") == f"[{START[0]}, {START[1]}]"
            ui.click_cell(GOAL)
            wait_for("result", lambda: ui.text("#res-a-status").startswith("found"))
            status, direct = http(
                "POST", f"/v1/maps/{MAP}/path", {"start": list(START), "goal": list(GOAL)}
            )
            assert status == 200 and direct["status"] == "found"
            assert ui.text("#res-a-cost") == fmt(direct["cost"]), (ui.text("#res-a-cost"), direct["cost"])
            assert ui.js("S.panes[0].result.cost") == direct["cost"]
            assert ui.text("#res-a-expanded") == str(direct["expanded"])
            state["direct"] = direct
            page.click("#to-end")
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "query.png"))

        @test("stepping_the_trace_changes_the_view_and_hover_shows_g_h_f")
        def _():
            status, traced = http(
                "POST",
                f"/v1/maps/{MAP}/path",
                {"start": list(START), "goal": list(GOAL), "trace": True},
            )
            assert status == 200
            expands = [e for e in traced["trace"]["events"] if e["type"] == "expand"]
            total = int(ui.text("#step-counter").split("/")[1])
            assert total == len(expands) == traced["expanded"], (total, len(expands))
            page.fill("#scrub", "20")
            page.dispatch_event("#scrub", "input")
            assert ui.text("#step-counter") == f"step 20 / {total}"
            time.sleep(0.15)
            before = ui.canvas_signature()
            page.click("#step")
            assert ui.text("#step-counter") == f"step 21 / {total}"
            time.sleep(0.15)
            after = ui.canvas_signature()
            assert before[1] != after[1], "stepping did not change the drawing"
            page.click("#back")
            assert ui.text("#step-counter") == f"step 20 / {total}"
            # The 10th expansion is closed by step 20: its hover shows the trace's values as
            # of step 20 (the node's last event before the 21st expansion; A* may reopen a
            # node whose g improves by a rounding error).
            events = traced["trace"]["events"]
            limit = events.index(expands[20])
            node = expands[9]["node"]
            e = [ev for ev in events[:limit] if ev["node"] == node][-1]
            ui.hover_cell(node)
            want = (
                f"closed g={fmt(e['g'])} h={fmt(e['h'])} f={fmt(e['f'])} "
                f"parent ({e['parent'][0]}, {e['parent'][1]})"
            )
            try:
                wait_for("hover", lambda: want in ui.text("#hover-info"), 3)
            except AssertionError:
                raise AssertionError(f"hover shows {ui.text('#hover-info')!r}, want {want!r}")
            assert abs(e["f"] - (e["g"] + e["h"])) < 1e-9
            # Zoom in on the search front for the screenshot, then fit again.
            x, y = ui.cell_xy(START)
            page.mouse.move(x, y)
            for _ in range(6):
                page.mouse.wheel(0, -250)
            page.click("#step")
            page.click("#back")
            ui.hover_cell(node)
            wait_for("hover", lambda: want in ui.text("#hover-info"), 3)
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "trace-step.png"))
            page.click("#fit")
            # Play runs to the end.
            page.click("#play")
            page.fill("#speed", "50")
            page.dispatch_event("#speed", "input")
            wait_for("end of play", lambda: ui.text("#step-counter") == f"step {total} / {total}")

        @test("painting_a_wall_patches_and_bumps_the_version")
        def _():
            v0 = ui.version()
            cell = (100, 100)
            assert ui.js(f"S.costs[{cell[1]} * S.W + {cell[0]}]") != 0
            page.check("#mode-paint")
            page.select_option("#brush-cost", "0")
            with page.expect_response(
                lambda r: r.request.method == "PATCH" and r.url.endswith(f"/v1/maps/{MAP}")
            ) as info:
                ui.click_cell(cell)
            resp = info.value
            assert resp.status == 200, resp.status
            body = resp.request.post_data_json
            assert body["if_version"] == v0 and {"x": 100, "y": 100, "cost": 0} in body["cells"], body
            wait_for("version bump", lambda: ui.version() == v0 + 1)
            _, summary = http("GET", f"/v1/maps/{MAP}")
            assert summary["version"] == v0 + 1
            wait_for("cells reloaded", lambda: ui.js(f"S.costs[{cell[1]} * S.W + {cell[0]}]") == 0)

        @test("a_version_conflict_is_shown_and_the_map_reloaded")
        def _():
            v = ui.version()
            expected_errors.append("409")
            # The page believes in an older version (as if another client patched meanwhile).
            ui.js(f"setVersion({v - 1})")
            with page.expect_response(lambda r: r.request.method == "PATCH") as info:
                ui.click_cell((101, 100))
            assert info.value.status == 409
            wait_for("conflict message", lambda: "version conflict" in ui.text("#message"))
            assert "error" in page.get_attribute("#message", "class")
            wait_for("reload", lambda: ui.version() == v)
            assert ui.js("S.costs[100 * S.W + 101]") != 0, "a refused stroke must not stay drawn"
            page.check("#mode-query")

        @test("subscription_path_is_repaired_after_an_external_patch")
        def _():
            page.click("#subscribe")
            wait_for("subscription", lambda: ui.js("S.sub && S.sub.id"))
            wait_for("initial event", lambda: page.get_attribute("#sub-status", "data-reason") == "initial")
            path = ui.js("S.sub.path")
            assert path[0] == list(START) and path[-1] == list(GOAL)
            mid = path[len(path) // 2]
            v = ui.version()
            status, r = http(
                "PATCH",
                f"/v1/maps/{MAP}",
                {"rects": [{"x": mid[0] - 1, "y": mid[1] - 1, "width": 3, "height": 3, "cost": 0}]},
            )
            assert status == 200 and r["affected_subscriptions"] >= 1, r
            t0 = time.time()
            wait_for("repair event", lambda: page.get_attribute("#sub-status", "data-reason") == "blocked", 3)
            took = time.time() - t0
            new = ui.js("S.sub.path")
            assert mid not in new and new[-1] == list(GOAL)
            assert f"map version {r['version']}" in ui.text("#sub-status")
            wait_for("map reload", lambda: ui.version() == r["version"])
            assert r["version"] == v + 1
            print(f"     repaired path shown {took * 1000:.0f} ms after the patch")
            assert took < 1.0, took
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "subscription.png"))
            page.click("#unsubscribe")
            assert ui.text("#sub-status") == "stopped"

        @test("compare_two_algorithms_side_by_side")
        def _():
            page.select_option("#algo-b", "theta")
            page.check("#smooth")
            page.click("#run")
            wait_for("both results", lambda: ui.text("#res-b-status").startswith("found")
                     and ui.text("#res-a-status").startswith("found"))
            assert page.is_visible("#canvas-b")
            assert ui.text("#res-b-head") == "theta"
            _, direct = http("POST", f"/v1/maps/{MAP}/path",
                             {"start": list(START), "goal": list(GOAL), "algorithm": "theta", "smooth": True})
            assert ui.text("#res-b-cost") == fmt(direct["cost"])
            assert ui.js("S.panes[1].result.waypoints.length") >= 2
            page.click("#to-end")
            time.sleep(0.2)
            assert ui.canvas_signature("b")[0] > 2
            page.screenshot(path=os.path.join(SHOTS, "compare.png"))
            page.select_option("#algo-b", "")
            page.uncheck("#smooth")

        @test("hpa_trace_shows_entrances_abstract_path_and_refinement")
        def _():
            # The server runs with PATHD_HPA_MIN_CELLS small enough for arena2 (see
            # scripts/browser-test.sh); its abstraction is rebuilt after the patches above.
            wait_for("arena2's HPA* abstraction",
                     lambda: (http("GET", f"/v1/maps/{MAP}")[1].get("hpa") or {}).get("status") == "ready", 20)
            # The page offers hpa once it has seen the abstraction ready (it polls).
            page.wait_for_function("!document.querySelector('#algo-a option[value=hpa]').disabled", timeout=10000)
            page.select_option("#algo-a", "hpa")
            page.click("#run")
            wait_for("hpa result", lambda: ui.js("S.panes[0].result && S.panes[0].result.algorithm") == "hpa")
            assert ui.text("#res-a-status").startswith("found"), ui.text("#res-a-status")
            _, direct = http("POST", f"/v1/maps/{MAP}/path",
                             {"start": list(START), "goal": list(GOAL), "algorithm": "hpa", "trace": True})
            hpa = direct["trace"]["hpa"]
            assert ui.text("#res-a-cost") == fmt(direct["cost"])
            assert ui.js("S.panes[0].hpa.entrances.length") == len(hpa["entrances"]) > 0
            # The player steps through every expansion and every refinement step.
            total = int(ui.text("#step-counter").split("/")[1])
            assert total == direct["expanded"] + len(hpa["refinement"]), (total, direct["expanded"])
            # At step 0 nothing of the abstraction's search is shown yet.
            ui.js("setPlaying(false)")  # stop the autoplay
            page.fill("#scrub", "0")
            page.dispatch_event("#scrub", "input")
            view = ui.js("S.panes[0].hpaView")
            assert not view["abstractShown"] and view["steps"] == 0, view
            # Just after the abstract search: its path is drawn, the refinement begins.
            events = direct["trace"]["events"]
            first_step = hpa["refinement"][0]["after_events"]
            expands_before = sum(1 for e in events[:first_step] if e["type"] == "expand")
            abstract_expands = sum(1 for e in events if e["type"] == "expand" and e.get("phase") == "abstract")
            assert abstract_expands > 0
            before = ui.canvas_signature()
            page.fill("#scrub", str(expands_before + 1))
            page.dispatch_event("#scrub", "input")
            view = ui.js("S.panes[0].hpaView")
            assert view["abstractShown"] and view["steps"] >= 1, view
            assert ui.js("S.panes[0].abs.size") > 0
            time.sleep(0.15)
            assert ui.canvas_signature()[1] != before[1], "the abstract path did not change the drawing"
            # Hovering an expanded abstract node shows it as one, with the trace's g.
            node = next(e for e in events if e["type"] == "expand" and e.get("phase") == "abstract"
                        and e["node"] != list(START))
            ui.hover_cell(node["node"])
            wait_for("abstract hover", lambda: "abstract closed" in ui.text("#hover-info"), 3)
            # At the end the refinement has built the answer's path.
            page.click("#to-end")
            view = ui.js("S.panes[0].hpaView")
            assert view["refined"] == direct["path"], "refinement replay differs from the path"
            assert view["steps"] == len(hpa["refinement"])
            # Stepping through the refinement: each step adds its cells (or replaces the
            # path), as the API's replay rule says.
            steps = hpa["refinement"]
            j = len(steps) // 2
            before_j = sum(1 for e in events[:steps[j]["after_events"]] if e["type"] == "expand")
            ui.js(f"seek({before_j + j + 1})")
            view = ui.js("S.panes[0].hpaView")
            assert view["steps"] == j + 1 and view["lastStep"] == steps[j]["kind"], view
            want = []
            for st in steps[: j + 1]:
                if st["kind"] in ("corridor", "straighten", "window") or not want:
                    want = list(st["cells"])
                else:
                    want += st["cells"][1:]
            assert view["refined"] == want
            time.sleep(0.2)
            page.screenshot(path=os.path.join(SHOTS, "hpa.png"))
            page.select_option("#algo-a", "astar")

        @test("a_repair_highlights_the_cells_it_touched")
        def _():
            page.click("#run")
            wait_for("astar result", lambda: ui.js("S.panes[0].result && S.panes[0].result.algorithm") == "astar")
            page.click("#to-end")
            page.click("#subscribe")
            wait_for("subscription", lambda: ui.js("S.sub && S.sub.id"))
            wait_for("initial event", lambda: page.get_attribute("#sub-status", "data-reason") == "initial")
            assert not ui.js("S.sub.touched"), "the initial event touches nothing"
            path = ui.js("S.sub.path")
            mid = path[len(path) // 3]
            before = ui.canvas_signature()
            status, r = http("PATCH", f"/v1/maps/{MAP}", {"cells": [{"x": mid[0], "y": mid[1], "cost": 0}]})
            assert status == 200, r
            wait_for("repair event", lambda: page.get_attribute("#sub-status", "data-reason") == "blocked", 3)
            touched = ui.js("S.sub.touched")
            assert touched and mid in touched, (mid, touched and touched[:10])
            assert f"repair touched {ui.js('S.sub.touchedCount')} cell" in ui.text("#sub-status")
            time.sleep(0.2)
            # The shaded cells (and the repaired path) are drawn.
            assert ui.canvas_signature()[1] != before[1]
            page.screenshot(path=os.path.join(SHOTS, "repair.png"))
            page.click("#unsubscribe")

        @test("uploading_a_map_file_selects_it")
        def _():
            path = os.path.join(SHOTS, "tiny-test.map")
            with open(path, "w") as f:
                f.write("type octile\nheight 4\nwidth 6\nmap\n......\n.@@@@.\n......\n......\n")
            page.set_input_files("#file-input", path)
            wait_for("selected", lambda: page.input_value("#map-select") == "tiny-test")
            wait_for("drawn", lambda: ui.js("S.W") == 6 and ui.js("S.H") == 4)
            assert ui.version() == 1
            status, _ = http("GET", "/v1/maps/tiny-test")
            assert status == 200

        @test("posthoc_download")
        def _():
            page.select_option("#map-select", MAP)
            wait_for("arena2", lambda: ui.js("S.W") == 281)
            ui.click_cell(START)
            ui.click_cell(GOAL)
            wait_for("result", lambda: ui.text("#res-a-status").startswith("found"))
            with page.expect_download() as info:
                page.click("#posthoc")
            doc = json.loads(open(info.value.path()).read())
            types = [e["type"] for e in doc["events"]]
            assert types[:2] == ["source", "destination"] and types[-1] == "end", types[:3]
            assert doc["pathd"]["cost"] == ui.js("S.panes[0].result.cost")

        @test("a_1024x1024_weighted_map_is_drawn_cell_for_cell")
        def _():
            # Correctness, not speed: every cell of a 1024x1024 weighted map is on the map
            # canvas (one pixel a cell) in its class's colour. The time is printed, never
            # asserted (tests do not time; a loaded machine would fail them).
            n = 1024
            costs = [1 + ((x * 7 + y * 13) % 9 == 0) * ((x + y) % 200) for y in range(n) for x in range(n)]
            for i in range(0, n * n, 97):
                costs[i] = 0
            status, _ = http("PUT", "/v1/maps/big1024", {"width": n, "height": n, "costs": costs})
            assert status == 201, status
            page.click("#map-reload")
            wait_for("listed", lambda: ui.js("[...document.querySelectorAll('#map-select option')].some(o => o.value === 'big1024')"))
            t0 = ui.js("performance.now()")
            page.select_option("#map-select", "big1024")
            page.wait_for_function("S.W === 1024 && S.mapCanvas && S.mapCanvas.width === 1024 && !S.loading", timeout=60000)
            page.wait_for_function("new Promise(r => requestAnimationFrame(() => r(true)))")
            took = ui.js("performance.now()") - t0
            print(f"     1024x1024 map fetched and drawn in {took:.0f} ms")
            blocked = list(range(0, n * n, 97 * 1013))
            plain = [i for i in range(1, n * n, 104729) if costs[i] == 1][:12]
            px = ui.js("""(idx) => {
                const d = S.mapCanvas.getContext('2d').getImageData(0, 0, 1024, 1024).data;
                return idx.map(i => [d[4 * i], d[4 * i + 1], d[4 * i + 2]].join(','));
            }""".replace("(idx) => {", "((idx) => {") + ")(" + str(blocked + plain) + ")")
            wall, open_ = px[:len(blocked)], px[len(blocked):]
            assert len(set(wall)) == 1, wall
            assert len(set(open_)) == 1, open_
            assert wall[0] != open_[0], (wall[0], open_[0])
            assert ui.canvas_signature()[0] > 3
            page.screenshot(path=os.path.join(SHOTS, "weighted-1024.png"))

        @test("no_unexpected_console_errors")
        def _():
            bad = [e for e in console_errors if not any(x in e for x in expected_errors)]
            assert not bad, bad

        browser.close()

    failed = [n for n, e in results if e is not None]
    print(f"browser: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
