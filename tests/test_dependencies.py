"""Dependencies are locked and past known advisories (issue 14, item 8).

`requirements.lock` (dev, what `make` installs) and `requirements-runtime.lock` (the image) pin
every package with hashes; pyproject.toml's floors exclude the last vulnerable release of each
package with a published advisory, and the locked versions satisfy pyproject.toml.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# package → the last release with a known advisory (the floor must be above it)
LAST_VULNERABLE = {
    "flask": "3.1.0",  # CVE-2025-47278
    "werkzeug": "3.1.5",  # CVE-2026-27199 (and CVE-2025-66221, CVE-2026-21860 before)
    "gunicorn": "22.0.0",  # CVE-2024-6827
    "marshmallow": "4.1.1",  # CVE-2025-68480
    "cryptography": "44.0.0",  # CVE-2024-12797
    "jinja2": "3.1.5",  # CVE-2025-27516
    "urllib3": "2.6.2",  # CVE-2026-21441 (and CVE-2025-50181, CVE-2025-66418/66471 before)
    "requests": "2.32.3",  # CVE-2024-47081
}


def locked(name: str) -> dict[str, Version]:
    text = (ROOT / name).read_text()
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s\\;]+)", text, flags=re.MULTILINE)
    return {canonicalize_name(pkg): Version(ver) for pkg, ver in pins}


def requirements(extra: bool) -> list[Requirement]:
    project = PYPROJECT["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    if extra:
        reqs += [Requirement(r) for r in project["optional-dependencies"]["dev"]]
    return reqs


@pytest.mark.parametrize(("lock", "extra"), [("requirements.lock", True), ("requirements-runtime.lock", False)])
def test_every_dependency_is_pinned_with_hashes(lock: str, extra: bool) -> None:
    text = (ROOT / lock).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    pinned = [e for e in entries if "==" in e.split("\n")[0]]
    assert pinned and all("--hash=sha256:" in e for e in pinned)
    assert "--index-url" not in text and "://" not in text  # no registry address in the repo
    versions = locked(lock)
    for req in requirements(extra):
        name = canonicalize_name(req.name)
        assert name in versions, f"{req.name} is not in {lock}"
        assert req.specifier.contains(versions[name], prereleases=True), f"{lock}: {name} {versions[name]} vs {req}"


@pytest.mark.parametrize(("package", "vulnerable"), sorted(LAST_VULNERABLE.items()))
def test_floors_exclude_releases_with_known_advisories(package: str, vulnerable: str) -> None:
    req = next(r for r in requirements(extra=False) if canonicalize_name(r.name) == package)
    assert not req.specifier.contains(vulnerable), f"{req} still allows {package} {vulnerable}"
    for lock in ("requirements.lock", "requirements-runtime.lock"):
        assert locked(lock)[package] > Version(vulnerable)


def test_make_installs_from_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes --no-deps -r requirements.lock" in makefile
    assert "pip install --quiet -e '.[dev]'" not in makefile  # would resolve past the lock
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes --no-deps -r requirements-runtime.lock" in dockerfile
    build = PYPROJECT["build-system"]["requires"]
    assert any(Requirement(r).name == "setuptools" and not Requirement(r).specifier.contains("78.1.0") for r in build)
