#!/usr/bin/env bash
# Executes the README's "A session with curl" so that it cannot drift from the server.
#
# Starts pathd on a free loopback port with a temporary data directory and the bundled maps,
# takes the curl commands from the README's block (the README is the source), runs each one
# against that server (`localhost:8080` rewritten to the port; `$ID` and `$SECRET` set from
# the subscription's create answer; the backgrounded SSE curl followed in the background)
# and checks what the README shows for it:
#   `# -> 201`                the status (without one: any 2xx);
#   `# -> 200 {...}`, and     the answer: JSON whose keys and values must be in the real
#   `# {...}` lines after it  answer; `...` stands for anything (a value, more keys, more
#                             list items); numbers compare to 1e-9;
#   `#| text` lines after it  the exact plain-text answer, line by line;
#   `# SSE: `a`, then `b``    for the backgrounded stream: those event reasons, in order.
# Prints `readme: N passed, M failed` and exits non-zero on any failure.
#
#   PATHD_BIN=path/to/pathd ./scripts/readme-test.sh   # use this binary
#   ./scripts/readme-test.sh                           # cargo build --locked, target/debug/pathd
#                                                      # (honours CARGO_TARGET_DIR)
set -euo pipefail
orig=$PWD
cd "$(dirname "$0")/.."
root=$PWD

for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "readme-test: $tool is required" >&2; exit 2; }
done

if [ -n "${PATHD_BIN:-}" ]; then
  case $PATHD_BIN in /*) bin=$PATHD_BIN ;; *) bin=$orig/$PATHD_BIN ;; esac
else
  cargo build --locked
  bin=${CARGO_TARGET_DIR:-target}/debug/pathd
  case $bin in /*) ;; *) bin=$root/$bin ;; esac
fi
[ -x "$bin" ] || { echo "readme-test: no pathd binary at $bin" >&2; exit 2; }

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env -u PATHD_ADMIN_TOKEN -u PATHD_QUERY_TOKEN \
  PATHD_ADDR="127.0.0.1:$port" PATHD_MAPS_DIR="$root/maps" PATHD_DATA_DIR="$tmp/data" \
  "$bin" >"$tmp/server.log" 2>&1 &
pid=$!

for _ in $(seq 1 1200); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "readme-test: pathd exited before it was ready:" >&2
    cat "$tmp/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || {
  echo "readme-test: pathd was not ready within 120 s" >&2
  exit 1
}

status=0
python3 - "$root/README.md" "$port" "$tmp" <<'PY' || status=$?
import json
import os
import re
import subprocess
import sys
import time

readme, port, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
ANY, MORE = "<<any>>", "<<more>>"


def session_lines(text):
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.strip() == "## A session with curl")
    begin = next(i for i in range(start, len(lines)) if lines[i].strip() == "```sh")
    end = next(i for i in range(begin + 1, len(lines)) if lines[i].strip() == "```")
    return lines[begin + 1:end]


def split_comment(line):
    """The shell part and the trailing comment (text after an unquoted ` #`)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def parse(lines):
    """Commands with their expectations, in order."""
    cmds, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("curl"):
            i += 1
            continue
        parts, comments = [], []
        while True:
            code, comment = split_comment(lines[i])
            if comment:
                comments.append(comment)
            if code.endswith("\\"):
                parts.append(code[:-1].strip())
                i += 1
            else:
                parts.append(code.strip())
                i += 1
                break
        cmd = " ".join(parts)
        trailing = " ".join(comments)
        json_lines, text_lines = [], []
        while i < len(lines) and lines[i].startswith("#"):
            l = lines[i]
            if l.startswith("#|"):
                text_lines.append(l[3:] if l.startswith("#| ") else l[2:])
            elif l.startswith("# {") or l.startswith("# ["):
                json_lines.append(l[2:])
            elif l.startswith("#  ") and json_lines:
                json_lines.append(l[3:])
            else:
                break  # prose
            i += 1
        c = {"cmd": cmd, "comment": trailing, "status": None, "json": None, "text": None,
             "background": cmd.endswith("&")}
        if c["background"]:
            c["cmd"] = cmd[:-1].rstrip()
            c["reasons"] = re.findall(r"`([a-z_]+)`", trailing)
        m = re.match(r"->\s*(\d{3})?\s*(.*)$", trailing)
        if m:
            if m.group(1):
                c["status"] = int(m.group(1))
            rest = m.group(2).strip()
            if rest.startswith("{") or rest.startswith("["):
                c["json"] = rest
        if json_lines:
            c["json"] = " ".join(json_lines)
        if text_lines:
            c["text"] = text_lines
        cmds.append(c)
    return cmds


def expected_json(t):
    t = re.sub(r'"\.\.\."', json.dumps(ANY), t)
    t = re.sub(r",\s*\.\.\.\s*\}", "}", t)
    t = re.sub(r",\s*\.\.\.\s*\]", "," + json.dumps(MORE) + "]", t)
    t = re.sub(r":\s*\.\.\.", ":" + json.dumps(ANY), t)
    return json.loads(t)


def matches(want, got, where="$"):
    """None when `got` has everything `want` shows, else where it differs."""
    if want == ANY:
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{where}: expected an object, got {json.dumps(got)[:80]}"
        for k, v in want.items():
            if k not in got:
                return f"{where}.{k}: missing"
            d = matches(v, got[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"{where}: expected a list, got {json.dumps(got)[:80]}"
        prefix = bool(want) and want[-1] == MORE
        items = want[:-1] if prefix else want
        if len(got) < len(items) or (not prefix and len(got) != len(items)):
            return f"{where}: {len(got)} items, expected {'at least ' if prefix else ''}{len(items)}"
        for n, (w, g) in enumerate(zip(items, got)):
            d = matches(w, g, f"{where}[{n}]")
            if d:
                return d
        return None
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if isinstance(got, (int, float)) and not isinstance(got, bool):
            if abs(want - got) <= 1e-9 * max(1.0, abs(want)):
                return None
        return f"{where}: expected {want}, got {json.dumps(got)[:80]}"
    return None if want == got else f"{where}: expected {json.dumps(want)}, got {json.dumps(got)[:80]}"


def local(cmd):
    return cmd.replace("localhost:8080", f"127.0.0.1:{port}")


env = dict(os.environ)
passed = failed = 0
background = []  # (command, process, output file)


def report(ok, cmd, why=""):
    global passed, failed
    short = cmd if len(cmd) <= 100 else cmd[:97] + "..."
    if ok:
        passed += 1
        print(f"ok    {short}")
    else:
        failed += 1
        print(f"FAIL  {short}\n      {why}")


def sse_reasons(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    reasons = []
    for line in text.split("\n"):
        if line.startswith("data:"):
            try:
                reasons.append(json.loads(line[5:].strip()).get("reason"))
            except ValueError:
                reasons.append("<not JSON>")
    return reasons


cmds = parse(session_lines(open(readme, encoding="utf-8").read()))
if len(cmds) < 10:
    print(f"FAIL  the README's session has only {len(cmds)} curl commands")
    failed += 1

for n, c in enumerate(cmds):
    cmd = local(c["cmd"])
    if c["background"]:
        out = os.path.join(tmp, f"background-{n}.out")
        f = open(out, "wb")
        p = subprocess.Popen(["bash", "-c", f"exec {cmd} -sS -N --max-time 120"],
                             stdout=f, stderr=subprocess.STDOUT, env=env)
        background.append((c, p, out))
        # Streams start with the current state: wait for it before the session goes on.
        deadline = time.time() + 10
        while time.time() < deadline and not sse_reasons(out) and p.poll() is None:
            time.sleep(0.05)
        continue
    body = os.path.join(tmp, f"body-{n}")
    r = subprocess.run(["bash", "-c", f"{cmd} -sS -o '{body}' -w '%{{http_code}}'"],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        report(False, c["cmd"], f"curl failed ({r.returncode}): {r.stderr.strip()}")
        continue
    code = int(r.stdout.strip() or 0)
    with open(body, "rb") as f:
        raw = f.read().decode("utf-8", errors="replace")
    why = None
    if c["status"] is not None and code != c["status"]:
        why = f"status {code}, README says {c['status']}; body {raw[:200]}"
    elif c["status"] is None and not 200 <= code < 300:
        why = f"status {code}, expected success; body {raw[:200]}"
    got = None
    if raw.lstrip().startswith(("{", "[")):
        try:
            got = json.loads(raw)
        except ValueError:
            pass
    if why is None and c["json"] is not None:
        try:
            want = expected_json(c["json"])
        except ValueError as e:
            want, why = None, f"the README's answer is not JSON with `...`: {e}: {c['json']}"
        if why is None:
            why = matches(want, got) if got is not None else f"answer is not JSON: {raw[:200]}"
            if why:
                why = f"answer differs from the README ({why}); body {raw[:300]}"
    if why is None and c["text"] is not None:
        lines = raw.rstrip("\n").split("\n")
        if lines != c["text"]:
            why = f"answer differs from the README: {lines} != {c['text']}"
    if isinstance(got, dict) and "id" in got and "secret" in got:
        env["ID"], env["SECRET"] = str(got["id"]), str(got["secret"])
    report(why is None, c["cmd"], why or "")

for c, p, out in background:
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    reasons = sse_reasons(out)
    it = iter(reasons)
    if not c.get("reasons"):
        report(bool(reasons), c["cmd"], "no events")
    elif all(any(r == want for r in it) for want in c["reasons"]):
        report(True, c["cmd"])
    else:
        report(False, c["cmd"], f"events {reasons}, README says {c['reasons']} in order")

print(f"readme: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
if [ "$status" != 0 ]; then
  echo "readme-test: server log:" >&2
  tail -n 40 "$tmp/server.log" >&2 || true
fi
exit "$status"
