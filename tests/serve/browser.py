"""Shared by the viewer's browser tests: Debian's chromium through Playwright, and screenshots
kept as artifacts (``$HARNESS_SCREENSHOT_DIR``, else ``test-artifacts/screenshots/`` at the
repository root; ``HARNESS_SCREENSHOT_DIR=docs/images`` refreshes the documentation's)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (./dev test installs it as root)"
)


def screenshot_dir() -> Path:
    return Path(os.environ.get("HARNESS_SCREENSHOT_DIR") or ROOT / "test-artifacts" / "screenshots")


def keep_screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save the page (or only what the viewport shows) as ``name``.png in the artifacts
    folder; return the file."""
    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 5_000  # a picture, not an empty page
    return path


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()
