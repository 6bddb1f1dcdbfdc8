"""The Ray executor against a local Ray head that this module starts, bound to the loopback interface only.

The head runs in its own session under a small supervisor that stops every process of that
session (the head's daemons and its workers, nobody else's: not ``ray stop``, which would stop
every Ray on the machine) and removes Ray's temporary folder when the test closes its stdin,
or when the test process dies. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps Ray from
swapping 127.0.0.1 for the machine's network address, for the head and for every driver.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from engine.jobs import JobCancelled, ThreadJobContext
from engine.training.executors import TaskFailed, get_executor

needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the supervisor reads /proc (Linux)")
# signal method: on a timeout the fixtures' teardown still runs and stops the cluster
pytestmark = pytest.mark.timeout(300, method="signal")

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}

# Arguments: Ray's temporary folder, then the `ray start` command. Runs the command, says "ready",
# waits for its stdin to close, then stops every process of its own session (TERM, then KILL),
# which is where ray start's daemons and their workers live, and removes the folder.
SUPERVISOR = r"""
import os, shutil, signal, subprocess, sys, time
rc = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=sys.stderr)
print(f"ready {rc}", flush=True)
sys.stdin.read()
sid, me = os.getsid(0), os.getpid()
def members():
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids
for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
    for pid in members():
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while members() and time.monotonic() < deadline:
        time.sleep(0.1)
shutil.rmtree(sys.argv[1], ignore_errors=True)
print("stopped" if not members() else f"left {members()}", flush=True)
"""


def _free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRayHead:
    """``ray start --head`` on 127.0.0.1 with 2 CPUs, in its own session; ``stop()`` ends it all."""

    def __init__(self):
        self.port = _free_loopback_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp_dir = tempfile.mkdtemp(prefix="lsray-")  # short: Ray's socket paths must stay < 108 chars
        self.env = {**os.environ, **RAY_ENV}
        self.env.pop("RAY_ADDRESS", None)
        ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
        cmd = [ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={self.port}",
               "--num-cpus=2",
               "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={self.temp_dir}",
               "--object-store-memory=100000000"]
        self.proc = subprocess.Popen([sys.executable, "-c", SUPERVISOR, self.temp_dir, *cmd], env=self.env,
                                     text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready 0":
            self.stop()
            pytest.fail(f"`ray start --head` failed ({line!r}); its output is above")

    def session_pids(self) -> list[int]:
        """The head's processes and its workers: everything in the supervisor's session."""
        pids = []
        for d in os.listdir("/proc"):
            try:
                if d.isdigit() and os.getsid(int(d)) == self.proc.pid:
                    pids.append(int(d))
            except OSError:
                pass
        return pids

    def stop(self) -> str:
        try:
            self.proc.stdin.close()
            out = self.proc.stdout.read()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            out = "killed the supervisor"
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return out.strip()


@pytest.fixture(scope="module")
def head():
    if not sys.platform.startswith("linux"):
        pytest.skip("the supervisor reads /proc (Linux)")
    h = LocalRayHead()
    try:
        yield h
    finally:
        assert h.stop() == "stopped"


@pytest.fixture
def ray_module(head, monkeypatch):
    """ray, imported in this process so that it resolves 127.0.0.1 to itself; disconnected after the test."""
    for k, v in RAY_ENV.items():
        monkeypatch.setenv(k, v)
    import ray
    from ray._private import ray_constants

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # in case ray was imported earlier
    try:
        yield ray
    finally:
        ray.shutdown()


def _socket_inodes(pids) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            pass
    return inodes


def _decode_address(hex_addr: str):
    raw = bytes.fromhex(hex_addr)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # /proc/net: 32-bit words, host order
    ip = ipaddress.ip_address(raw)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _listening(pids) -> list[tuple[str, str, int]]:
    """(protocol, address, port) of every TCP listener and bound UDP socket that ``pids`` hold."""
    inodes = _socket_inodes(pids)
    found = []
    for proto, listen_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            with open(f"/proc/net/{proto}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == listen_state and f[9] in inodes:
                addr, port = f[1].split(":")
                found.append((proto, str(_decode_address(addr)), int(port, 16)))
    return found


def test_missing_ray_names_the_cluster_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"'cluster' extra"):
        get_executor("ray", address="127.0.0.1:1")


@needs_proc
def test_results_errors_and_connection(head, ray_module):
    ray = ray_module
    executor = get_executor("ray", address=head.address)
    got = {}
    executor.run(math.factorial, [3, 4, 5], got.__setitem__)
    assert got == {0: 6, 1: 24, 2: 120}
    assert not ray.is_initialized()  # it connected for this run, so it disconnected after it

    with pytest.raises(TaskFailed, match=r"task 1 \(-1\.0\) failed: ValueError: math domain error") as info:
        executor.run(math.sqrt, [4.0, -1.0], lambda i, r: None)
    assert info.value.index == 1 and info.value.task == -1.0

    port = _free_loopback_port()  # nothing listens there
    with pytest.raises(ConnectionError, match=f"no Ray cluster answers at 127.0.0.1:{port}"):
        get_executor("ray", address=f"127.0.0.1:{port}").run(abs, [1], lambda i, r: None)


@needs_proc
def test_cancel_stops_running_and_queued_tasks_and_binds_loopback_only(head, ray_module):
    ray = ray_module
    ray.init(address=head.address, log_to_driver=False)  # kept: the executor uses this connection
    seen = {}

    class CancelOnceBusy(ThreadJobContext):
        """Cancels once both CPUs run a task (the other tasks wait in the queue)."""

        def check_cancelled(self):
            if not self.cancelled and ray.available_resources().get("CPU", 0) == 0:
                seen["listening"] = _listening(head.session_pids() + [os.getpid()])
                seen["cancelled_at"] = time.monotonic()
                self.cancel()
            super().check_cancelled()

    done = []
    with pytest.raises(JobCancelled):
        get_executor("ray", address=head.address).run(time.sleep, [120.0] * 5, lambda i, r: done.append(i),
                                                      CancelOnceBusy())
    returned = time.monotonic() - seen["cancelled_at"]
    assert done == [] and ray.is_initialized()
    assert returned < 5.0, returned  # checked every 100 ms: nothing waits for the 120 s tasks

    # every task is gone: both CPUs are free long before any sleep could have ended
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2

    listening = seen["listening"]
    ports = {port for _, _, port in listening}
    assert head.port in ports, listening  # the GCS is among the sockets seen
    assert all(ipaddress.ip_address(addr).is_loopback for _, addr, _ in listening), listening


def _sweep(*extra, env=None):
    cmd = [sys.executable, "-m", "engine", "learn", "sweep", "--system", "pendulum",
           "--models", "node-midpoint,symo", "--trajectories", "2", "--seeds", "0,1", "--epochs", "3",
           *extra, "--json"]
    run = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout)


@needs_proc
def test_cli_sweep_on_ray_matches_local_processes(head, tmp_path):
    data = tmp_path / "d.npz"
    env = {**head.env, "OMP_NUM_THREADS": "1"}
    gen = subprocess.run([sys.executable, "-m", "engine", "learn", "data", "--system", "pendulum",
                          "--trajectories", "2", "--test-trajectories", "2", "--long-term-steps", "10",
                          "--out", str(data), "--json"],
                         check=False, env=env, capture_output=True, text=True, timeout=120)
    assert gen.returncode == 0, gen.stderr[-4000:]
    common = ("--data", str(data))
    on_ray = _sweep(*common, "--executor", "ray", "--address", head.address, "--out", str(tmp_path / "ray"),
                    env=env)
    local = _sweep(*common, "--executor", "local", "--workers", "2", "--out", str(tmp_path / "local"),
                   env=env)

    assert [(r["model"], r["seed"]) for r in on_ray] == [("node-midpoint", 0), ("node-midpoint", 1),
                                                          ("symo", 0), ("symo", 1)]
    assert len(on_ray) == len(local)
    for a, b in zip(on_ray, local):
        assert {k: a[k] for k in ("model", "system", "trajectories", "seed")} == \
               {k: b[k] for k in ("model", "system", "trajectories", "seed")}
        assert "error" not in a and "error" not in b
        for k in ("train_mse", "test_mse", "integration_mse", "energy_mse", "inertia_mse"):
            if b[k] is None:
                assert a[k] is None, (a, b)
            else:
                assert math.isclose(a[k], b[k], rel_tol=1e-6, abs_tol=1e-12), (k, a, b)
    assert (tmp_path / "ray" / "runs" / "symo-N2-s1" / "model.json").exists()  # workers wrote the checkpoints
    assert (tmp_path / "ray" / "results.csv").exists()
