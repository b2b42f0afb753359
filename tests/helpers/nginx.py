"""A real Debian nginx for a test: its own prefix and configuration in a folder the test
owns, listening on 127.0.0.1 only, in the foreground (`daemon off`), so that it is the
test's child and stops when the test does (and with the test's process, however that
ends: the kernel sends it SIGTERM when its parent dies)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import pytest

PR_SET_PDEATHSIG = 1


def binary() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")


def require_nginx() -> str:
    """nginx's path; skip, saying why, when it is missing; under CI, fail."""
    found = binary()
    if found is None:
        reason = "nginx is not installed (apt-get install nginx)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the nginx tests: {reason}")
        pytest.skip(reason)
    return found


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Nginx:
    """nginx serving `http_block` (the inside of `http { }`) from `folder`."""

    def __init__(self, folder: Path, http_block: str, port: int) -> None:
        self.folder = folder
        self.port = port
        for sub in ("logs", "temp"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        user = "user root root;\n" if os.geteuid() == 0 else ""  # workers otherwise run as nobody
        temp = folder / "temp"
        conf = (
            f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'logs' / 'error.log'} info;\nevents {{ worker_connections 256; }}\n"
            "http {\n"
            f"  access_log {folder / 'logs' / 'access.log'};\n"
            f"  client_body_temp_path {temp / 'body'};\n  proxy_temp_path {temp / 'proxy'};\n"
            f"  fastcgi_temp_path {temp / 'fastcgi'};\n  uwsgi_temp_path {temp / 'uwsgi'};\n"
            f"  scgi_temp_path {temp / 'scgi'};\n"
            f"{http_block}\n}}\n"
        )
        self.conf = folder / "nginx.conf"
        self.conf.write_text(conf, "utf-8")
        program = require_nginx()
        checked = subprocess.run(
            [
                program,
                "-t",
                "-p",
                str(folder),
                "-c",
                str(self.conf),
                "-e",
                str(folder / "logs" / "error.log"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert checked.returncode == 0, f"nginx refuses the configuration:\n{checked.stderr}\n{conf}"
        self.proc = subprocess.Popen(
            [program, "-p", str(folder), "-c", str(self.conf), "-e", str(folder / "logs" / "error.log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(folder / "logs" / "stderr.log").open("wb"),
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return
            time.sleep(0.05)
        self.close()
        raise AssertionError(f"nginx did not come up on port {port}:\n{self.errors}")

    @property
    def errors(self) -> str:
        log = self.folder / "logs" / "error.log"
        return log.read_text("utf-8", "replace") if log.exists() else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # a fast shutdown: the master stops its worker
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> Nginx:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
