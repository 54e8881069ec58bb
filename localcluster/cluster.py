"""`LocalCluster`: a real control plane (etcd, kube-apiserver, controller manager, scheduler, kwok).

`up()` generates the PKI, starts every component on free loopback ports with its data and logs
under the cluster directory, waits until each is ready, writes `DIR/kubeconfig`, installs
karpy's CRDs and records pids and ports in `DIR/state.json`. `down()` stops exactly the recorded
processes (by pid, whole process group), from this or any other process. `restart(name)` stops
one component and starts it again with the same command line (same ports, same data), as an
operator restarting a control-plane process would.
Neighbours: `components.py` (argv), `procs.py` (processes), `manifests.py` (CRDs, webhooks).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from localcluster import components, manifests, pki, probes, procs
from localcluster.binaries import ensure_binaries
from localcluster.state import ClusterState, load, remove, save

_SHM = Path("/dev/shm")


class ClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class ClusterStatus:
    running: bool
    ready: bool
    components: dict[str, bool] = field(default_factory=dict)
    kubeconfig: str = ""
    server: str = ""


def _unique_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = procs.free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _sweep_orphaned_etcd_data(min_age_seconds: float = 120.0) -> None:
    """Remove `/dev/shm/karpy-etcd-*` left by runs that were killed (no process uses them)."""
    in_use = b""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            in_use += cmdline.read_bytes()
    for data in _SHM.glob("karpy-etcd-*"):
        with contextlib.suppress(OSError):
            if time.time() - data.stat().st_mtime > min_age_seconds and str(data).encode() not in in_use:
                shutil.rmtree(data, ignore_errors=True)


def _etcd_data_dir(directory: Path) -> Path:
    """etcd on tmpfs when available: fsync-free storage is what makes the apiserver quick."""
    if _SHM.is_dir() and os.access(_SHM, os.W_OK):
        _sweep_orphaned_etcd_data()
        return Path(tempfile.mkdtemp(prefix="karpy-etcd-", dir=_SHM))
    data = directory / "etcd-data"
    data.mkdir(parents=True, exist_ok=True)
    return data


def _healthy(url: str, ctx: ssl.SSLContext | None) -> Callable[[], bool]:
    return lambda: probes.ok(url, ctx)


class LocalCluster:
    def __init__(
        self,
        directory: Path | str,
        bin_dir: Path | None = None,
        node_selector: str = components.KWOK_NODE_SELECTOR,
        crd_dir: Path | None = None,
    ) -> None:
        self.dir = Path(directory).resolve()
        self._bin_dir = bin_dir
        self.node_selector = node_selector
        self.crd_dir = crd_dir or manifests.default_crd_dir()
        self.pki = pki.Pki(self.dir / "pki")

    # ------------------------------------------------------------------ paths and helpers
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def state(self) -> ClusterState | None:
        return load(self.dir)

    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            state = self.state
            self._bin_dir = Path(state.bin_dir) if state else ensure_binaries()
        return self._bin_dir

    @property
    def ca_pem(self) -> bytes:
        return self.pki.ca_crt.read_bytes()

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run the cached kubectl against this cluster; raise with its stderr when `check` fails."""
        argv = [
            str(self.bin_dir / "kubectl"),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.dir / 'kubectl-cache'}",
            *args,
        ]
        proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
        return proc

    # ------------------------------------------------------------------ lifecycle
    def up(self, timeout: float = 90.0, detach: bool = False) -> ClusterState:
        """Start the cluster and return once it is ready (CRDs installed, default SA present).

        With `detach=False` the components die with this process (parent-death signal and an
        atexit hook); `detach=True` leaves them running for `down()` from another process.
        A port taken between choosing it and binding it (another test run) means one retry.
        """
        for attempt in (1, 2):
            try:
                return self._up_once(timeout, detach)
            except procs.NotReadyError as err:
                if attempt == 2 or "address already in use" not in str(err):
                    raise
        raise AssertionError("unreachable")

    def _up_once(self, timeout: float, detach: bool) -> ClusterState:
        started = time.monotonic()
        old = self.state
        if old is not None:
            if any(procs.alive(p) for p in old.procs):
                raise ClusterError(f"a cluster is already running in {self.dir}; run `karpy cluster down` first")
            self._cleanup(old)
        bin_dir = self.bin_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        logs = self.dir / "logs"
        logs.mkdir(exist_ok=True)
        keys = pki.generate(self.pki.dir, service_ip=components.SERVICE_IP)
        ports = _unique_ports(6)
        lay = components.Layout(
            bin_dir=bin_dir,
            dir=self.dir,
            pki=keys,
            kubeconfig=self.kubeconfig,
            etcd_data_dir=_etcd_data_dir(self.dir),
            etcd_port=ports[0],
            etcd_peer_port=ports[1],
            apiserver_port=ports[2],
            kcm_port=ports[3],
            scheduler_port=ports[4],
            kwok_port=ports[5],
        )
        server = f"https://127.0.0.1:{lay.apiserver_port}"
        probes.write_kubeconfig(self.kubeconfig, server, keys)
        state = ClusterState(
            dir=str(self.dir),
            bin_dir=str(bin_dir),
            kubeconfig=str(self.kubeconfig),
            server=server,
            etcd_data_dir=str(lay.etcd_data_dir),
            owner_pid=os.getpid(),
            ports={
                "etcd": lay.etcd_port,
                "etcd-peer": lay.etcd_peer_port,
                "kube-apiserver": lay.apiserver_port,
                "kube-controller-manager": lay.kcm_port,
                "kube-scheduler": lay.scheduler_port,
                "kwok": lay.kwok_port,
            },
        )
        save(self.dir, state)
        if not detach:
            atexit.register(self._down_at_exit, os.getpid())

        def launch(name: str, argv: list[str]) -> procs.Proc:
            proc = procs.start(name, argv, logs, die_with_parent=not detach)
            state.procs.append(proc)
            save(self.dir, state)
            return proc

        try:
            etcd = launch("etcd", components.etcd(lay))
            procs.wait_until("etcd /health", lambda: probes.etcd_healthy(lay.etcd_port), 30, [etcd])
            # The clients retry until the apiserver answers, so start them all now.
            apiserver = launch("kube-apiserver", components.apiserver(lay))
            kcm = launch("kube-controller-manager", components.controller_manager(lay))
            sched = launch("kube-scheduler", components.scheduler(lay))
            (self.dir / "kwok.yaml").write_text(components.kwok_config())
            kwok = launch("kwok", components.kwok(lay, self.node_selector))
            admin = probes.admin_context(keys)
            insecure = probes.insecure_context()

            def remaining() -> float:
                return max(5.0, timeout - (time.monotonic() - started))

            procs.wait_until(
                "kube-apiserver /readyz", lambda: probes.ok(server + "/readyz", admin), remaining(), [etcd, apiserver]
            )
            for proc, url, ctx in (
                (kcm, f"https://127.0.0.1:{lay.kcm_port}/healthz", insecure),
                (sched, f"https://127.0.0.1:{lay.scheduler_port}/healthz", insecure),
                (kwok, f"http://127.0.0.1:{lay.kwok_port}/healthz", None),
            ):
                procs.wait_until(f"{proc.name} /healthz", _healthy(url, ctx), remaining(), [proc, apiserver])
            # Pods need the default ServiceAccount (ServiceAccount admission stays on).
            sa_url = server + "/api/v1/namespaces/default/serviceaccounts/default"
            procs.wait_until("the default ServiceAccount", lambda: probes.ok(sa_url, admin), remaining(), [kcm])
            manifests.install_crds(self.kubectl, self.crd_dir, timeout=remaining())
        except BaseException:
            self.down()
            raise
        state.ready_seconds = round(time.monotonic() - started, 2)
        save(self.dir, state)
        return state

    def restart(self, name: str, downtime: float = 0.0, timeout: float = 60.0) -> procs.Proc:
        """Stop component `name`, wait `downtime` seconds, start it again with the argv it ran with
        and return once it is healthy. It dies with this process if this process started the cluster."""
        state = self.state
        if state is None:
            raise ClusterError(f"no cluster is running in {self.dir}")
        index = next((i for i, p in enumerate(state.procs) if p.name == name), None)
        if index is None:
            raise ClusterError(f"no component {name!r}; components: {[p.name for p in state.procs]}")
        old = state.procs[index]
        argv = procs.cmdline(old)
        procs.stop(old)
        time.sleep(downtime)
        new = procs.start(name, argv, Path(old.log).parent, die_with_parent=state.owner_pid == os.getpid())
        state.procs[index] = new
        save(self.dir, state)
        procs.wait_until(f"{name} healthy after a restart", self._health_check(name, state), timeout, [new])
        return new

    def _health_check(self, name: str, state: ClusterState) -> Callable[[], bool]:
        port = state.ports.get(name, 0)
        if name == "etcd":
            return lambda: probes.etcd_healthy(port)
        if name == "kube-apiserver":
            return _healthy(state.server + "/readyz", probes.admin_context(self.pki))
        if name == "kwok":
            return _healthy(f"http://127.0.0.1:{port}/healthz", None)
        return _healthy(f"https://127.0.0.1:{port}/healthz", probes.insecure_context())

    def down(self) -> list[str]:
        """Stop every recorded process (newest first); return the names of those stopped."""
        state = self.state
        if state is None:
            return []
        stopped = [p.name for p in state.procs if procs.alive(p)]
        for proc in reversed(state.procs):
            procs.stop(proc)
        self._cleanup(state)
        return stopped

    def _cleanup(self, state: ClusterState) -> None:
        data = Path(state.etcd_data_dir)
        if data.name.startswith("karpy-etcd-") or data.parent == self.dir:
            shutil.rmtree(data, ignore_errors=True)
        remove(self.dir)

    def _down_at_exit(self, pid: int) -> None:
        state = self.state
        if state is not None and state.owner_pid == pid == os.getpid():
            self.down()

    def status(self) -> ClusterStatus:
        state = self.state
        if state is None:
            return ClusterStatus(running=False, ready=False)
        alive = {p.name: procs.alive(p) for p in state.procs}
        ready = False
        if alive and all(alive.values()):
            try:
                ready = probes.ok(state.server + "/readyz", probes.admin_context(self.pki))
            except OSError:  # the PKI was removed under a running cluster
                ready = False
        return ClusterStatus(
            running=any(alive.values()), ready=ready, components=alive, kubeconfig=state.kubeconfig, server=state.server
        )

    # ------------------------------------------------------------------ karpy objects
    def install_crds(self) -> list[str]:
        return manifests.install_crds(self.kubectl, self.crd_dir)

    def install_webhooks(self, url_base: str, ca_pem: bytes, timeout: float = 30.0) -> None:
        manifests.install_webhooks(self.kubectl, url_base, ca_pem, timeout=timeout)

    def uninstall_webhooks(self) -> None:
        manifests.uninstall_webhooks(self.kubectl)

    def __enter__(self) -> LocalCluster:
        self.up()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()
