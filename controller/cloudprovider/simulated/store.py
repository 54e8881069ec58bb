"""The simulated cloud's "data centre": instances and injected faults in a small SQLite file.

Instances live outside the controller process, like a real cloud's: a restarted controller (or
a second replica, or a test) opens the same file and sees what was launched. Every call opens
its own connection (WAL mode, busy timeout), so threads and processes can share one file.
Faults are rows too, so a test can make a *running* controller's launches fail:
`fail_next_creates(n, kind)` and `set_outage(type, zone, capacity_type)`; and any EC2-like call
(`fail_next_calls(operation, n, kind, seconds)`: `create_fleet`, `terminate_instances`,
`describe_instances`) can be throttled (RequestLimitExceeded), time out with nothing done, or time
out after it took effect (the answer lost: a launched instance nobody knows of). So are the AMIs
(`images.py`): images registered with tags (`register_image`), and the AMI each family's
"public parameter" names per architecture (`publish_release`), so a test can release a new AMI
under a running controller.
Neighbour: `provider.py` (the `CloudProvider` on top of this).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS instances (
    instance_id TEXT PRIMARY KEY,
    cluster TEXT NOT NULL,
    provisioner TEXT NOT NULL,
    name TEXT NOT NULL,
    instance_type TEXT NOT NULL,
    zone TEXT NOT NULL,
    capacity_type TEXT NOT NULL,
    price REAL NOT NULL,
    created_at REAL NOT NULL,
    terminated_at REAL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS create_faults (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS call_faults (
    id INTEGER PRIMARY KEY AUTOINCREMENT, operation TEXT NOT NULL, kind TEXT NOT NULL, seconds REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS outages (
    instance_type TEXT NOT NULL, zone TEXT NOT NULL, capacity_type TEXT NOT NULL,
    PRIMARY KEY (instance_type, zone, capacity_type)
);
CREATE TABLE IF NOT EXISTS images (
    image_id TEXT PRIMARY KEY, name TEXT NOT NULL, arch TEXT NOT NULL, tags TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    family TEXT NOT NULL, arch TEXT NOT NULL, image_id TEXT NOT NULL, PRIMARY KEY (family, arch)
);
"""

FAULT_INSUFFICIENT_CAPACITY = "insufficient-capacity"
FAULT_ERROR = "error"
FAULT_THROTTLE = "throttle"  # a call refused with RequestLimitExceeded, nothing done
FAULT_TIMEOUT = "timeout"  # a call hangs `seconds`, then fails; nothing done
FAULT_ANSWER_LOST = "answer-lost"  # a call takes effect, hangs `seconds`, then fails as a timeout
CALL_FAULTS = (FAULT_THROTTLE, FAULT_TIMEOUT, FAULT_ANSWER_LOST)


@dataclass(frozen=True)
class Image:
    """A registered AMI: what an `amiSelector` can match (by id, tags or name)."""

    image_id: str
    name: str
    arch: str  # amd64 | arm64
    tags: dict[str, str]
    created_at: float = 0.0


@dataclass(frozen=True)
class InstanceRow:
    instance_id: str
    cluster: str
    provisioner: str
    name: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    created_at: float
    terminated_at: float | None
    body: dict[str, Any]


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout=30000")
            yield db
        finally:
            db.close()

    def insert(self, row: InstanceRow) -> None:
        with self._db() as db:
            db.execute(
                "INSERT INTO instances VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    row.instance_id, row.cluster, row.provisioner, row.name, row.instance_type, row.zone,
                    row.capacity_type, row.price, row.created_at, row.terminated_at, json.dumps(row.body),
                ),
            )  # fmt: skip

    def get(self, instance_id: str) -> InstanceRow | None:
        with self._db() as db:
            cur = db.execute("SELECT * FROM instances WHERE instance_id = ?", (instance_id,))
            found = cur.fetchone()
        return _row(found) if found else None

    def running(self, cluster: str) -> list[InstanceRow]:
        with self._db() as db:
            cur = db.execute(
                "SELECT * FROM instances WHERE cluster = ? AND terminated_at IS NULL ORDER BY created_at, instance_id",
                (cluster,),
            )
            return [_row(r) for r in cur.fetchall()]

    def terminate(self, instance_id: str, when: float) -> bool:
        """Mark an instance terminated; False when it was not running."""
        with self._db() as db:
            cur = db.execute(
                "UPDATE instances SET terminated_at = ? WHERE instance_id = ? AND terminated_at IS NULL",
                (when, instance_id),
            )
            return cur.rowcount > 0

    # Faults -----------------------------------------------------------------------------------

    def fail_next_creates(self, count: int, kind: str = FAULT_INSUFFICIENT_CAPACITY) -> None:
        with self._db() as db:
            db.executemany("INSERT INTO create_faults (kind) VALUES (?)", [(kind,)] * count)

    def take_create_fault(self) -> str | None:
        """Consume one queued create fault (atomically), or None."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            found = db.execute("SELECT id, kind FROM create_faults ORDER BY id LIMIT 1").fetchone()
            if found:
                db.execute("DELETE FROM create_faults WHERE id = ?", (found[0],))
            db.execute("COMMIT")
        return str(found[1]) if found else None

    def fail_next_calls(self, operation: str, count: int, kind: str, seconds: float = 0.0) -> None:
        """The next `count` calls of `operation` meet fault `kind` (one of `CALL_FAULTS`)."""
        if kind not in CALL_FAULTS:
            raise ValueError(f"call fault kind {kind!r}: must be one of {', '.join(CALL_FAULTS)}")
        if count < 0 or seconds < 0:
            raise ValueError(f"call fault: count {count} and seconds {seconds} must not be negative")
        with self._db() as db:
            db.executemany(
                "INSERT INTO call_faults (operation, kind, seconds) VALUES (?,?,?)",
                [(operation, kind, seconds)] * count,
            )

    def take_call_fault(self, operation: str) -> tuple[str, float] | None:
        """Consume the oldest queued fault of `operation` (atomically): (kind, seconds), or None."""
        with self._db() as db:
            if db.execute("SELECT 1 FROM call_faults WHERE operation = ? LIMIT 1", (operation,)).fetchone() is None:
                return None  # the common case, without taking the write lock
            db.execute("BEGIN IMMEDIATE")
            found = db.execute(
                "SELECT id, kind, seconds FROM call_faults WHERE operation = ? ORDER BY id LIMIT 1", (operation,)
            ).fetchone()
            if found:
                db.execute("DELETE FROM call_faults WHERE id = ?", (found[0],))
            db.execute("COMMIT")
        return (str(found[1]), float(found[2])) if found else None

    def set_outage(self, instance_type: str, zone: str, capacity_type: str, on: bool = True) -> None:
        with self._db() as db:
            if on:
                db.execute("INSERT OR IGNORE INTO outages VALUES (?,?,?)", (instance_type, zone, capacity_type))
            else:
                db.execute(
                    "DELETE FROM outages WHERE instance_type=? AND zone=? AND capacity_type=?",
                    (instance_type, zone, capacity_type),
                )

    def in_outage(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        with self._db() as db:
            cur = db.execute(
                "SELECT 1 FROM outages WHERE instance_type=? AND zone=? AND capacity_type=?",
                (instance_type, zone, capacity_type),
            )
            return cur.fetchone() is not None

    # AMIs -------------------------------------------------------------------------------------

    def register_image(self, image: Image) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO images VALUES (?,?,?,?,?)",
                (image.image_id, image.name, image.arch, json.dumps(image.tags, sort_keys=True), image.created_at),
            )

    def images(self) -> list[Image]:
        with self._db() as db:
            rows = db.execute("SELECT image_id, name, arch, tags, created_at FROM images ORDER BY image_id").fetchall()
        return [Image(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]

    def publish_release(self, family: str, arch: str, image_id: str) -> None:
        """Name `image_id` as the family's current AMI for `arch` (a new EKS-optimized release)."""
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO releases VALUES (?,?,?)", (family, arch, image_id))

    def releases(self) -> dict[tuple[str, str], str]:
        with self._db() as db:
            rows = db.execute("SELECT family, arch, image_id FROM releases").fetchall()
        return {(r[0], r[1]): r[2] for r in rows}


def _row(r: tuple[Any, ...]) -> InstanceRow:
    return InstanceRow(
        instance_id=r[0], cluster=r[1], provisioner=r[2], name=r[3], instance_type=r[4], zone=r[5],
        capacity_type=r[6], price=r[7], created_at=r[8], terminated_at=r[9], body=json.loads(r[10]),
    )  # fmt: skip
