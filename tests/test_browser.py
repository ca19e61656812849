"""JupyterLab in a real browser: run the tuning notebook, tune a rank, hover and click the plot, pin, save
and restore the state, export, check the file; every widget's figures with their toolbars clear of the plot.

Starts JupyterLab from this venv on a free localhost port (token auth, its
own config / runtime / settings folders) over a temporary copy of
``notebooks/02_tuning_ranking.ipynb`` (with one more cell that shows the
other widgets on the small MountainCar recording), drives Debian's chromium through
Playwright's sync API, and always shuts the server down.  Screenshots go to
``test-output/`` (gitignored).

Skipped only when no chromium is found and the ``CI`` environment variable is
not set; in CI a missing browser fails the test.  Never run ``playwright
install``: this test uses the system chromium (``/usr/bin/chromium``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from chromium import CHROMIUM_ARGS, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "02_tuning_ranking.ipynb"
OUTPUT = ROOT / "test-output"
SERVER_START_S = 90
KERNEL_RUN_S = 240
EXPORT_S = 300
CHANGED_VALUE = -200.0  # new reward for 4th place
CHANGED_RANK = 3
# the tuner's figure: ipympl draws the picture on the first canvas of its canvas div
PLACES = ("1st", "2nd", "3rd", "4th")
PLOT_CANVAS = ".rewardlab-tuner .rewardlab-plot .jupyter-matplotlib-canvas-div canvas"
EPISODE_CANVAS = ".rewardlab-tuner .rewardlab-episode-plot .jupyter-matplotlib-canvas-div canvas"
# the other widgets, shown by a cell added after the tuner's (a small step table: a few seconds)
OTHER_WIDGETS_CELL = """\
import rewardlab
from rewardlab.sessions import EpsilonScheduleSession, locate
from rewardlab.widgets import ComparisonBoard, EpsilonScheduleTuner, NormalizationPanel

steps = rewardlab.load(locate("data/gym/mountaincar_scripted.parquet"))
board = ComparisonBoard(steps, sorted(locate("data/plugins/steps").glob("*.py")))
display(board, NormalizationPanel(board.session.frame, reward="recorded", scope="episode_return"),
        EpsilonScheduleTuner(EpsilonScheduleSession(n_steps=1_000_000, threshold=0.1)))
"""
WIDGETS = (".rewardlab-tuner", ".rewardlab-comparison", ".rewardlab-normalization", ".rewardlab-epsilon")
# per ipympl figure under a widget: the client rectangles [left, top, right, bottom] of its picture canvas,
# its toolbar and the canvas widget that holds both (the toolbar is position: absolute inside it)
FIGURE_BOXES = """(root) => [...root.querySelectorAll('.jupyter-matplotlib-figure')].map(f => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const canvas = f.querySelector('.jupyter-matplotlib-canvas-div canvas');
  const toolbar = f.querySelector('.jupyter-matplotlib-toolbar');
  return {canvas: canvas ? box(canvas) : null, toolbar: toolbar ? box(toolbar) : null,
          widget: box(f.parentElement), buttons: toolbar ? toolbar.querySelectorAll('button').length : 0,
          visibility: toolbar ? getComputedStyle(toolbar).visibility : null};
}).filter(b => b.canvas && b.canvas[2] - b.canvas[0] > 10 && b.canvas[3] - b.canvas[1] > 10)"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


class LabServer:
    """A JupyterLab server process over ``root``; :meth:`stop` always ends it."""

    def __init__(self, root: Path, state: Path, log: Path):
        self.root, self.state, self.log = root, state, log
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        settings = self.state / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        # No news / update pop-ups over the notebook.
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = {**os.environ,
               "JUPYTER_CONFIG_DIR": str(self.state / "config"),
               "JUPYTER_RUNTIME_DIR": str(self.state / "runtime"),
               "JUPYTER_DATA_DIR": str(self.state / "data"),
               "IPYTHONDIR": str(self.state / "ipython"),
               "JUPYTER_PLATFORM_DIRS": "1",
               "REWARDLAB_PROGRESS": "0"}
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               f"--LabApp.user_settings_dir={self.state / 'settings'}",
               f"--LabApp.workspaces_dir={self.state / 'workspaces'}",
               "--LabApp.news_url=None", "--LabApp.extension_manager=readonly"]
        if os.geteuid() == 0:  # CI containers run as root
            cmd.append("--allow-root")
        self._log_file = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{_tail(self.log)}")
            try:
                if _get(f"{self.base}/api/status?token={self.token}") == 200:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_S} s:\n{_tail(self.log)}")

    def start_kernel(self, path: str) -> None:
        """Start the notebook's kernel through the REST API (``python3``: this venv's interpreter)."""
        body = json.dumps({"path": path, "name": Path(path).name, "type": "notebook",
                           "kernel": {"name": "python3"}}).encode()
        request = urllib.request.Request(f"{self.base}/api/sessions?token={self.token}", data=body,
                                         method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 201, response.status

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._close_log()
            return
        try:  # graceful: the server shuts its kernels down
            request = urllib.request.Request(f"{self.base}/api/shutdown?token={self.token}", method="POST",
                                             data=b"")
            urllib.request.urlopen(request, timeout=5).close()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        try:  # anything the server started and left behind (a kernel), in its own process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._close_log()

    def _close_log(self) -> None:
        if getattr(self, "_log_file", None) is not None and not self._log_file.closed:
            self._log_file.close()


@pytest.fixture
def lab(tmp_path, sample_path):
    """A JupyterLab server over a temporary copy of the tuning notebook."""
    require_chromium()
    try:
        import playwright.sync_api  # noqa: F401  (PyPI, in the test extras)
    except ImportError:
        message = "playwright is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(message + " [CI is set, so this test may not be skipped]")
        pytest.skip(message)
    root = tmp_path / "lab"
    (root / "notebooks").mkdir(parents=True)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if sample_path != ROOT / "data" / "sample.tsv.gz":  # no bundled sample: point the notebook at the fixture's
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        params.source += f"\nDATA = {str(sample_path)!r}\n"
    nb.cells.append(nbformat.v4.new_code_cell(OTHER_WIDGETS_CELL))
    nbformat.write(nb, root / "notebooks" / NOTEBOOK.name)
    OUTPUT.mkdir(exist_ok=True)
    server = LabServer(root, tmp_path / "state", OUTPUT / "jupyterlab.log")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _expected_texts(frame) -> dict[str, str]:
    """What the tuner should display after the change, computed here with the same session."""
    from rewardlab.sessions import RankingTuningSession
    from rewardlab.widgets import fmt

    session = RankingTuningSession(frame, preset="tenhou_tokujo_6dan")
    session.set_rank_value(CHANGED_RANK, CHANGED_VALUE)
    r = session.results
    return {"mean": fmt(r.reward_moments.mean), "std": fmt(r.reward_moments.std),
            "raw_mean": fmt(r.raw_moments.mean), "raw_std": fmt(r.raw_moments.std)}


def test_tuner_in_jupyterlab(lab, sample_path, sample_frame, tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = require_chromium()
    started = time.monotonic()
    expected = _expected_texts(sample_frame)
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            tmp_path / "chromium-profile", executable_path=chromium, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1500, "height": 1100})
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            try:
                result_text = _drive(page, lab, expected)
            except Exception:
                _save_failure(page)
                raise
        finally:
            context.close()
    browser_s = time.monotonic() - started

    path = Path(_written_path(result_text))
    assert path.is_file(), result_text
    assert path.parent == lab.root / "notebooks"
    assert f"vector = [75.0, 30.0, 0.0, {CHANGED_VALUE!r}]" in path.read_text()
    assert "bit for bit" in result_text and "check-plugin: PASS" in result_text, result_text
    check = subprocess.run([sys.executable, "-m", "rewardlab", "check-plugin", str(path), "--data",
                            str(sample_path)], capture_output=True, text=True, timeout=EXPORT_S)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "result: PASS" in check.stdout
    print(f"browser test: {browser_s:.1f} s in the browser, {time.monotonic() - started:.1f} s with check-plugin")


def _drive(page, lab: LabServer, expected: dict[str, str]) -> str:
    """Open the notebook, run all, change a rank, export; returns the export result's text."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    lab.start_kernel(f"notebooks/{NOTEBOOK.name}")  # the page attaches to it: no kernel dialog
    page.goto(f"{lab.base}/lab/tree/notebooks/{NOTEBOOK.name}?token={lab.token}",
              wait_until="domcontentloaded", timeout=90_000)
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)
    try:  # should the kernel list arrive late, JupyterLab asks which kernel to start
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    except PlaywrightTimeout:
        pass
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
    page.locator(".jp-NotebookPanel .jp-Cell").first.click()  # the notebook is the current widget

    # Run > Run All Cells, until a cell is running or done
    for _attempt in range(3):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-InputPrompt')].some(e => /[*0-9]/.test(e.textContent))",
                timeout=20_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        raise AssertionError("Run All Cells did not start the notebook")

    tuner = page.locator(".jp-OutputArea-output .rewardlab-tuner")
    tuner.wait_for(timeout=KERNEL_RUN_S * 1000)
    stats = tuner.locator(".rewardlab-stats")
    page.wait_for_function(
        "() => { const s = document.querySelector('.rewardlab-tuner .rewardlab-stats');"
        " const c = document.querySelector(" + json.dumps(PLOT_CANVAS) + ");"
        " return s && s.innerText.includes('mean before') && c && c.width > 0; }",
        timeout=KERNEL_RUN_S * 1000)
    page.wait_for_function(  # every cell finished: no "[*]" prompt left
        "() => ![...document.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('*'))",
        timeout=KERNEL_RUN_S * 1000)
    # A real widget, not the text fallback of its repr; the plot an interactive canvas with its toolbar.
    assert tuner.count() == 1
    assert page.get_by_text("RankingTuner(children=").count() == 0
    assert tuner.locator(".widget-dropdown select").count() >= 1
    assert tuner.locator(".rewardlab-plot .jupyter-matplotlib-toolbar button").count() >= 5
    tuner.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "browser-1-tuner.png"))
    _check_toolbars(page)

    before_stats = stats.inner_text()
    before_pixels = _plot_pixels(page)
    figures = tuner.locator(".jupyter-matplotlib-figure").count()
    rank_box = tuner.locator(f".rewardlab-rank-{CHANGED_RANK} input")
    rank_box.fill(str(CHANGED_VALUE))
    rank_box.press("Enter")
    page.wait_for_function(
        "(before) => document.querySelector('.rewardlab-tuner .rewardlab-stats').innerText !== before",
        arg=before_stats, timeout=60_000)
    page.wait_for_function(  # the same canvas, redrawn
        "([selector, before]) => document.querySelector(selector).toDataURL() !== before",
        arg=[PLOT_CANVAS, before_pixels], timeout=60_000)
    assert tuner.locator(".jupyter-matplotlib-figure").count() == figures  # in place: no figure added
    after_stats = stats.inner_text()
    assert after_stats != before_stats
    assert tuner.locator(".rewardlab-after-mean").inner_text() == expected["mean"]
    assert tuner.locator(".rewardlab-after-std").inner_text() == expected["std"]
    assert expected["raw_mean"] in after_stats and expected["raw_std"] in after_stats
    tuner.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "browser-2-changed.png"))

    # Hover the by-rank bars: the figure's footer reads the place under the mouse; a click opens a game.
    plot = tuner.locator(".rewardlab-plot").first
    plot.scroll_into_view_if_needed()
    box = page.locator(PLOT_CANVAS).first.bounding_box()
    x, y = box["x"] + 0.80 * box["width"], box["y"] + 0.55 * box["height"]
    page.mouse.move(x - 5, y)
    page.mouse.move(x, y)
    page.wait_for_function(
        "() => document.querySelector('.rewardlab-tuner .rewardlab-plot .jupyter-matplotlib-footer')"
        ".innerText.includes('place: mean reward')", timeout=30_000)
    hover = tuner.locator(".rewardlab-plot .jupyter-matplotlib-footer").first.inner_text()
    page.screenshot(path=str(OUTPUT / "browser-3-hover.png"))
    page.mouse.click(x, y)
    episode = tuner.locator(".rewardlab-episode .rewardlab-episode-table")
    page.wait_for_function(
        "() => { const t = document.querySelector('.rewardlab-tuner .rewardlab-episode-table');"
        " return t && t.innerText.includes('final_scores'); }", timeout=60_000)
    place = hover.split(" place")[0].strip()
    assert place in PLACES, hover
    text = episode.text_content()  # the summary row: "place" then the place ("rank" then its index before)
    assert (re.search(rf'"place"\s*"{place}"', text)
            or re.search(rf'"rank"\s*"{PLACES.index(place)}"', text)), text[:600]
    tuner.locator(".rewardlab-episode").scroll_into_view_if_needed()
    page.wait_for_function(DRAWN, arg=EPISODE_CANVAS, timeout=60_000)  # its plot drawn, not blank
    page.screenshot(path=str(OUTPUT / "browser-4-episode.png"))

    # Pin the candidate, save the state, change a rank, restore: the saved value comes back.
    tuner.locator("button.rewardlab-pin").click()
    page.wait_for_function(
        "() => document.querySelector('.rewardlab-tuner .rewardlab-pinned').innerText.includes('pin 1')",
        timeout=60_000)
    tuner.locator("button.rewardlab-save-state").click()
    page.wait_for_function(
        "() => document.querySelector('.rewardlab-tuner').innerText.includes('saved to')", timeout=60_000)
    rank_box.fill("-300")
    rank_box.press("Enter")
    page.wait_for_function(
        "(sel) => document.querySelector(sel).value === '-300.0'",
        arg=f".rewardlab-tuner .rewardlab-rank-{CHANGED_RANK} input", timeout=60_000)
    tuner.locator("button.rewardlab-restore").click()
    page.wait_for_function(
        "([sel, value]) => document.querySelector(sel).value === value",
        arg=[f".rewardlab-tuner .rewardlab-rank-{CHANGED_RANK} input", repr(CHANGED_VALUE)], timeout=60_000)
    assert tuner.locator(".rewardlab-after-mean").inner_text() == expected["mean"]
    assert "pin 1" in tuner.locator(".rewardlab-pinned").inner_text()
    tuner.locator(".rewardlab-pinned").scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "browser-5-pinned-restored.png"))

    tuner.locator("button.rewardlab-export").click()
    tuner.locator(".rewardlab-export-written").wait_for(timeout=EXPORT_S * 1000)
    page.wait_for_function(
        "() => document.querySelector('.rewardlab-tuner .rewardlab-export-result').innerText"
        ".includes('check-plugin')", timeout=EXPORT_S * 1000)
    result = tuner.locator(".rewardlab-export-result")
    result.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "browser-6-exported.png"))
    return result.inner_text()


# true once the canvas has a non-white pixel: ipympl drew the figure into it
DRAWN = ("(selector) => { const c = document.querySelector(selector); if (!c || !c.width) return false;"
         " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
         " for (let i = 0; i < d.length; i += 4) { if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) return true; }"
         " return false; }")


def _overlap(a, b) -> float:
    """Area shared by two rectangles [left, top, right, bottom]."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _check_toolbars(page) -> None:
    """Each widget, screenshot; in each of its figures the toolbar covers no pixel of the picture.

    The picture's canvas holds every title and legend matplotlib draws, so a toolbar outside it covers none
    (ipympl once put it over the right panel's title, "mean episode return by final ran").  The toolbar
    must still lie inside its canvas widget (which clips what sticks out) with its buttons shown.
    """
    for name in WIDGETS:
        widget = page.locator(f".jp-OutputArea-output {name}").first
        widget.wait_for(timeout=KERNEL_RUN_S * 1000)
        widget.scroll_into_view_if_needed()
        page.wait_for_timeout(500)  # a canvas scrolled into view may be sized and drawn again
        page.wait_for_function(DRAWN, arg=f"{name} .jupyter-matplotlib-canvas-div canvas", timeout=60_000)
        page.screenshot(path=str(OUTPUT / f"browser-widget-{name.split('-')[-1]}.png"))
        figures = widget.evaluate(FIGURE_BOXES)
        assert figures, f"{name}: no figure shown"
        for i, f in enumerate(figures):
            where = f"{name}, figure {i + 1} of {len(figures)}: {f}"
            assert f["toolbar"] is not None and f["buttons"] >= 5 and f["visibility"] == "visible", where
            toolbar, canvas, holder = f["toolbar"], f["canvas"], f["widget"]
            assert toolbar[2] > toolbar[0] and toolbar[3] > toolbar[1], where
            assert _overlap(toolbar, canvas) == 0.0, "the toolbar covers part of the figure: " + where
            assert _overlap(toolbar, holder) == _overlap(toolbar, toolbar), "the toolbar sticks out: " + where


def _plot_pixels(page) -> str:
    return page.evaluate("(selector) => document.querySelector(selector).toDataURL()", PLOT_CANVAS)


def _save_failure(page) -> None:
    """A screenshot and the page's text, to see what the browser showed when the test failed."""
    try:
        page.screenshot(path=str(OUTPUT / "browser-failure.png"), full_page=True, timeout=10_000)
        (OUTPUT / "browser-failure.txt").write_text(page.locator("body").inner_text(timeout=10_000))
    except Exception:  # the page may be gone; the original error matters more
        pass


def _written_path(result_text: str) -> str:
    first = result_text.splitlines()[0]
    assert first.startswith("wrote "), result_text
    return first[len("wrote "):].strip()


def test_missing_chromium_skips_only_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium found .* apt-get install -y chromium"):
        require_chromium(find=lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set, so this test may not be skipped"):
        require_chromium(find=lambda: None)
