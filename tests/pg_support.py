"""A real PostgreSQL server for the tests: Debian's `postgresql` package, initdb'd into a temporary
folder and started with pg_ctl on 127.0.0.1 (a free port, its unix socket in the same folder), once
per session. Missing binaries skip the tests that need it, with the reason; with `CI` set they fail.

initdb refuses to run as root, and CI runs as root: then the cluster belongs to the `postgres`
user the Debian package creates, and initdb/pg_ctl run as that user through `runuser`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "agentevals"
NO_POSTGRES = (
    "no PostgreSQL server binaries (initdb, pg_ctl) on this machine: the PostgreSQL tests need Debian's "
    "postgresql package (apt-get install -y postgresql; .ci/run installs it when it is missing) and "
    "psycopg (pip install -e '.[test]')"
)


def _bindir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def unavailable() -> str | None:
    """Why no server can be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return NO_POSTGRES
    if _bindir() is None:
        return NO_POSTGRES
    if os.geteuid() == 0 and (shutil.which("runuser") is None or not _user_exists("postgres")):
        return (
            "running as root, and initdb refuses root: the postgres user (from Debian's package) is missing"
        )
    return None


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    """A running server: `url(db)` connects as the password user over TCP."""

    folder: Path
    port: int
    password: str
    bindir: Path
    as_user: list[str]
    durable: bool = False
    _counter: int = 0

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{USER}:{secret}@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        self._counter += 1
        name = f"{prefix}_{os.getpid()}_{self._counter}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def _ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder}"
        if not self.durable:
            options += " -c fsync=off"  # the tests' server: nothing in it must outlive a crash
        done = self._ctl("-w", "-l", str(self.folder / "log"), "-o", options, "start")
        if done.returncode != 0:
            log = (self.folder / "log").read_text(errors="replace") if (self.folder / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}{log}")

    def stop(self) -> None:
        self._ctl("-w", "-m", "fast", "stop")


def start_server(*, durable: bool = False) -> PgServer:
    """initdb and start a server; `durable` keeps PostgreSQL's fsync on (the benchmarks' figures)."""
    bindir = _bindir()
    assert bindir is not None
    root = os.geteuid() == 0
    # Under root, the folder must be reachable by the postgres user: not below pytest's 0700 tree.
    folder = Path(tempfile.mkdtemp(prefix="agentevals-pg-", dir="/tmp" if root else None))
    password = secrets.token_hex(8)
    as_user = ["runuser", "-u", "postgres", "--"] if root else []
    pwfile = folder / "pw"
    pwfile.write_text(password + "\n")
    if root:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(pwfile, "postgres", "postgres")
    done = subprocess.run(
        [
            *as_user,
            str(bindir / "initdb"),
            "-D",
            str(folder / "data"),
            "-U",
            USER,
            "--pwfile",
            str(pwfile),
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")
    server = PgServer(folder, _free_port(), password, bindir, as_user, durable)
    server.start()
    return server


def server_session() -> Iterator[PgServer]:
    """The body of the session fixture: skip (fail under CI) when absent, stop at the end."""
    why = unavailable()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


class FakeServer:
    """A TCP server on 127.0.0.1 that plays a PostgreSQL server gone bad, for the timeout tests:
    `login=False` accepts connections and never says a word; `login=True` completes the login (no
    password asked, a PostgreSQL 15 banner) and then never answers a query. Each connection is held
    open until the server is closed."""

    def __init__(self, *, login: bool) -> None:
        import threading

        self.login = login
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._held: list[socket.socket] = []
        self.logins = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, password: str = "pw") -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/evals"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            self._held.append(conn)
            if self.login:
                with contextlib.suppress(OSError):
                    self._log_in(conn)

    def _log_in(self, conn: socket.socket) -> None:
        import struct

        def read(count: int) -> bytes:
            data = b""
            while len(data) < count:
                chunk = conn.recv(count - len(data))
                if not chunk:
                    raise OSError("client left")
                data += chunk
            return data

        while True:  # SSLRequest / GSSENCRequest are refused with 'N'; then the startup message
            (length,) = struct.unpack("!i", read(4))
            (code,) = struct.unpack("!i", read(4))
            read(length - 8)
            if code in (80877103, 80877104):
                conn.sendall(b"N")
                continue
            break

        def message(kind: bytes, body: bytes) -> bytes:
            return kind + struct.pack("!i", len(body) + 4) + body

        banner = [
            message(b"R", struct.pack("!i", 0)),  # AuthenticationOk
            *(
                message(b"S", name + b"\0" + value + b"\0")
                for name, value in (
                    (b"server_version", b"15.0"),
                    (b"client_encoding", b"UTF8"),
                    (b"standard_conforming_strings", b"on"),
                    (b"integer_datetimes", b"on"),
                )
            ),
            message(b"K", struct.pack("!ii", 4242, 1)),
            message(b"Z", b"I"),  # ReadyForQuery; what comes next is never answered
        ]
        conn.sendall(b"".join(banner))
        self.logins += 1

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accept() (closing alone may not)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in self._held:
            conn.close()
