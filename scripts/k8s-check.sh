#!/usr/bin/env bash
# Checks deploy/k8s/ offline:
#   1. every resource against the Kubernetes API's schemas, strictly (unknown fields are
#      errors), with kubernetes-validate (PyPI; it carries the schemas, so no network is
#      needed; installed when missing);
#   2. that the validator does catch a broken manifest (a copy with a misspelt field and a
#      port given as a word must fail), so a green run means something;
#   3. pathd's own rules: every PATHD_* variable the manifests set is a flag of
#      `pathd serve` (src/config/flags/), and terminationGracePeriodSeconds outlasts the
#      drain delay, the drain bound and the 2 s NATS leave, while readiness turns false
#      within the drain delay.
#   scripts/k8s-check.sh                       # the default Kubernetes version
#   K8S_VERSION=1.33.0 scripts/k8s-check.sh    # another one the validator carries
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -c 'import kubernetes_validate' >/dev/null 2>&1; then
    echo "installing kubernetes-validate from PyPI" >&2
    python3 -m pip install --quiet 'kubernetes-validate>=1.31'
fi
args=(--strict)
if [ -n "${K8S_VERSION:-}" ]; then args+=(--kubernetes-version "$K8S_VERSION"); fi

# 1. The manifests.
python3 -m kubernetes_validate "${args[@]}" --quiet deploy/k8s/*.yaml

# 2. A broken copy must fail.
broken="$(mktemp --suffix=.yaml)"
trap 'rm -f "$broken"' EXIT
sed -e 's/terminationGracePeriodSeconds:/terminationGracePeriod:/' \
    -e 's/containerPort: 8080/containerPort: http-port/' deploy/k8s/pathd.yaml >"$broken"
if python3 -m kubernetes_validate "${args[@]}" --quiet "$broken" >/dev/null 2>&1; then
    echo "k8s-check: the validator passed a broken manifest ($broken)" >&2
    exit 1
fi

# 3. pathd's rules.
python3 - deploy/k8s/*.yaml <<'PY'
import re
import sys

import yaml

import glob

# The flag table of `pathd serve`, in one file or split by concern under src/config/flags/.
sources = glob.glob("src/config/flags.rs") + glob.glob("src/config/flags/*.rs")
flags = {f for s in sources for f in re.findall(r'env: "(PATHD_[A-Z0-9_]+)"', open(s).read())}
assert flags, f"no flags found in {sources}"
problems = []
docs = [d for path in sys.argv[1:] for d in yaml.safe_load_all(open(path)) if d]
config = {}
for d in docs:
    if d["kind"] == "ConfigMap":
        config.update({k: v for k, v in d["data"].items() if k.startswith("PATHD_")})
for key in config:
    if key not in flags:
        problems.append(f"ConfigMap key {key} is no flag of `pathd serve`")
for d in docs:
    if d["kind"] != "Deployment" or d["metadata"]["name"] != "pathd":
        continue
    spec = d["spec"]["template"]["spec"]
    (c,) = [c for c in spec["containers"] if c["name"] == "pathd"]
    env = dict(config)
    for e in c.get("env", []):
        if e["name"].startswith("PATHD_"):
            if e["name"] not in flags:
                problems.append(f"env {e['name']} is no flag of `pathd serve`")
            env[e["name"]] = e.get("value")
    # The defaults of src/config/flags/ when the manifests leave them out.
    delay = int(env.get("PATHD_DRAIN_DELAY_MS", 0)) / 1000
    grace = int(env.get("PATHD_SHUTDOWN_GRACE_MS", 10000)) / 1000
    needed = delay + grace + 2
    given = spec.get("terminationGracePeriodSeconds", 30)
    if given <= needed:
        problems.append(
            f"terminationGracePeriodSeconds {given} does not outlast the drain delay "
            f"{delay} s + drain bound {grace} s + NATS leave 2 s"
        )
    r = c["readinessProbe"]
    noticed = r.get("periodSeconds", 10) * r.get("failureThreshold", 3)
    if noticed > delay:
        problems.append(
            f"readiness notices a stop after up to {noticed} s, longer than the drain "
            f"delay {delay} s: requests would still come after accepting stops"
        )
    for probe, path in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"),
                        ("startupProbe", "/healthz")]:
        got = c.get(probe, {}).get("httpGet", {}).get("path")
        if got != path:
            problems.append(f"{probe} asks {got}, not {path}")
for d in docs:
    if d["kind"] == "Service" and d["spec"].get("sessionAffinity", "None") != "None":
        problems.append(f"Service {d['metadata']['name']} has session affinity")
if problems:
    print("k8s-check:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
PY
echo "k8s-check: deploy/k8s/*.yaml valid (strict schemas, offline) and consistent with pathd's flags"
