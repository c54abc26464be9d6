#!/usr/bin/python3
"""Checks the wiring of deploy/'s manifests without a cluster.

Parses every YAML document of deploy/k8s/ and deploy/compose.yaml (PyYAML,
Debian's python3-yaml) and deploy/Dockerfile, and checks what a typo would
break only once deployed: probe ports are container ports, Service
targetPorts name container ports, selectors select the pods, every flag in
args or a compose command is a flag `memplan-server --helpfull` lists, every
$(VAR) in args is a key of the ConfigMap the container takes, the Redis
address names the Redis Service and port, 2+ replicas, resources, a
non-root read-only securityContext matching the image's user, the HPA and
PDB target the Deployment. With a `kubectl` on PATH, `kubectl kustomize`
must render deploy/k8s/ too (Debian 12 packages no kubeconform, and its
kubectl, 1.20, predates gRPC probes and needs a server for dry runs).

  manifests_test.py --root=SOURCE_DIR --server_binary=PATH [unittest args]
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

ARGS = None  # set in main()

GRPC_PORT = 50051
METRICS_PORT = 9090
IMAGE_UID = 10001
SELECTOR_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/component")


def server_flags():
    """Returns the names of the flags `memplan-server --helpfull` lists."""
    run = subprocess.run([ARGS.server_binary, "--helpfull"],
                         capture_output=True, text=True, timeout=30)
    flags = set(re.findall(r"^\s+--([A-Za-z0-9_]+) \(", run.stdout, re.M))
    if "listen" not in flags:
        raise AssertionError("no --listen in memplan-server --helpfull:\n" +
                             run.stdout + run.stderr)
    return flags


def flag_names(args):
    """Returns the NAME of each --NAME[=VALUE] in `args`."""
    return [re.match(r"--([^=]+)", arg).group(1) for arg in args
            if arg.startswith("--")]


def parse_duration_seconds(text):
    """Parses an Abseil duration such as "10s", "500ms", "1m30s"."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("not a duration: " + text)
    return sum(float(n) * units[u] for n, u in parts)


def load_k8s():
    """Returns {(kind, name): document} of every document in deploy/k8s/."""
    objects = {}
    for path in sorted(glob.glob(os.path.join(ARGS.root, "deploy/k8s/*.yaml"))):
        with open(path) as f:
            for document in yaml.safe_load_all(f):
                if document is None:
                    continue
                key = (document["kind"], document["metadata"]["name"]
                       if "metadata" in document else os.path.basename(path))
                if key in objects:
                    raise AssertionError("%s defined twice" % (key,))
                objects[key] = document
    return objects


class KubernetesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.objects = load_k8s()
        cls.flags = server_flags()

    def get(self, kind, name):
        self.assertIn((kind, name), self.objects,
                      "deploy/k8s/ has no %s %s" % (kind, name))
        return self.objects[(kind, name)]

    def container(self, deployment, name):
        containers = deployment["spec"]["template"]["spec"]["containers"]
        for container in containers:
            if container["name"] == name:
                return container
        self.fail("%s has no container %s" % (deployment["metadata"]["name"],
                                             name))

    def ports_by_name(self, container):
        return {p["name"]: p["containerPort"] for p in container["ports"]}

    def assert_selects(self, selector, deployment):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(selector, "empty selector")
        for key, value in selector.items():
            self.assertEqual(labels.get(key), value,
                             "selector %s does not select %s's pods" %
                             (selector, deployment["metadata"]["name"]))

    def test_every_object_parses_with_kind_and_api_version(self):
        self.assertGreaterEqual(len(self.objects), 8)
        for (kind, name), document in self.objects.items():
            self.assertIn("apiVersion", document, (kind, name))

    def test_deployment_replicas_strategy_and_selector(self):
        deployment = self.get("Deployment", "memplan")
        self.assertEqual(deployment["apiVersion"], "apps/v1")
        self.assertGreaterEqual(deployment["spec"]["replicas"], 2)
        self.assert_selects(deployment["spec"]["selector"]["matchLabels"],
                            deployment)
        rolling = deployment["spec"]["strategy"]["rollingUpdate"]
        self.assertEqual(rolling["maxUnavailable"], 0)

    def test_ports_and_grpc_probes(self):
        container = self.container(self.get("Deployment", "memplan"), "memplan")
        ports = self.ports_by_name(container)
        self.assertEqual(ports.get("grpc"), GRPC_PORT)
        self.assertEqual(ports.get("metrics"), METRICS_PORT)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            self.assertIn(probe, container)
            self.assertIn("grpc", container[probe],
                          probe + " is not a native gRPC probe")
            self.assertEqual(container[probe]["grpc"]["port"], ports["grpc"],
                             probe + " does not probe the gRPC port")
        # Readiness asks for the planner itself, a service the server
        # registers with the health service.
        self.assertEqual(
            container["readinessProbe"]["grpc"].get("service"),
            "memplan.v1.MemoryPlanner")

    def test_resources(self):
        units = {"m": 1e-3, "": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}

        def quantity(text):
            number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|)",
                                        str(text)).groups()
            return float(number) * units[unit]

        for name, container_name in (("memplan", "memplan"),
                                     ("memplan-redis", "redis")):
            container = self.container(self.get("Deployment", name),
                                       container_name)
            resources = container["resources"]
            for resource in ("cpu", "memory"):
                request = quantity(resources["requests"][resource])
                limit = quantity(resources["limits"][resource])
                self.assertGreater(request, 0, (name, resource))
                self.assertLessEqual(request, limit, (name, resource))

    def test_security_context(self):
        for name, container_name in (("memplan", "memplan"),
                                     ("memplan-redis", "redis")):
            deployment = self.get("Deployment", name)
            pod = deployment["spec"]["template"]["spec"]
            container = self.container(deployment, container_name)
            context = container["securityContext"]
            self.assertIs(pod["securityContext"]["runAsNonRoot"], True, name)
            self.assertIs(context["runAsNonRoot"], True, name)
            self.assertIs(context["readOnlyRootFilesystem"], True, name)
            self.assertIs(context["allowPrivilegeEscalation"], False, name)
            self.assertEqual(context["capabilities"]["drop"], ["ALL"], name)
            self.assertNotEqual(pod["securityContext"]["runAsUser"], 0, name)
        pod = self.get("Deployment", "memplan")["spec"]["template"]["spec"]
        container = self.container(self.get("Deployment", "memplan"), "memplan")
        # The image's USER (deploy/Dockerfile).
        self.assertEqual(pod["securityContext"]["runAsUser"], IMAGE_UID)
        self.assertEqual(container["securityContext"]["runAsUser"], IMAGE_UID)

    def test_args_are_server_flags_fed_by_the_config_map(self):
        deployment = self.get("Deployment", "memplan")
        container = self.container(deployment, "memplan")
        self.assertNotIn("command", container,
                         "command would replace the image's ENTRYPOINT "
                         "(--listen=0.0.0.0:50051)")
        for flag in flag_names(container["args"]):
            self.assertIn(flag, self.flags,
                          "--%s is not a memplan-server flag" % flag)
        names = [ref["configMapRef"]["name"] for ref in container["envFrom"]]
        keys = set()
        for name in names:
            keys |= set(self.get("ConfigMap", name)["data"])
        keys |= {env["name"] for env in container.get("env", [])}
        referenced = set()
        for arg in container["args"]:
            referenced |= set(re.findall(r"\$\(([A-Za-z0-9_]+)\)", arg))
        self.assertTrue(referenced)
        for variable in referenced:
            self.assertIn(variable, keys,
                          "$(%s) is in no ConfigMap of the container" %
                          variable)
        self.assertIn("--redis=$(MEMPLAN_REDIS)", container["args"])

    def test_config_map_values(self):
        data = self.get("ConfigMap", "memplan-config")["data"]
        for key in ("MEMPLAN_REDIS_TTL", "MEMPLAN_REDIS_TIMEOUT",
                    "MEMPLAN_SHUTDOWN_GRACE", "MEMPLAN_SHUTDOWN_LAME_DUCK"):
            parse_duration_seconds(data[key])
        self.assertGreater(int(data["MEMPLAN_CACHE_BYTES"]), 0)
        # The lame duck and the drain fit in the pod's grace period after
        # the preStop pause.
        pod = self.get("Deployment", "memplan")["spec"]["template"]["spec"]
        container = self.container(self.get("Deployment", "memplan"), "memplan")
        pause = float(container["lifecycle"]["preStop"]["exec"]["command"][1])
        self.assertLess(
            pause + parse_duration_seconds(data["MEMPLAN_SHUTDOWN_GRACE"]) +
            parse_duration_seconds(data["MEMPLAN_SHUTDOWN_LAME_DUCK"]),
            pod["terminationGracePeriodSeconds"])

    def test_redis_address_names_the_redis_service(self):
        host, port = self.get("ConfigMap", "memplan-config")["data"][
            "MEMPLAN_REDIS"].rsplit(":", 1)
        service = self.get("Service", host)
        redis = self.get("Deployment", "memplan-redis")
        self.assert_selects(service["spec"]["selector"], redis)
        by_port = {p["port"]: p for p in service["spec"]["ports"]}
        self.assertIn(int(port), by_port)
        target = by_port[int(port)]["targetPort"]
        self.assertIn(target,
                      self.ports_by_name(self.container(redis, "redis")))

    def test_services_target_named_container_ports(self):
        deployment = self.get("Deployment", "memplan")
        ports = self.ports_by_name(self.container(deployment, "memplan"))
        for name in ("memplan", "memplan-headless"):
            service = self.get("Service", name)
            self.assert_selects(service["spec"]["selector"], deployment)
            for port in service["spec"]["ports"]:
                self.assertIn(port["targetPort"], ports,
                              "%s targets no container port" % name)
                self.assertEqual(port["port"], ports[port["targetPort"]])
        exposed = {p["name"] for p in self.get("Service", "memplan")["spec"]["ports"]}
        self.assertEqual(exposed, {"grpc", "metrics"})
        self.assertEqual(self.get("Service", "memplan-headless")["spec"]["clusterIP"],
                         "None")

    def test_hpa_scales_the_deployment_on_cpu(self):
        hpa = self.get("HorizontalPodAutoscaler", "memplan")
        self.assertEqual(hpa["apiVersion"], "autoscaling/v2")
        target = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((target["apiVersion"], target["kind"], target["name"]),
                         ("apps/v1", "Deployment", "memplan"))
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 2)
        self.assertGreater(hpa["spec"]["maxReplicas"], hpa["spec"]["minReplicas"])
        resources = [m["resource"]["name"] for m in hpa["spec"]["metrics"]
                     if m["type"] == "Resource"]
        self.assertIn("cpu", resources)

    def test_pdb_keeps_one_pod(self):
        pdb = self.get("PodDisruptionBudget", "memplan")
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        deployment = self.get("Deployment", "memplan")
        self.assert_selects(pdb["spec"]["selector"]["matchLabels"], deployment)
        self.assertLess(pdb["spec"]["minAvailable"],
                        deployment["spec"]["replicas"])

    def test_kustomization_lists_every_file(self):
        kustomization = self.get("Kustomization", "kustomization.yaml")
        files = {os.path.basename(p) for p in
                 glob.glob(os.path.join(ARGS.root, "deploy/k8s/*.yaml"))}
        self.assertEqual(set(kustomization["resources"]),
                         files - {"kustomization.yaml"})

    @unittest.skipUnless(shutil.which("kubectl"), "no kubectl on PATH")
    def test_kubectl_kustomize_renders_every_object(self):
        run = subprocess.run(
            ["kubectl", "kustomize", os.path.join(ARGS.root, "deploy/k8s")],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        rendered = {(d["kind"], d["metadata"]["name"])
                    for d in yaml.safe_load_all(run.stdout) if d}
        self.assertEqual(rendered, {key for key in self.objects
                                    if key[0] != "Kustomization"})


class ComposeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ARGS.root, "deploy/compose.yaml")) as f:
            cls.compose = yaml.safe_load(f)
        cls.flags = server_flags()

    def test_memplan_builds_from_the_dockerfile(self):
        build = self.compose["services"]["memplan"]["build"]
        context = os.path.join(ARGS.root, "deploy", build["context"])
        self.assertTrue(os.path.isfile(os.path.join(context, build["dockerfile"])))
        self.assertIn("BASE", build["args"])

    def test_command_flags_and_redis_wiring(self):
        services = self.compose["services"]
        command = services["memplan"]["command"]
        for flag in flag_names(command):
            self.assertIn(flag, self.flags,
                          "--%s is not a memplan-server flag" % flag)
        redis = [arg.split("=", 1)[1] for arg in command
                 if arg.startswith("--redis=")]
        self.assertEqual(len(redis), 1)
        host, port = redis[0].rsplit(":", 1)
        self.assertIn(host, list(services), "--redis names no compose service")
        self.assertEqual(port, "6379")
        self.assertEqual(services["memplan"]["depends_on"][host]["condition"],
                         "service_healthy")
        grace = [arg.split("=", 1)[1] for arg in command
                 if arg.startswith(("--shutdown_grace=",
                                    "--shutdown_lame_duck="))]
        self.assertEqual(len(grace), 2)
        self.assertLess(sum(parse_duration_seconds(g) for g in grace),
                        parse_duration_seconds(
                            services["memplan"]["stop_grace_period"]))

    def test_ports_and_health_checks(self):
        services = self.compose["services"]
        container_ports = {int(p.rsplit(":", 1)[1])
                           for p in services["memplan"]["ports"]}
        self.assertEqual(container_ports, {GRPC_PORT, METRICS_PORT})
        test = services["memplan"]["healthcheck"]["test"]
        self.assertEqual(test[:3], ["CMD", "/usr/local/bin/memplan", "health"])
        self.assertIn("--server=127.0.0.1:%d" % GRPC_PORT, test)
        self.assertEqual(services["redis"]["healthcheck"]["test"],
                         ["CMD", "redis-cli", "ping"])
        self.assertEqual(services["memplan"]["user"], "%d:%d" % (IMAGE_UID,
                                                                 IMAGE_UID))
        self.assertIs(services["memplan"]["read_only"], True)


class DockerfileTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ARGS.root, "deploy/Dockerfile")) as f:
            # Instructions with their continuation lines joined.
            text = re.sub(r"\\\n", " ", f.read())
        cls.lines = [line.strip() for line in text.splitlines()
                     if line.strip() and not line.strip().startswith("#")]

    def instructions(self, name):
        return [line.split(None, 1)[1] for line in self.lines
                if line.split(None, 1)[0].upper() == name]

    def test_every_stage_starts_from_base(self):
        self.assertTrue(self.lines[0].startswith("ARG BASE=debian:bookworm"))
        stages = self.instructions("FROM")
        self.assertGreaterEqual(len(stages), 2)
        for stage in stages:
            self.assertEqual(stage.split()[0], "$BASE")

    def test_runtime_stage(self):
        self.assertIn("%d:%d" % (IMAGE_UID, IMAGE_UID), self.instructions("USER"))
        exposed = {int(p) for e in self.instructions("EXPOSE") for p in e.split()}
        self.assertEqual(exposed, {GRPC_PORT, METRICS_PORT})
        self.assertEqual(self.instructions("STOPSIGNAL"), ["SIGTERM"])
        (entrypoint,) = self.instructions("ENTRYPOINT")
        self.assertIn('"--listen=0.0.0.0:%d"' % GRPC_PORT, entrypoint)
        (healthcheck,) = self.instructions("HEALTHCHECK")
        self.assertIn('"/usr/local/bin/memplan", "health"', healthcheck)
        # Only the server and its health check are built, not the tests.
        (build,) = [r for r in self.instructions("RUN") if "cmake --build" in r]
        self.assertIn("--target memplan-server memplan ", build)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--server_binary", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
