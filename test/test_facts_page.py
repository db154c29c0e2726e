"""The project's own facts page (docs/jetson-facts.md): a user cloning the project has no
``shared/`` folder, so nothing points there, and every source the page cites is in its table."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FACTS = REPO / "docs" / "jetson-facts.md"
OUTSIDE = "shared" + "/docs"  # spelled apart so this file does not find itself


def test_nothing_points_outside_the_repository():
    files = [REPO / "README.md", *(p for d in ("edge_roofline", "docs", "test") for p in (REPO / d).rglob("*")
                                   if p.is_file() and p.suffix in (".py", ".md", ".yaml", ".json", ".txt"))]
    assert len(files) > 100
    hits = [str(p.relative_to(REPO)) for p in files if OUTSIDE in p.read_text(errors="replace")]
    assert hits == []


def test_every_cited_source_is_listed():
    text = FACTS.read_text()
    listed = set(re.findall(r"^\| (S\d+) \|", text, re.MULTILINE))
    cited = set(re.findall(r"\b(S\d+)\b", text))
    assert listed and cited <= listed, cited - listed
    assert "UNVERIFIED" in text and "[likely]" in text


def test_the_catalogues_unverified_devices_are_on_the_page():
    from edge_roofline.roofline.devices import CATALOGUE
    text = FACTS.read_text()
    for spec in CATALOGUE.values():
        if spec.unverified:
            family = spec.name.removeprefix("Jetson ").split(" (")[0].rsplit(" ", 1)[0]
            assert family in text, f"{spec.key}: UNVERIFIED facts but no section on {family!r}"
