#!/usr/bin/env python3
"""Known-advisory checks for pathd's dependencies (driven by scripts/advisories.sh).

Standard library only (Python >= 3.11 for tomllib).

  advisories.py rust --lock Cargo.lock (--snapshot FILE | --db-dir DIR)
      every [[package]] of Cargo.lock against RustSec advisories: a vulnerability
      advisory whose patched/unaffected ranges leave the locked version out is a
      finding (exit 1); informational ones (unmaintained, unsound, notice) are
      warnings; with a snapshot, a registry crate the snapshot never looked up fails
      (its status is unknown, so the check cannot say "no known advisory").
  advisories.py npm-report DIR JSON        reads `npm audit --json` output
  advisories.py pip-specs ROOT             the pip requirements the scripts install
  advisories.py pip-report ...             pip-audit's JSON plus the PyPI fallback
  advisories.py self-test                  the unit tests below

Version ranges follow Cargo's semver rules (RustSec writes them as Cargo version
requirements): `>= 0.103.13, < 0.104.0-alpha.1` is one requirement (all comparators must
hold), a list of requirements matches when any one does; a bare version means `^`;
`^`, `~`, `=`, `*`/`x` wildcards and partial versions (`0.20`, `< 0.3`) expand as in
Cargo. A pre-release version only matches a requirement that names a pre-release of the
same major.minor.patch, so a pre-release is never counted as patched or unaffected by a
range written for releases.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tomllib
import unittest
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------------------
# Semantic versions and Cargo version requirements


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple = ()  # identifiers: int or str

    @staticmethod
    def parse(text: str) -> "Version":
        m = re.fullmatch(
            r"\s*v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\s*", text
        )
        if not m:
            raise ValueError(f"not a semantic version: {text!r}")
        pre = tuple(_pre_ident(p) for p in m.group(4).split(".")) if m.group(4) else ()
        return Version(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)

    def key(self):
        # Precedence (semver 2.0 section 11): a release ranks above its pre-releases;
        # numeric identifiers rank below alphanumeric ones and compare as numbers.
        if not self.pre:
            return (self.major, self.minor, self.patch, 1, ())
        ids = tuple((0, i, "") if isinstance(i, int) else (1, 0, i) for i in self.pre)
        return (self.major, self.minor, self.patch, 0, ids)

    def __lt__(self, other):
        return self.key() < other.key()

    def __le__(self, other):
        return self.key() <= other.key()

    def __gt__(self, other):
        return self.key() > other.key()

    def __ge__(self, other):
        return self.key() >= other.key()

    def __str__(self):
        s = f"{self.major}.{self.minor}.{self.patch}"
        return s + ("-" + ".".join(str(i) for i in self.pre) if self.pre else "")


def _pre_ident(p: str):
    if not p:
        raise ValueError("empty pre-release identifier")
    return int(p) if p.isdigit() else p


@dataclass
class Comparator:
    """One comparator as written (`>= 0.103.13`, `^1.2`, `0.20`, `1.*`), kept with its
    expansion into plain bounds [(op, Version)] for precedence comparison."""

    text: str
    major: int
    minor: int | None
    patch: int | None
    pre: tuple
    bounds: list = field(default_factory=list)


_CMP = re.compile(
    r"\s*(>=|<=|>|<|=|\^|~)?\s*(\d+|\*|x|X)(?:\.(\d+|\*|x|X))?(?:\.(\d+|\*|x|X))?"
    r"(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\s*"
)


def parse_comparator(text: str) -> Comparator:
    m = _CMP.fullmatch(text)
    if not m:
        raise ValueError(f"not a version comparator: {text!r}")
    op, smaj, smin, spat, spre = m.groups()
    op = op or "^"  # Cargo: a bare version is a caret requirement
    wild = lambda s: s is not None and s in "*xX"  # noqa: E731
    parts = [smaj, smin, spat]
    if wild(smaj):
        if op != "^" or smin is not None:
            raise ValueError(f"unsupported wildcard: {text!r}")
        return Comparator(text, 0, None, None, (), [])  # `*`: every version
    # `1.*`, `1.2.x`: the same as `=1`, `=1.2`
    for i in (1, 2):
        if wild(parts[i]):
            if any(p is not None and not wild(p) for p in parts[i + 1 :]) or op not in "^=":
                raise ValueError(f"unsupported wildcard: {text!r}")
            op = "="
            parts[i:] = [None] * (3 - i)
            break
    major = int(parts[0])
    minor = int(parts[1]) if parts[1] is not None else None
    patch = int(parts[2]) if parts[2] is not None else None
    pre = tuple(_pre_ident(p) for p in spre.split(".")) if spre else ()
    if pre and patch is None:
        raise ValueError(f"a pre-release needs a full version: {text!r}")
    c = Comparator(text, major, minor, patch, pre)
    lo = Version(major, minor or 0, patch or 0, pre)

    def up(n_major, n_minor=0, n_patch=0):
        return ("<", Version(n_major, n_minor, n_patch))

    if op == "=":
        if patch is not None:
            c.bounds = [("=", lo)]
        elif minor is not None:
            c.bounds = [(">=", lo), up(major, minor + 1)]
        else:
            c.bounds = [(">=", lo), up(major + 1)]
    elif op == ">":
        if patch is not None:
            c.bounds = [(">", lo)]
        elif minor is not None:
            c.bounds = [(">=", Version(major, minor + 1, 0))]
        else:
            c.bounds = [(">=", Version(major + 1, 0, 0))]
    elif op == ">=":
        c.bounds = [(">=", lo)]
    elif op == "<":
        c.bounds = [("<", lo)]
    elif op == "<=":
        if patch is not None:
            c.bounds = [("<=", lo)]
        elif minor is not None:
            c.bounds = [up(major, minor + 1)]
        else:
            c.bounds = [up(major + 1)]
    elif op == "~":
        if minor is not None:
            c.bounds = [(">=", lo), up(major, minor + 1)]
        else:
            c.bounds = [(">=", lo), up(major + 1)]
    elif op == "^":
        if major > 0 or minor is None:
            c.bounds = [(">=", lo), up(major + 1)]
        elif minor > 0 or patch is None:
            c.bounds = [(">=", lo), up(0, minor + 1)]
        else:  # ^0.0.K
            c.bounds = [(">=", lo), up(0, 0, patch + 1)]
    return c


def _holds(op: str, v: Version, b: Version) -> bool:
    return {
        "=": lambda: v.key() == b.key(),
        ">": lambda: v > b,
        ">=": lambda: v >= b,
        "<": lambda: v < b,
        "<=": lambda: v <= b,
    }[op]()


class Requirement:
    """A Cargo version requirement: comma-separated comparators, all of which must hold."""

    def __init__(self, text: str):
        self.text = text
        pieces = [p for p in text.split(",")]
        if not text.strip() or any(not p.strip() for p in pieces):
            raise ValueError(f"empty comparator in {text!r}")
        self.comparators = [parse_comparator(p) for p in pieces]

    def matches(self, v: Version) -> bool:
        if not all(_holds(op, v, b) for c in self.comparators for op, b in c.bounds):
            return False
        if not v.pre:
            return True
        # Cargo's rule: a pre-release only satisfies a requirement that mentions a
        # pre-release of the same major.minor.patch.
        return any(
            c.pre and (c.major, c.minor, c.patch) == (v.major, v.minor, v.patch)
            for c in self.comparators
        )

    def __repr__(self):
        return f"Requirement({self.text!r})"


def any_matches(reqs, v: Version) -> bool:
    return any(Requirement(r).matches(v) for r in reqs)


def is_affected(adv: dict, v: Version) -> bool:
    """An advisory affects every version that neither a patched nor an unaffected
    requirement covers (RustSec's rule; no ranges at all means every version)."""
    return not (any_matches(adv.get("patched", []), v) or any_matches(adv.get("unaffected", []), v))


# --------------------------------------------------------------------------------------
# RustSec advisory sources


def parse_advisory_md(text: str) -> dict:
    """A RustSec advisory file: a ```toml front matter block, then the Markdown whose first
    `# ` heading is the title."""
    m = re.match(r"\s*```toml\s*\n(.*?)\n```", text, re.S)
    if not m:
        raise ValueError("no ```toml front matter")
    data = tomllib.loads(m.group(1))
    a, versions, affected = data.get("advisory", {}), data.get("versions", {}), data.get("affected", {})
    title = next((ln[2:].strip() for ln in text[m.end():].splitlines() if ln.startswith("# ")), "")
    out = {
        "id": a["id"],
        "package": a["package"],
        "date": str(a.get("date", "")),
        "title": title,
        "patched": list(versions.get("patched", [])),
        "unaffected": list(versions.get("unaffected", [])),
        "informational": a.get("informational"),
        "withdrawn": str(a["withdrawn"]) if a.get("withdrawn") else None,
    }
    if affected.get("os"):
        out["os"] = list(affected["os"])
    return out


def load_db_dir(db: Path) -> list:
    advisories = []
    for path in sorted((db / "crates").glob("*/*.md")):
        try:
            advisories.append(parse_advisory_md(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, tomllib.TOMLDecodeError) as e:
            raise SystemExit(f"advisories: cannot read {path}: {e}")
    if not advisories:
        raise SystemExit(f"advisories: no advisories under {db}/crates")
    return advisories


CRATES_IO = ("registry+https://github.com/rust-lang/crates.io-index", "sparse+https://index.crates.io/")


@dataclass
class RustResult:
    checked: int = 0
    local: int = 0
    failures: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def check_lock(packages: list, advisories: list, looked_up: set | None, drafts=()) -> RustResult:
    """packages: Cargo.lock [[package]] tables; looked_up: the crate names a snapshot
    covers (None for a full database)."""
    by_name: dict = {}
    for a in advisories:
        by_name.setdefault(a["package"], []).append(a)
    drafts_by_name: dict = {}
    for d in drafts:
        drafts_by_name.setdefault(d["package"], []).append(d)
    r = RustResult()
    for p in packages:
        name, ver = p["name"], p["version"]
        source = p.get("source")
        if source is None:
            r.local += 1  # a workspace member: ours, not a published crate
            continue
        r.checked += 1
        if not source.startswith(CRATES_IO):
            r.failures.append(f"{name} {ver}: from {source}, not crates.io; RustSec covers crates.io only")
            continue
        if looked_up is not None and name not in looked_up:
            r.failures.append(
                f"{name} {ver}: not covered by the snapshot (never looked up in rustsec/advisory-db); "
                "add it as security/README.md says, or run where github.com is reachable"
            )
            continue
        v = Version.parse(ver)
        for a in sorted(by_name.get(name, []), key=lambda a: a["id"]):
            if a.get("withdrawn") or not is_affected(a, v):
                continue
            patched = ", ".join(a["patched"]) or "none"
            os_note = f" (only on {', '.join(a['os'])})" if a.get("os") else ""
            line = f"{name} {ver}: {a['id']} {a['title']}{os_note}; patched: {patched}"
            if a.get("informational"):
                r.warnings.append(f"{line} [{a['informational']}]")
            else:
                r.failures.append(line)
        for d in drafts_by_name.get(name, []):
            if d.get("duplicate_of") or not is_affected(d, v):
                continue
            r.notes.append(
                f"{name} {ver}: unpublished draft {d['path']} ({d['date']}) {d['title']}; "
                "a proposal never assigned an id, not an advisory"
            )
    return r


def cmd_rust(args: list) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="advisories.py rust")
    ap.add_argument("--lock", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--snapshot")
    g.add_argument("--db-dir")
    ap.add_argument("--source-label", default="")
    ap.add_argument("--verbose", action="store_true", help="list the unpublished drafts that match")
    o = ap.parse_args(args)
    packages = tomllib.loads(Path(o.lock).read_text())["package"]
    if o.snapshot:
        snap = json.loads(Path(o.snapshot).read_text())
        advisories, looked_up, drafts = snap["advisories"], set(snap["looked_up"]), snap.get("drafts", [])
        label = o.source_label or (
            f"snapshot {o.snapshot} (made {snap['made']}, newest advisory {snap['newest_advisory_date']})"
        )
    else:
        advisories, looked_up, drafts = load_db_dir(Path(o.db_dir)), None, []
        label = o.source_label or f"advisory-db at {o.db_dir}"
    r = check_lock(packages, advisories, looked_up, drafts)
    for w in r.warnings:
        print(f"advisories rust: warning: {w}")
    if o.verbose:
        for n in r.notes:
            print(f"advisories rust: note: {n}")
    elif r.notes:
        print(
            f"advisories rust: note: {len(r.notes)} unpublished RUSTSEC-0000-0000 drafts in the stored index "
            "name locked versions (proposals never assigned an id, not advisories; --verbose lists them)"
        )
    for f in r.failures:
        print(f"advisories rust: FAIL: {f}")
    print(
        f"advisories rust: {r.checked} crates.io packages of {Path(o.lock).name} checked "
        f"({r.local} workspace members skipped) against {label}, {len(advisories)} advisories: "
        f"{len(r.failures)} failing, {len(r.warnings)} informational warnings"
    )
    return 1 if r.failures else 0


# --------------------------------------------------------------------------------------
# npm: `npm audit --json`


def npm_report(data: dict) -> tuple[str, list]:
    """('ok' | 'unavailable', lines). `npm audit --json` gives an auditReportVersion 2
    report, or an error object when the registry's audit endpoint refuses."""
    if "auditReportVersion" not in data:
        msg = data.get("message") or json.dumps(data.get("error", data))[:200]
        return "unavailable", [msg]
    lines = []
    for name, v in sorted(data.get("vulnerabilities", {}).items()):
        advisories = [
            f"{x.get('url', x.get('source'))} {x.get('title', '')} ({x.get('range', '')})".strip()
            for x in v.get("via", [])
            if isinstance(x, dict)
        ]
        via = "; ".join(advisories) or "via " + ", ".join(x for x in v.get("via", []) if isinstance(x, str))
        fix = v.get("fixAvailable")
        fix_s = f"fix: {fix.get('name')}@{fix.get('version')}" if isinstance(fix, dict) else f"fix available: {fix}"
        lines.append(f"{name} {v.get('range', '')} [{v.get('severity')}]: {via}; {fix_s}")
    return "ok", lines


def cmd_npm_report(args: list) -> int:
    where, path = args
    raw = Path(path).read_text()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        print(f"advisories npm: {where}: UNCHECKED: npm audit gave no JSON: {raw[:200]!r}")
        return 2
    state, lines = npm_report(data)
    if state == "unavailable":
        print(f"advisories npm: {where}: UNCHECKED: the registry's audit endpoint refused: {lines[0]}")
        return 2
    for ln in lines:
        print(f"advisories npm: FAIL: {where}: {ln}")
    total = data.get("metadata", {}).get("dependencies", {}).get("total", "?")
    print(f"advisories npm: {where}: {total} packages audited, {len(lines)} vulnerable")
    return 1 if lines else 0


# --------------------------------------------------------------------------------------
# Python: what the scripts pip-install, pip-audit's report, the PyPI fallback

_PIP_LINE = re.compile(r"(?:python3? -m pip|\bpip3?) install\s+(.*)$")


def pip_specs(root: Path) -> list:
    """The requirements scripts/*.sh pip-install, plus clients/python's dependencies and
    test extra: what the test run puts into its Python environment."""
    specs = []
    for sh in sorted((root / "scripts").glob("*.sh")):
        if sh.name == "advisories.sh":
            continue
        for line in sh.read_text().splitlines():
            m = _PIP_LINE.search(line.split("#", 1)[0].strip())
            if not m:
                continue
            for tok in m.group(1).split():
                tok = tok.strip("'\"")
                if tok and not tok.startswith("-"):
                    specs.append(tok)
    py = tomllib.loads((root / "clients/python/pyproject.toml").read_text())["project"]
    specs += py.get("dependencies", [])
    for extra in py.get("optional-dependencies", {}).values():
        specs += extra
    seen, out = set(), []
    for s in specs:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pypi_latest_vulns(name: str, version: str, fetch=None):
    """PyPI's JSON API for the project: its `vulnerabilities` are those of the latest
    release (PyPI's own vulnerability service), so they answer for `version` only when it
    is the latest. Returns a list of (id, fixed_in, summary), or None when unanswerable."""
    fetch = fetch or _fetch_json
    data = fetch(f"https://pypi.org/pypi/{name}/json")
    if data is None or data.get("info", {}).get("version") != version:
        return None
    return [
        (v.get("id"), ", ".join(v.get("fixed_in") or []) or "none", (v.get("summary") or v.get("details") or "")[:100])
        for v in data.get("vulnerabilities", [])
        if not v.get("withdrawn")
    ]


def _fetch_json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return json.load(resp)
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError):
        return None


def pip_report(audit: dict, fetch=None) -> tuple[list, list, list]:
    """pip-audit's JSON: (findings, checked names, unchecked lines). A package pip-audit
    had to skip (no per-version data reachable) falls back to PyPI's project JSON."""
    findings, checked, unchecked = [], [], []
    for dep in audit.get("dependencies", []):
        name, version = dep["name"], dep.get("version")
        if "skip_reason" not in dep:
            checked.append(name)
            for v in dep.get("vulns", []):
                fix = ", ".join(v.get("fix_versions", [])) or "none"
                findings.append(f"{name} {version}: {v['id']} ({', '.join(v.get('aliases', []))}); fixed in: {fix}")
            continue
        m = re.search(r"\(([^)]+)\)\s*$", dep["skip_reason"])
        version = version or (m.group(1) if m else None)
        if version is None:
            unchecked.append(f"{name}: {dep['skip_reason']}")
            continue
        vulns = pypi_latest_vulns(name, version, fetch)
        if vulns is None:
            unchecked.append(f"{name} {version}: {dep['skip_reason']}; not the latest release, so PyPI's project data does not answer for it")
            continue
        checked.append(name)
        for vid, fix, summary in vulns:
            findings.append(f"{name} {version}: {vid} {summary}; fixed in: {fix}")
    return findings, checked, unchecked


def cmd_pip_specs(args: list) -> int:
    print("\n".join(pip_specs(Path(args[0]))))
    return 0


def cmd_pip_pins(args: list) -> int:
    """pip's --report of a dry-run install and `pip list` of the test run's environment
    -> OUT/resolved.txt (name==version as a fresh install resolves them) and
    OUT/installed.txt (the installed versions of the same packages where they differ: the
    scripts skip pip when a module already imports, so those are what the tests use)."""
    report, installed, out = args
    resolved = {}
    for item in json.loads(Path(report).read_text())["install"]:
        md = item["metadata"]
        resolved[_canon(md["name"])] = md["version"]
    differing = {}
    for item in json.loads(Path(installed).read_text()):
        c = _canon(item["name"])
        if c in resolved and item["version"] != resolved[c]:
            differing[c] = item["version"]
    Path(out, "resolved.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(resolved.items())))
    Path(out, "installed.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(differing.items())))
    print(
        f"advisories python: {len(resolved)} packages resolved, {len(differing)} installed at another version "
        f"({', '.join(f'{n} {v}' for n, v in sorted(differing.items())) or 'none'})"
    )
    return 0


def cmd_pip_report(args: list) -> int:
    audit = {"dependencies": [d for path in args for d in json.loads(Path(path).read_text())["dependencies"]]}
    findings, checked, unchecked = pip_report(audit)
    for u in unchecked:
        print(f"advisories python: UNCHECKED: {u}")
    for f in findings:
        print(f"advisories python: FAIL: {f}")
    print(
        f"advisories python: {len(checked)} of {len(audit.get('dependencies', []))} package versions checked "
        f"(pip-audit, PyPI vulnerability data), {len(findings)} vulnerable, {len(unchecked)} unchecked"
    )
    return 1 if findings else (2 if unchecked else 0)


# --------------------------------------------------------------------------------------
# Self-test


class VersionTests(unittest.TestCase):
    def test_precedence(self):
        order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
                 "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
        vs = [Version.parse(s) for s in order]
        self.assertEqual(vs, sorted(vs, key=Version.key))
        self.assertTrue(Version.parse("1.0.0+build.5").key() == Version.parse("1.0.0").key())
        self.assertRaises(ValueError, Version.parse, "1.2")

    def m(self, req, ver):
        return Requirement(req).matches(Version.parse(ver))

    def test_ranges(self):
        self.assertTrue(self.m(">= 0.29.0", "0.52.0"))
        self.assertFalse(self.m(">= 0.29.0", "0.28.9"))
        self.assertTrue(self.m(">=0.3.20", "0.3.23"))  # no space after the operator
        self.assertTrue(self.m("< 0.10.0, >= 0.9.3", "0.9.5"))  # upper bound first
        self.assertFalse(self.m("< 0.10.0, >= 0.9.3", "0.10.0"))
        self.assertFalse(self.m("< 0.10.0, >= 0.9.3", "0.9.2"))

    def test_partial_versions(self):
        self.assertTrue(self.m("< 0.3", "0.2.99"))
        self.assertFalse(self.m("< 0.3", "0.3.0"))
        self.assertTrue(self.m("<= 0.22", "0.22.9"))  # <=0.22 means <0.23.0
        self.assertFalse(self.m("<= 0.22", "0.23.0"))
        self.assertTrue(self.m(">= 0.17", "0.17.0"))
        self.assertTrue(self.m("> 0.17", "0.18.0"))
        self.assertFalse(self.m("> 0.17", "0.17.9"))  # >0.17 means >=0.18.0
        self.assertTrue(self.m(">= 2", "2.0.0"))
        self.assertFalse(self.m(">= 2", "1.9.9"))
        self.assertTrue(self.m("=0.15.0", "0.15.0"))
        self.assertTrue(self.m("=0.2", "0.2.7"))
        self.assertFalse(self.m("=0.2", "0.3.0"))
        self.assertTrue(self.m("0.20", "0.20.5"))  # bare partial = ^0.20
        self.assertFalse(self.m("0.20", "0.21.0"))
        self.assertTrue(self.m("1.*", "1.9.0"))
        self.assertFalse(self.m("1.*", "2.0.0"))
        self.assertTrue(self.m("*", "7.1.2"))

    def test_caret_and_tilde(self):
        self.assertTrue(self.m("^0.3.24", "0.3.26"))
        self.assertFalse(self.m("^0.3.24", "0.3.23"))
        self.assertFalse(self.m("^0.3.24", "0.4.0"))
        self.assertTrue(self.m("^ 0.3.1", "0.3.1"))  # space after ^
        self.assertTrue(self.m("^1.8.1", "1.54.1"))
        self.assertFalse(self.m("^1.8.1", "2.0.0"))
        self.assertTrue(self.m("^0.0.3", "0.0.3"))
        self.assertFalse(self.m("^0.0.3", "0.0.4"))
        self.assertTrue(self.m("^0", "0.9.0"))
        self.assertFalse(self.m("^0", "1.0.0"))
        self.assertTrue(self.m("0.13.10", "0.13.12"))  # bare = caret
        self.assertFalse(self.m("0.13.10", "0.14.0"))
        self.assertTrue(self.m("~1.2.3", "1.2.9"))
        self.assertFalse(self.m("~1.2.3", "1.3.0"))
        self.assertTrue(self.m("~1", "1.9.0"))

    def test_prereleases(self):
        r = ">= 0.103.13, < 0.104.0-alpha.1"
        self.assertTrue(self.m(r, "0.103.17"))
        self.assertFalse(self.m(r, "0.103.12"))
        self.assertFalse(self.m(r, "0.104.0-alpha.1"))
        self.assertFalse(self.m(r, "0.104.0"))
        self.assertTrue(self.m(">= 0.104.0-alpha.7", "0.104.0-alpha.7"))
        self.assertTrue(self.m(">= 0.104.0-alpha.7", "0.104.0-alpha.10"))  # numeric ids
        self.assertFalse(self.m(">= 0.104.0-alpha.7", "0.104.0-alpha.6"))
        self.assertTrue(self.m(">= 0.104.0-alpha.7", "0.104.0"))
        self.assertTrue(self.m(">= 0.104.0-alpha.7", "0.105.0"))
        # Cargo's rule: a pre-release of another version never satisfies a requirement
        # written for releases or for other pre-releases.
        self.assertFalse(self.m(">= 0.104.0-alpha.7", "0.105.0-alpha.1"))
        self.assertFalse(self.m(">= 3.2.1", "3.3.0-beta.1"))
        self.assertFalse(self.m("< 3.0.0", "2.0.0-rc.1"))
        self.assertTrue(self.m(">= 0.3.0-rc.2", "0.3.0-rc.2"))
        self.assertFalse(self.m(">= 0.3.0-rc.2", "0.3.0-rc.1"))

    def test_bad_requirements(self):
        for bad in ["", ">= ", ">= 1.2,", "1.2.3.4", "=> 1.0.0", "^1.2-alpha", "1.*.3"]:
            self.assertRaises(ValueError, Requirement, bad)


class AdvisoryTests(unittest.TestCase):
    WEBPKI = {
        "id": "RUSTSEC-2026-0104", "package": "rustls-webpki", "date": "2026-04-22",
        "title": "Reachable panic in certificate revocation list parsing",
        "patched": [">= 0.103.13, < 0.104.0-alpha.1", ">= 0.104.0-alpha.7"],
        "unaffected": [], "informational": None, "withdrawn": None,
    }

    def lock(self, name, version):
        return [{"name": name, "version": version, "source": CRATES_IO[0]}]

    def test_multiple_ranges(self):
        a = self.WEBPKI
        for v, affected in [("0.103.12", True), ("0.103.13", False), ("0.103.99", False),
                            ("0.104.0-alpha.1", True), ("0.104.0-alpha.6", True),
                            ("0.104.0-alpha.7", False), ("0.104.0", False), ("0.102.8", True)]:
            self.assertEqual(is_affected(a, Version.parse(v)), affected, v)

    def test_unaffected_and_empty(self):
        a = {"patched": [">= 1.11.1"], "unaffected": ["< 1.2.1"]}
        self.assertFalse(is_affected(a, Version.parse("1.2.0")))
        self.assertTrue(is_affected(a, Version.parse("1.2.1")))
        self.assertTrue(is_affected(a, Version.parse("1.11.0")))
        self.assertFalse(is_affected(a, Version.parse("1.11.1")))
        self.assertTrue(is_affected({"patched": [], "unaffected": []}, Version.parse("9.9.9")))
        self.assertFalse(is_affected({"patched": [], "unaffected": [">= 0.17"]}, Version.parse("0.17.14")))

    def test_affected_lock_entry_fails_and_patched_passes(self):
        bad = check_lock(self.lock("rustls-webpki", "0.103.12"), [self.WEBPKI], {"rustls-webpki"})
        self.assertEqual(len(bad.failures), 1)
        self.assertIn("RUSTSEC-2026-0104", bad.failures[0])
        self.assertIn(">= 0.103.13, < 0.104.0-alpha.1", bad.failures[0])
        good = check_lock(self.lock("rustls-webpki", "0.103.13"), [self.WEBPKI], {"rustls-webpki"})
        self.assertEqual((good.failures, good.warnings, good.checked), ([], [], 1))

    def test_informational_and_withdrawn(self):
        unsound = dict(self.WEBPKI, id="RUSTSEC-X", informational="unsound")
        r = check_lock(self.lock("rustls-webpki", "0.103.12"), [unsound], {"rustls-webpki"})
        self.assertEqual(r.failures, [])
        self.assertEqual(len(r.warnings), 1)
        self.assertIn("[unsound]", r.warnings[0])
        gone = dict(self.WEBPKI, withdrawn="2026-05-01")
        r = check_lock(self.lock("rustls-webpki", "0.103.12"), [gone], {"rustls-webpki"})
        self.assertEqual((r.failures, r.warnings), ([], []))

    def test_uncovered_and_foreign_crates_fail_local_ones_skip(self):
        pkgs = self.lock("brand-new-crate", "1.0.0") + [
            {"name": "pathd", "version": "0.1.0"},
            {"name": "forked", "version": "0.1.0", "source": "git+https://example.org/forked#abc"},
        ]
        r = check_lock(pkgs, [], {"rustls-webpki"})
        self.assertEqual(r.local, 1)
        self.assertEqual(len(r.failures), 2)
        self.assertIn("brand-new-crate 1.0.0: not covered by the snapshot", r.failures[0])
        self.assertIn("not crates.io", r.failures[1])
        # A full database (no looked-up list) covers every crate.
        self.assertEqual(check_lock(self.lock("brand-new-crate", "1.0.0"), [], None).failures, [])

    def test_advisory_file_format(self):
        text = (
            "```toml\n[advisory]\nid = \"RUSTSEC-2026-0009\"\npackage = \"time\"\ndate = 2026-02-05\n"
            "informational = \"unsound\"\n[affected]\nos = [\"linux\"]\n[versions]\n"
            "patched = [\">= 0.3.47\"]\nunaffected = [\"< 0.3.6\"]\n```\n\n# Stack exhaustion\n\n# Later\n"
        )
        a = parse_advisory_md(text)
        self.assertEqual(
            (a["id"], a["package"], a["date"], a["title"], a["patched"], a["unaffected"], a["os"]),
            ("RUSTSEC-2026-0009", "time", "2026-02-05", "Stack exhaustion", [">= 0.3.47"], ["< 0.3.6"], ["linux"]),
        )
        self.assertRaises(ValueError, parse_advisory_md, "# no front matter\n")


class CommandTests(unittest.TestCase):
    """`advisories.py rust` end to end on a database directory laid out like
    rustsec/advisory-db and a Cargo.lock: exit 1 on an affected version, 0 once patched."""

    def run_rust(self, version):
        import contextlib
        import io
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            crate = Path(d, "db/crates/h2")
            crate.mkdir(parents=True)
            (crate / "RUSTSEC-2026-0258.md").write_text(
                '```toml\n[advisory]\nid = "RUSTSEC-2026-0258"\npackage = "h2"\ndate = "2026-08-17"\n'
                '[versions]\npatched = [">= 0.4.16"]\n```\n\n# h2 unbounded empty DATA frames\n'
            )
            lock = Path(d, "Cargo.lock")
            lock.write_text(
                f'version = 4\n\n[[package]]\nname = "h2"\nversion = "{version}"\n'
                f'source = "{CRATES_IO[0]}"\n\n[[package]]\nname = "pathd"\nversion = "0.1.0"\n'
            )
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = cmd_rust(["--lock", str(lock), "--db-dir", str(Path(d, "db"))])
            return rc, out.getvalue()

    def test_affected_fails_patched_passes(self):
        rc, out = self.run_rust("0.4.15")
        self.assertEqual(rc, 1)
        self.assertIn("FAIL: h2 0.4.15: RUSTSEC-2026-0258 h2 unbounded empty DATA frames; patched: >= 0.4.16", out)
        rc, out = self.run_rust("0.4.16")
        self.assertEqual(rc, 0)
        self.assertIn("1 crates.io packages of Cargo.lock checked (1 workspace members skipped)", out)


class SnapshotTests(unittest.TestCase):
    """The committed snapshot is well formed: every range parses, every advisory names a
    crate it says it looked up."""

    def test_snapshot(self):
        path = Path(__file__).resolve().parent.parent / "security/rustsec-snapshot.json"
        snap = json.loads(path.read_text())
        looked = set(snap["looked_up"])
        ids = {a["id"] for a in snap["advisories"]}
        self.assertTrue(snap["advisories"])
        self.assertEqual(len(ids), len(snap["advisories"]))
        for a in snap["advisories"] + snap.get("drafts", []):
            self.assertIn(a["package"], looked)
            if "duplicate_of" in a:
                self.assertIn(a["duplicate_of"], ids)
                continue
            for r in a["patched"] + a["unaffected"]:
                Requirement(r)
        dates = [a["date"] for a in snap["advisories"]]
        self.assertEqual(max(dates), snap["newest_advisory_date"])


class ReportTests(unittest.TestCase):
    def test_npm(self):
        state, lines = npm_report({"message": "405 Method Not Allowed - POST .../advisories/bulk", "error": {}})
        self.assertEqual(state, "unavailable")
        state, lines = npm_report({"auditReportVersion": 2, "vulnerabilities": {
            "js-yaml": {"severity": "moderate", "range": "<4.1.1", "fixAvailable": True,
                        "via": [{"source": 1, "url": "https://github.com/advisories/GHSA-x",
                                 "title": "prototype pollution", "range": "<4.1.1"}]}}})
        self.assertEqual(state, "ok")
        self.assertEqual(len(lines), 1)
        self.assertIn("GHSA-x", lines[0])
        self.assertEqual(npm_report({"auditReportVersion": 2, "vulnerabilities": {}}), ("ok", []))

    def test_pip(self):
        def fetch(url):
            return {
                "https://pypi.org/pypi/fresh/json": {"info": {"version": "2.0"}, "vulnerabilities": [
                    {"id": "PYSEC-1", "fixed_in": ["2.1"], "summary": "bad", "withdrawn": None},
                    {"id": "PYSEC-2", "fixed_in": [], "summary": "gone", "withdrawn": "2026-01-01"}]},
                "https://pypi.org/pypi/stale/json": {"info": {"version": "9.0"}, "vulnerabilities": []},
            }.get(url)

        audit = {"dependencies": [
            {"name": "ok", "version": "1.0", "vulns": []},
            {"name": "hit", "version": "1.0", "vulns": [{"id": "GHSA-1", "fix_versions": ["1.1"], "aliases": []}]},
            {"name": "fresh", "skip_reason": "Dependency not found on PyPI and could not be audited: fresh (2.0)"},
            {"name": "stale", "skip_reason": "Dependency not found on PyPI and could not be audited: stale (1.0)"},
        ]}
        findings, checked, unchecked = pip_report(audit, fetch)
        self.assertEqual(checked, ["ok", "hit", "fresh"])
        self.assertEqual(len(findings), 2)
        self.assertTrue(findings[0].startswith("hit 1.0: GHSA-1"))
        self.assertTrue(findings[1].startswith("fresh 2.0: PYSEC-1"))
        self.assertEqual(len(unchecked), 1)
        self.assertTrue(unchecked[0].startswith("stale 1.0"))

    def test_pip_specs(self):
        specs = pip_specs(Path(__file__).resolve().parent.parent)
        self.assertIn("httpx>=0.24", specs)
        self.assertTrue(any(s.startswith("kubernetes-validate") for s in specs))


def cmd_self_test(args: list) -> int:
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=1 if "-q" in args else 2).run(suite)
    return 0 if result.wasSuccessful() else 1


def main(argv: list) -> int:
    cmds = {
        "rust": cmd_rust,
        "npm-report": cmd_npm_report,
        "pip-specs": cmd_pip_specs,
        "pip-pins": cmd_pip_pins,
        "pip-report": cmd_pip_report,
        "self-test": cmd_self_test,
    }
    if not argv or argv[0] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
