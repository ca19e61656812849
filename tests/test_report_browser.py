"""The HTML report in a real browser: every picture renders, the verdicts show, nothing fails or is fetched.

Writes the report of two candidates on the MountainCar recording with
``rewardlab report``, opens the file (a ``file://`` address) in Debian's
chromium through Playwright exactly as ``tests/test_browser.py`` does (never
``playwright install``), and checks each ``<img>`` decoded (``complete`` and
``naturalWidth > 0``), that the verdict table is visible, that the page
logged no console error and asked for nothing but itself.  A full-page
screenshot goes to ``test-output/report.png``.

Skipped only when no chromium is found and ``CI`` is not set; in CI a missing
browser fails the test.
"""

from __future__ import annotations


import pytest

from conftest import ROOT
from chromium import CHROMIUM_ARGS, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OUTPUT = ROOT / "test-output"
MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
SHAPING = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"
SCALE = ROOT / "data" / "plugins" / "steps" / "scale_recorded.py"
IMAGES = """() => [...document.images].map(i => ({complete: i.complete, width: i.naturalWidth,
                                               height: i.naturalHeight, shown: i.getBoundingClientRect().width}))"""


def test_report_renders_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    from rewardlab.cli import main

    chromium = require_chromium()
    out = tmp_path / "report.html"
    assert main(["report", str(SHAPING), str(SCALE), "--data", str(MOUNTAINCAR), "--out", str(out)]) == 0
    expected_images = out.read_text(encoding="utf-8").count("<img ")
    assert expected_images >= 2 * 2 + 2 * 3 + 2
    OUTPUT.mkdir(exist_ok=True)
    errors, requests = [], []
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            tmp_path / "chromium-profile", executable_path=chromium, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1300, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri(), wait_until="load")
            images = page.evaluate(IMAGES)
            verdicts = page.locator("table.verdicts")
            assert verdicts.is_visible()
            assert verdicts.locator(".badge").count() >= 2
            assert page.locator("section.candidate h2").all_inner_texts() == ["potential_shaping", "scale_recorded"]
            page.screenshot(path=str(OUTPUT / "report.png"), full_page=True)
        finally:
            context.close()
    assert len(images) == expected_images
    bad = [i for i, im in enumerate(images) if not (im["complete"] and im["width"] > 0 and im["height"] > 0)]
    assert not bad, [images[i] for i in bad]
    assert all(im["shown"] > 100 for im in images), images  # laid out at a readable size
    assert not errors, errors
    assert all(u == out.as_uri() or u.startswith("data:") for u in requests), requests
