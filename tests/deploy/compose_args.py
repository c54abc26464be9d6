#!/usr/bin/python3
"""Prints a deploy/compose.yaml service as podman run arguments.

  compose_args.py COMPOSE_FILE SERVICE options   podman run options
  compose_args.py COMPOSE_FILE SERVICE command   the command after the image

Each argument is followed by a NUL (read with bash's mapfile -d '').
container_test.sh runs the compose wiring with these, so that what it tests
is compose.yaml's own settings. Understands the keys compose.yaml uses:
command, user, read_only, cap_drop, security_opt, init, healthcheck.test,
stop_signal; anything else under a service is refused, so that a new key
is not silently left out of the test.
"""

import json
import sys

import yaml

HANDLED = {"build", "image", "command", "ports", "init", "read_only", "user",
           "cap_drop", "security_opt", "stop_signal", "stop_grace_period",
           "healthcheck", "depends_on", "restart"}


def options(service):
    args = []
    if service.get("init"):
        args.append("--init")
    if service.get("read_only"):
        args.append("--read-only")
    if "user" in service:
        args += ["--user", str(service["user"])]
    for capability in service.get("cap_drop", []):
        args += ["--cap-drop", capability]
    for option in service.get("security_opt", []):
        args += ["--security-opt", option]
    if "stop_signal" in service:
        args += ["--stop-signal", service["stop_signal"]]
    if "healthcheck" in service:
        args += ["--health-cmd", health_cmd(service["healthcheck"]["test"]),
                 "--health-interval=disable"]
    return args


def health_cmd(test):
    """Returns compose's healthcheck test as podman 4.3's --health-cmd.

    podman 4.3 takes no JSON array there: it splits "CMD ARG..." on spaces
    (exec form) and runs anything else with sh -c.
    """
    if test[0] == "CMD-SHELL":
        return test[1]
    if test[0] != "CMD" or any(not arg or " " in arg for arg in test):
        sys.exit("compose_args.py: cannot pass healthcheck %s to podman" %
                 json.dumps(test))
    return " ".join(test)


def main():
    path, name, what = sys.argv[1:4]
    with open(path) as f:
        service = yaml.safe_load(f)["services"][name]
    unknown = set(service) - HANDLED
    if unknown:
        sys.exit("compose_args.py: %s: keys not handled: %s" %
                 (name, ", ".join(sorted(unknown))))
    args = options(service) if what == "options" else service.get("command", [])
    sys.stdout.write("".join(str(arg) + "\0" for arg in args))


if __name__ == "__main__":
    main()
