"""The HTML report: one self-contained page, checked in a real (headless) browser."""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from specconsole.cli import main
from tests.fixtures.browser import render
from tests.session.test_report_resolved import REPO, _demo_session


def _html_report(tmp_path: Path) -> Path:
    session = _demo_session(tmp_path / "sessions")
    out = tmp_path / "report.html"
    assert main(["report", str(session.path), "--format", "html", "-o", str(out)]) == 0
    return out


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    text = _html_report(tmp_path).read_text()
    # nothing to fetch: no scripts, no external stylesheets, images or links
    assert "<script" not in text.lower()
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', text)
    assert all(ref.startswith("#") for ref in refs), [r for r in refs if not r.startswith("#")]
    assert "@import" not in text and "url(http" not in text
    # what the page must carry
    assert text.count("<svg") == 4
    for chart in ("aggregate", "single", "pareto", "levels"):
        assert f'id="chart-{chart}"' in text
    assert "the largest value that loads is 9 (10 fails)" in text
    assert 'id="seed-table"' in text and "kv_cache_no_memory" in text
    assert "speculative_num_steps" in text  # each trial's full configuration
    assert "#7 steps=7 draft=8" in text  # series named by trial number and config


def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    page = _html_report(tmp_path)
    shot = render(page, tmp_path / "report.png")
    assert shot.console_errors == [], shot.console_errors
    assert shot.dom.count("<svg") == 4, shot.log[-2000:]
    assert "Aggregate throughput vs concurrency" in shot.dom
    with Image.open(shot.png) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (1200, 2400)
        colours = rgb.getcolors(maxcolors=1 << 20) or []
        non_white = sum(n for n, c in colours if c != (255, 255, 255))
        assert len(colours) > 50, "the page looks blank"
        assert non_white > 0.03 * rgb.size[0] * rgb.size[1], "the page looks blank"


def test_charts_alone_as_png_and_svg(tmp_path: Path) -> None:
    session = _demo_session(tmp_path / "sessions")
    png, svg = tmp_path / "charts.png", tmp_path / "charts.svg"
    assert main(["report", str(session.path), "--format", "png", "-o", str(png)]) == 0
    assert main(["report", str(session.path), "--format", "svg", "-o", str(svg)]) == 0
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size[1] > image.size[0]  # three charts stacked
    text = svg.read_text()
    assert "<svg" in text and "<script" not in text and "single-request" in text
    assert main(["report", str(session.path), "--format", "png"]) == 1  # needs -o


def test_readme_shows_the_rendered_report_and_the_terminal_chart() -> None:
    """The README's pictures exist and come from the script (a rendered page, a real chart)."""
    readme = (REPO / "README.md").read_text()
    assert "](docs/images/report-example.png)" in readme
    with Image.open(REPO / "docs" / "images" / "report-example.png") as image:
        assert image.format == "PNG" and image.size == (1200, 2400)
    begin, end = "<!-- terminal-chart:begin -->", "<!-- terminal-chart:end -->"
    capture = readme.split(begin, 1)[1].split(end, 1)[0]
    assert "aggregate tok/s vs concurrency" in capture and "● #1 steps=1 draft=2" in capture
    assert "scripts/render-report-example.sh" in readme
    assert (REPO / "scripts" / "render-report-example.sh").stat().st_mode & 0o111
