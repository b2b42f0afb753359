"""A throwaway PostgreSQL server for the tests and the benchmarks.

`find_binaries()` looks for Debian's `initdb` and `pg_ctl` (/usr/lib/postgresql/N/bin,
the newest first) or on PATH. `Cluster` runs `initdb` in a temporary folder and
`pg_ctl start` on 127.0.0.1 and a free port (its unix socket in the same folder),
with password authentication over TCP; `database()` makes a fresh database and
returns its URL. initdb refuses to run as root, so as root both run as the
`postgres` user (`runuser`), in a folder that user owns.

A cluster dies with the process that made it, however that process ends (`kill -9`
too): a watchdog in its own session holds the read end of a pipe only its maker
writes to, and when the pipe closes it stops the server and removes the folder. Its
folder names its maker (pid and start time), so that `reap_orphans()` removes the
clusters of makers that are gone and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PASSWORD = "handrail-test-secret"
USER = "handrail"
PREFIX = "handrail-pg-"
OWNER_FILE = "owner"  # "<pid> <start time>" of the process that made the cluster

# Runs as `python -c WATCHDOG pg_ctl-command... folder`, its stdin the read end of a pipe
# whose write end only the cluster's maker holds (pipes are not inherited by children).
WATCHDOG = """
import shutil, subprocess, sys
*stop, folder = sys.argv[1:]
sys.stdin.buffer.read()  # returns at end of file: the maker closed the pipe or died
subprocess.run(stop, capture_output=True, timeout=60, check=False)
shutil.rmtree(folder, ignore_errors=True)
"""


def find_binaries() -> tuple[Path, Path] | None:
    """(initdb, pg_ctl), or None."""

    def number(folder: Path) -> float:
        match = re.match(r"(\d+(?:\.\d+)?)", folder.parent.parent.name)
        return float(match.group(1)) if match else 0.0

    for initdb in sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=number, reverse=True):
        if (initdb.parent / "pg_ctl").exists():
            return initdb, initdb.parent / "pg_ctl"
    found, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    return (Path(found), Path(pg_ctl)) if found and pg_ctl else None


def _runuser() -> str | None:
    """runuser lives in /usr/sbin, which a root PATH may leave out."""
    return shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")


def unavailable() -> str | None:
    """Why no cluster can be started here, or None."""
    if find_binaries() is None:
        return "PostgreSQL's initdb and pg_ctl were not found (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run initdb as"
        if _runuser() is None:
            return "running as root and runuser is missing"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Cluster:
    def __init__(self, *, fsync: bool = True, max_connections: int = 200) -> None:
        binaries = find_binaries()
        if binaries is None:
            raise RuntimeError(unavailable() or "no PostgreSQL")
        self.initdb, self.pg_ctl = binaries
        self._lifeline = -1
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.data = self.folder / "data"
        (self.folder / OWNER_FILE).write_text(_identity(os.getpid()) or "", "ascii")
        self._as: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.folder, account.pw_uid, account.pw_gid)
            self._as = [_runuser() or "runuser", "-u", "postgres", "--"]
        self._watchdog = self._watch()
        self._count = 0
        self._lock = threading.Lock()
        self.started = False
        try:
            self._start(fsync, max_connections)
        except BaseException:
            self.stop()
            raise

    def _stop_command(self) -> list[str]:
        return [*self._as, str(self.pg_ctl), "-D", str(self.data), "-m", "immediate", "-w", "stop"]

    def _watch(self) -> subprocess.Popen[bytes]:
        """The watchdog that stops the server and removes the folder once this process is
        gone; in its own session, so that a Ctrl-C to the tests does not end it first."""
        read, write = os.pipe()
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-c", WATCHDOG, *self._stop_command(), str(self.folder)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(read)
        self._lifeline = write  # never written to: closed by `stop`, or by the kernel at exit
        return watchdog

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, cwd=self.folder, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def _start(self, fsync: bool, max_connections: int) -> None:
        pwfile = self.folder / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as:
            account = pwd.getpwnam("postgres")
            os.chown(pwfile, account.pw_uid, account.pw_gid)
        self._run(
            str(self.initdb),
            "-D", str(self.data),
            "-U", USER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        for _ in range(3):  # a free port can be taken between finding and binding it
            self.port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} "
                f"-c max_connections={max_connections} -c fsync={'on' if fsync else 'off'}"
            )
            try:
                self._run(str(self.pg_ctl), "-D", str(self.data), "-l", str(self.folder / "log"),
                          "-w", "-t", "60", "-o", options, "start")  # fmt: skip
            except RuntimeError:
                continue
            self.started = True
            return
        raise RuntimeError(f"pg_ctl start kept failing:\n{self.log}")

    @property
    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "log").read_text("utf-8", "replace")
        return ""

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def database(self, prefix: str = "t") -> str:
        """A new, empty database; its URL."""
        import psycopg

        with self._lock:
            self._count += 1
            name = f"{prefix}{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"'.encode())
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started:
                self._run(*self._stop_command()[len(self._as) :])
                self.started = False
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if self._lifeline >= 0:
                os.close(self._lifeline)
                self._lifeline = -1
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._watchdog.wait(timeout=60)


def _identity(pid: int) -> str | None:
    """ "<pid> <start time>" of a live process (the start time tells a reused pid apart), or
    None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii")
    except OSError:
        return None
    started = stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name
    return f"{pid} {started}"


def reap_orphans(folder: Path | None = None) -> list[Path]:
    """Stop and remove the clusters in `folder` (default: the temporary folder) whose maker
    is provably gone: its owner file names a pid that is no longer that process. A cluster
    without an owner file, or whose maker lives, is left alone. Returns those removed."""
    removed = []
    binaries = find_binaries()
    for cluster in Path(folder or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            owner = (cluster / OWNER_FILE).read_text("ascii").split()
        except OSError:
            continue
        if len(owner) != 2 or not owner[0].isdigit() or _identity(int(owner[0])) == " ".join(owner):
            continue
        if binaries is not None and (cluster / "data" / "postmaster.pid").exists():
            as_user = [_runuser() or "runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
            stop = [*as_user, str(binaries[1]), "-D", str(cluster / "data"), "-m", "immediate", "-w", "stop"]
            subprocess.run(stop, capture_output=True, timeout=60, check=False)
        shutil.rmtree(cluster, ignore_errors=True)
        removed.append(cluster)
    return removed
