"""Redraw the images of ``docs/img`` from ``data/``, the way the docs say they were made.

``python -m benchmarks.doc_images`` (``--out DIR`` to write elsewhere than ``docs/img``) runs:

- ``panto-analytics report data/ --budgets 0:100k:41 -o REPORT``: ``kept_tokens.png`` is the report's, and
  ``report.png`` is the top of its ``index.html`` in headless Chromium (the browser, driver and flags of the
  report's browser test: :data:`CHROMIUM_FLAGS`), :data:`SHOT_SIZE` CSS pixels drawn at :data:`SHOT_WIDTH`;
- ``panto-analytics report data/ -o REPORT --window 32k --policy gemini-cli --max-orphan-rate 5%
  --prices docs/synth-prices.json``: ``frontier.png``;
- the ``docs/cost.md`` snippet (a billed replay of ``data/`` under a 64k window): ``cost_by_budget.png``.

It needs Chromium and chromedriver (Debian: ``chromium``, ``chromium-driver``) and selenium (the ``test`` extra).

>>> CHROMIUM_FLAGS[0], SHOT_SIZE, SHOT_WIDTH
('--headless', (1200, 1450), 900)
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner

__all__ = ["CHROMIUM_FLAGS", "SHOT_SIZE", "SHOT_WIDTH", "chromium", "main", "redraw"]

ROOT = Path(__file__).resolve().parent.parent

#: Headless Chromium's flags: no sandbox (containers, root), no network of its own.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1200,900")

#: The top of the report that ``report.png`` shows, in CSS pixels (the browser test's width).
SHOT_SIZE = (1200, 1450)
#: ``report.png``'s width in pixels: the shot scaled down, to read at a docs page's width.
SHOT_WIDTH = 900


def chromium(profile: Path, *extra: str) -> Any:
    """A headless Chromium driven by selenium, with a fresh profile in ``profile``.

    ``extra``: more flags. Raises ``RuntimeError`` naming what is missing (the browser test skips on it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        raise RuntimeError("no Chromium here: install the Debian packages chromium and chromium-driver "
                           f"(found browser: {browser}, chromedriver: {driver})")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    for flag in extra:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    # The explicit Service keeps selenium from looking for a driver on the network.
    return webdriver.Chrome(options=options, service=Service(driver))


def _report(out: Path, *args: str) -> Path:
    """``panto-analytics report data -o OUT ARGS`` from the repository's root (the report names its inputs as
    given: ``data``), in this process; the report's folder."""
    from panto_analytics.cli import main

    with _in(ROOT):
        result = CliRunner().invoke(main, ["report", "data", "-o", str(out), "--no-cache", *args])
    if result.exit_code != 0:
        raise RuntimeError(f"report {' '.join(args)} failed ({result.exit_code}): {result.output}")
    return out


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    """Run the block with ``folder`` as the working directory."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _screenshot(page: Path, shot: Path, work: Path) -> None:
    """The top of ``page`` (:data:`SHOT_SIZE`) in headless Chromium, as PNG at ``shot``, :data:`SHOT_WIDTH` wide."""
    from PIL import Image  # matplotlib's dependency

    browser = chromium(work / "profile", "--hide-scrollbars")
    try:
        browser.set_window_size(*SHOT_SIZE)
        browser.get(page.resolve().as_uri())
        inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
        # The window includes the browser's frame: grow it until the page's viewport is SHOT_SIZE.
        browser.set_window_size(2 * SHOT_SIZE[0] - inner[0], 2 * SHOT_SIZE[1] - inner[1])
        raw = work / "shot.png"
        if not browser.save_screenshot(str(raw)):
            raise RuntimeError(f"Chromium did not save {raw}")
    finally:
        browser.quit()
    with Image.open(raw) as image:
        height = round(image.height * SHOT_WIDTH / image.width)
        image.convert("RGB").resize((SHOT_WIDTH, height), Image.Resampling.LANCZOS).save(shot, optimize=True)


def _cost_by_budget(shot: Path) -> None:
    """``docs/cost.md``'s figure: a billed replay of ``data/`` under a 64k window, cost per session by budget."""
    import panto_analytics as pa

    messages = pa.read_sessions(str(ROOT / "data"))
    billed = pa.replay(messages, pa.budgets.parse_budgets("0:100k:11"), window=64_000,
                       policy=["libpanto", "pi", "codex", "claude-code"], prices=str(ROOT / "docs/synth-prices.json"))
    pa.plots.save(pa.plots.cost_by_budget(billed.sessions), shot)


def redraw(out: Path) -> list[Path]:
    """Write the four images into ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        report = _report(work / "report", "--budgets", "0:100k:41")
        shutil.copyfile(report / "kept_tokens.png", out / "kept_tokens.png")
        _screenshot(report / "index.html", out / "report.png", work)
        window = _report(work / "window", "--window", "32k", "--policy", "gemini-cli", "--max-orphan-rate", "5%",
                         "--prices", str(ROOT / "docs/synth-prices.json"))
        shutil.copyfile(window / "frontier.png", out / "frontier.png")
    _cost_by_budget(out / "cost_by_budget.png")
    return [out / n for n in ("report.png", "kept_tokens.png", "frontier.png", "cost_by_budget.png")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder of the images (docs/img)")
    for path in redraw(parser.parse_args(argv).out):
        print(f"{path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
