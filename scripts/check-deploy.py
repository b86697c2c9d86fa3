#!/usr/bin/env python3
"""Checks the multi-instance deployment files without a cluster (docs/operating.md,
"Several instances"):

- the Helm chart deploy/helm/ferrophp: `helm lint --strict` and rendering with Helm's own
  engine (Helm SDK v4, through PyPI's helm-python-sdk, which wraps the Go library: no helm
  binary is packaged for Debian 12), with the default values and the variants below;
- deploy/kubernetes: rendered with `kubectl kustomize` when kubectl is installed, else
  its files as they are;
- every object of both against the Kubernetes OpenAPI schemas of the versions the chart
  supports (PyPI's kubernetes-validate, which bundles them; strict: unknown fields fail);
- that the chart, deploy/kubernetes and deploy/swarm/stack.yml agree where they must: the
  probes' paths, the drain (FERROPHP_GRACE_MS inside the stop grace period), the PHP
  threads' count per variant, and the same Redis session settings.

    python3 scripts/check-deploy.py          (pip install helm-python-sdk kubernetes-validate)

Prints one line per object checked and exits 1 on the first disagreement. What it cannot
check: that a cluster schedules, probes and scales these objects (none runs here).
"""
import os
import shutil
import subprocess
import sys

import helm_python as helm
import kubernetes_validate
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CHART = os.path.join(ROOT, "deploy/helm/ferrophp")
KUSTOMIZE = os.path.join(ROOT, "deploy/kubernetes")
STACK = os.path.join(ROOT, "deploy/swarm/stack.yml")
# The oldest and newest Kubernetes the chart's kubeVersion admits that the validator knows.
K8S_VERSIONS = ["1.25.0", "1.37.0"]

VARIANTS = {
    "defaults": {},
    "files sessions, fixed replicas": {
        "sessions": {"store": "files"},
        "autoscaling": {"enabled": False},
        "replicas": 2,
    },
    "external redis, persistence, no PDB": {
        "sessions": {"redisUrl": "tcp://redis.shared:6379"},
        "redis": {"persistence": {"enabled": True}},
        "podDisruptionBudget": {"enabled": False},
        "env": {"APP_ENV": "prod"},
    },
    "own redis with persistence": {"redis": {"persistence": {"enabled": True}}},
}

failures = []


def fail(what):
    print(f"FAIL {what}")
    failures.append(what)


def validate(source, objects):
    for obj in objects:
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        for version in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                fail(f"{source}: {name} against Kubernetes {version}: {e.message} at {list(e.path)}")
                break
            except kubernetes_validate.SchemaNotFoundError as e:
                fail(f"{source}: {name}: no schema ({e})")
                break
        else:
            print(f"ok   {source}: {name} (Kubernetes {', '.join(K8S_VERSIONS)}, strict)")


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def container(objects, deployment):
    for obj in objects:
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == deployment:
            return obj["spec"]["template"]["spec"], obj["spec"]["template"]["spec"]["containers"][0]
    raise KeyError(deployment)


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def session_settings(ini):
    """The -d pairs of FERROPHP_INI that concern sessions, the Redis host left out."""
    out = {}
    for pair in ini.split():
        key, _, value = pair.partition("=")
        if key.startswith(("session.", "redis.session.")) or key == "extension":
            if key == "session.save_path":
                value = value.split("?", 1)[1] if "?" in value else ""
            out.setdefault(key, []).append(value)
    return out


def check_k8s_pod(source, pod, c, threads=None):
    probes = {
        "readiness": c.get("readinessProbe", {}).get("httpGet", {}).get("path"),
        "liveness": c.get("livenessProbe", {}).get("httpGet", {}).get("path"),
        "startup": c.get("startupProbe", {}).get("httpGet", {}).get("path"),
    }
    if probes != {"readiness": "/readyz", "liveness": "/healthz", "startup": "/readyz"}:
        fail(f"{source}: probes {probes}")
    env = env_of(c)
    grace_ms = int(env["FERROPHP_GRACE_MS"])
    pre_stop = int(c["lifecycle"]["preStop"]["exec"]["command"][1])
    if pre_stop + grace_ms / 1000 >= pod["terminationGracePeriodSeconds"]:
        fail(f"{source}: preStop {pre_stop} s + drain {grace_ms} ms do not end before "
             f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']}")
    if threads is not None and env["FERROPHP_THREADS"] != str(threads):
        fail(f"{source}: FERROPHP_THREADS {env['FERROPHP_THREADS']}, expected {threads}")
    instance = next(e for e in c["env"] if e["name"] == "FERROPHP_INSTANCE")
    if instance.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
        fail(f"{source}: FERROPHP_INSTANCE is not the pod's name")
    return env


def main():
    lint = helm.lint(CHART, strict=True)
    for m in lint["messages"]:
        # severity 1 is INFO ("icon is recommended"); 2 warning, 4 error
        print(f"lint {m['path']}: {m['error']} (severity {m['severity']})")
        if m["severity"] > 1:
            fail(f"helm lint: {m['path']}: {m['error']}")
    for e in lint.get("errors") or []:
        fail(f"helm lint: {e}")

    with open(STACK) as f:
        stack = yaml.safe_load(f)
    app = stack["services"]["app"]
    swarm_sessions = session_settings(app["environment"]["FERROPHP_INI"])
    swarm_grace_ms = int(app["environment"]["FERROPHP_GRACE_MS"])
    stop_grace = int(app["stop_grace_period"].rstrip("s"))
    if swarm_grace_ms / 1000 >= stop_grace:
        fail(f"stack.yml: drain {swarm_grace_ms} ms does not end before stop_grace_period {stop_grace} s")
    if "/readyz" not in " ".join(app["healthcheck"]["test"]):
        fail("stack.yml: the health check is not /readyz")
    update = app["deploy"]["update_config"]
    if (update["order"], update["parallelism"], update["failure_action"]) != ("start-first", 1, "rollback"):
        fail(f"stack.yml: update_config {update}")

    with helm.Chart.load(CHART) as chart:
        for variant, values in VARIANTS.items():
            rendered = chart.render(values, name="shop", namespace="prod")
            objects = []
            for path, text in sorted(rendered.items()):
                if path.endswith(".yaml"):
                    objects += docs(text)
            source = f"helm ({variant})"
            validate(source, objects)
            merged = chart.merge_values(values)
            pod, c = container(objects, "shop-ferrophp")
            env = check_k8s_pod(source, pod, c, merged["threads"])
            sessions = session_settings(env["FERROPHP_INI"])
            if merged["sessions"]["store"] == "redis":
                if sessions != swarm_sessions:
                    fail(f"{source}: session settings {sessions} differ from stack.yml's {swarm_sessions}")
                want = merged["sessions"]["redisUrl"] or "tcp://shop-ferrophp-redis:6379"
                if f'session.save_path="{want}?' not in env["FERROPHP_INI"]:
                    fail(f"{source}: save_path is not {want}: {env['FERROPHP_INI']}")
                has_redis = any(o["metadata"]["name"] == "shop-ferrophp-redis" for o in objects)
                if has_redis == bool(merged["sessions"]["redisUrl"]):
                    fail(f"{source}: the chart's own Redis is {'there' if has_redis else 'missing'}")
            elif "session.save_handler" in sessions:
                fail(f"{source}: files sessions with a save handler: {sessions}")
            kinds = sorted(o["kind"] for o in objects)
            print(f"     {source}: {', '.join(kinds)}")

    if shutil.which("kubectl"):
        text = subprocess.run(["kubectl", "kustomize", KUSTOMIZE], check=True,
                              capture_output=True, text=True).stdout
        source = "deploy/kubernetes (kubectl kustomize)"
    else:
        names = ["deployment.yaml", "service.yaml", "hpa.yaml", "pdb.yaml", "redis.yaml"]
        text = "\n---\n".join(open(os.path.join(KUSTOMIZE, n)).read() for n in names)
        source = "deploy/kubernetes"
    objects = docs(text)
    validate(source, objects)
    pod, c = container(objects, "ferrophp")
    env = check_k8s_pod(source, pod, c)
    sessions = session_settings(env["FERROPHP_INI"])
    if sessions != swarm_sessions:
        fail(f"{source}: session settings {sessions} differ from stack.yml's {swarm_sessions}")

    if failures:
        print(f"{len(failures)} problem(s)")
        sys.exit(1)
    print("deploy files: all checks passed")


if __name__ == "__main__":
    main()
