"""A memplan-server child process for the Python tests.

The binary is $MEMPLAN_SERVER_BINARY (ctest sets it to the built
memplan-server); the corpus directory is $MEMPLAN_CORPUS_DIR.
"""

import json
import os
import re
import signal
import socket
import subprocess
import threading

SERVER_BINARY = os.environ.get("MEMPLAN_SERVER_BINARY",
                               "build/server/memplan-server")
CORPUS_DIR = os.environ.get("MEMPLAN_CORPUS_DIR", "../shared/corpus/inductor")

_LISTENING = re.compile(r"memplan-server listening on (\S+)")


class ServerProcess:
    """Starts memplan-server on 127.0.0.1:`port` (0: a free port) and stops
    it with SIGTERM. `target` is its HOST:PORT once started."""

    def __init__(self, port=0, *extra_flags):
        self.port = port
        self.extra_flags = list(extra_flags)
        self.process = None
        self.target = None

    def start(self, timeout=20.0):
        self.process = subprocess.Popen(
            [SERVER_BINARY, f"--listen=127.0.0.1:{self.port}",
             *self.extra_flags],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        found = []

        def read_banner():
            for line in self.process.stderr:
                match = _LISTENING.search(line)
                if match:
                    found.append(match.group(1))
                    break
        reader = threading.Thread(target=read_banner, daemon=True)
        reader.start()
        reader.join(timeout)
        if not found:
            self.stop()
            raise RuntimeError(f"{SERVER_BINARY} did not start listening")
        self.target = found[0]
        # Keep draining stderr so that the server never blocks on it.
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self.process.stderr.close()
        self.process = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def closed_target():
    """HOST:PORT where nothing listens (a port that was free a moment ago)."""
    return f"127.0.0.1:{free_port()}"


def load_corpus(name):
    """The corpus file `name` (e.g. resnet18_infer.inference.intermediates)
    as a dict."""
    with open(os.path.join(CORPUS_DIR, name + ".json")) as f:
        return json.load(f)


def corpus_buffers(corpus):
    """A corpus file's buffers as PlanMemoryRequest.buffers dicts."""
    return [{
        "names": b["names"], "size_bytes": b["size"],
        "symbolic_size": b["symbolic_size"],
        "live_range": {"begin": b["begin"], "end": b["end"]},
        "is_output": b["is_output"], "device": b["device"],
        "dtype": b["dtype"],
    } for b in corpus["buffers"]]
