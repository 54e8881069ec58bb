"""The wheel (what the Dockerfile installs) carries the dashboard's templates and static files,
and an installed webapp finds the templates where the wheel puts them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from webapp import templates_dir

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_templates_and_static(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("karpy-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for template in (REPO / "templates").glob("*.html"):
        assert any(n.endswith(f".data/data/share/karpy/templates/{template.name}") for n in names), template.name
    assert "webapp/static/dashboard.js" in names and "webapp/static/dashboard.css" in names


def test_templates_are_found_in_a_checkout_or_where_configured(tmp_path: Path) -> None:
    assert templates_dir() == REPO / "templates"
    assert templates_dir(str(tmp_path)) == tmp_path


def test_the_image_copies_the_templates() -> None:
    assert "COPY templates templates" in (REPO / "Dockerfile").read_text()
