"""Informers: one thread per watched kind keeps `ClusterState` current.

Loop per kind: list (→ `state.replace`), then watch from the list's resourceVersion
(→ `state.apply`), resuming from the last seen resourceVersion when a watch ends normally.
A list is asked a page of `PAGE_SIZE` objects at a time (`limit`/`continue`, as client-go's
reflector does), each object kept as cluster state keeps it (`ClusterState.known`: trimmed, or
the copy it holds already when unchanged) before the next page comes: at 40,000 pods the
untrimmed objects of one page are alive at once, not those of the whole cluster, and a re-list
makes no second copy of what did not change. A continue token that expired (410) falls back to
one list of everything, as client-go's pager does (`FullListIfExpired`).
A 410 Gone re-lists at once; a lost connection or API-server restart marks the kind unsynced
(decisions pause), waits with backoff (0.5 s → 5 s) and re-lists. Every `resync_seconds`
(`RESYNC_SECONDS`, an hour) a full re-list corrects any drift — a safety net only: a watch resumes
from its last resourceVersion (bookmarks keep it fresh) and any error re-lists, and client-go's
informers, Karpenter's, never re-list on a timer. At 20,000 pods a re-list decodes every pod
again (~10 % of the controller's CPU in a 25-minute harness run when it came every 5 minutes).
A kind whose CRD is missing counts as listed-empty and is retried.
"""

from __future__ import annotations

import logging
import threading
import time

from controller.kube.client import Kube
from controller.kube.errors import GoneError, KubeError, NotFoundError
from controller.kube.resources import WATCHED, Kind
from controller.state.cluster import ClusterState
from controller.state.snapshot import Obj

log = logging.getLogger(__name__)

PAGE_SIZE = 500  # client-go's pager default
RESYNC_SECONDS = 3600.0


class Informer:
    def __init__(
        self,
        kube: Kube,
        kind: Kind,
        state: ClusterState,
        stop: threading.Event,
        resync_seconds: float = RESYNC_SECONDS,
        watch_timeout: int = 60,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.kube, self.kind, self.state, self.stop = kube, kind, state, stop
        self.resync_seconds = resync_seconds
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.relists = 0

    def run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                self._list_and_watch()
                backoff = 0.5
            except GoneError:
                log.info("watch of %s expired (410), re-listing", self.kind.name)
            except NotFoundError:
                log.warning("cannot list %s (is its CRD installed?), retrying in 30s", self.kind.name)
                self.state.replace(self.kind.name, [])
                self.stop.wait(30)
            except (KubeError, OSError, ValueError) as err:
                log.warning("watching %s: %s; re-listing in %.1fs", self.kind.name, err, backoff)
                self.state.unsynced(self.kind.name)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _list(self) -> tuple[list[Obj], str]:
        """Every object of the kind, kept as cluster state keeps it, and the list's resourceVersion."""
        items: list[Obj] = []
        token = ""
        while True:
            try:
                page = self.kube.list(self.kind, self.page_size, token)
            except GoneError:
                if not token:
                    raise
                log.info("list of %s: its continue token expired (410), listing it whole", self.kind.name)
                page = self.kube.list(self.kind)
                return self.state.known(self.kind.name, page.items), page.resource_version
            items.extend(self.state.known(self.kind.name, page.items))
            token = page.continue_token
            if not token:
                return items, page.resource_version

    def _list_and_watch(self) -> None:
        items, rv = self._list()
        self.relists += 1
        self.state.replace(self.kind.name, items)
        del items
        started = time.monotonic()
        while not self.stop.is_set() and time.monotonic() - started < self.resync_seconds:
            for event in self.kube.watch(self.kind, rv, self.watch_timeout):
                meta = event.object.get("metadata") or {}
                rv = str(meta.get("resourceVersion") or rv)
                if event.type != "BOOKMARK":
                    self.state.apply(self.kind.name, event.type, event.object)
                if self.stop.is_set():
                    return


def start_informers(
    kube: Kube, state: ClusterState, stop: threading.Event, resync_seconds: float = RESYNC_SECONDS
) -> list[threading.Thread]:
    threads = []
    for kind in WATCHED:
        informer = Informer(kube, kind, state, stop, resync_seconds)
        thread = threading.Thread(target=informer.run, name=f"informer-{kind.name}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads
