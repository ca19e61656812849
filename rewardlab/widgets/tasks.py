"""Long widget work off the notebook's thread: a progress bar, what is being done, and a Cancel button.

:class:`BackgroundTask` runs one piece of work at a time (an export with its
round-trip check, applying a plug-in from the board) in a thread, so the
notebook stays responsive, shows its progress and stops it at its next
check point when Cancel is clicked.  The work is a session method taking
``progress(fraction, message)`` and a :class:`~rewardlab.sessions.CancelToken`;
what it returns or raises goes to the widget's ``finish(result, error)``:
every failure ends as a message, never as a hang or a silent stop.

Examples
--------
>>> task = BackgroundTask(background=False)
>>> task.start(lambda progress, token: 6 * 7, finish=lambda result, error: print(result, error))
42 None
True
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as W

from rewardlab.core.errors import ExportCancelled, PluginRunCancelled, RewardlabError
from rewardlab.core.fronts import text_of
from rewardlab.sessions import CancelToken
from rewardlab.widgets.base import message

__all__ = ["BackgroundTask", "error_html", "ExportRow", "ExportsInBackground"]


def error_html(error: BaseException, what: str) -> str:
    """How a widget shows what stopped background work: a cancel in grey, rewardlab's message, or any other error.

    A rewardlab error's remedy is worded for widgets (:data:`rewardlab.core.fronts.WIDGET`): "tick 'overwrite
    if it exists'", not ``overwrite=True``.

    Examples
    --------
    >>> error_html(ValueError("bad"), "export of 'a.py'")
    "<div style='color:#b00020;white-space:pre-wrap'>⚠ export of &#x27;a.py&#x27; failed: ValueError: bad</div>"
    """
    if isinstance(error, (ExportCancelled, PluginRunCancelled)):
        return message(str(error), color="#555555", mark="")
    if isinstance(error, RewardlabError):
        return message(text_of(error))
    return message(f"{what} failed: {type(error).__name__}: {error}")


class BackgroundTask(W.HBox):
    """One piece of long work at a time, in a thread, with progress and Cancel.

    Parameters
    ----------
    background : bool
        Run in a thread (False: in the caller, e.g. in tests).
    css : str
        Class prefix of the parts (``<css>-cancel``, ``<css>-progress``,
        ``<css>-status``), for the browser and its tests.

    Attributes
    ----------
    cancel_button : Button
        Enabled while the work runs.
    progress : FloatProgress
        Visible while the work runs.
    status : HTML
        What the work reports it is doing.
    """

    def __init__(self, *, background: bool = True, css: str = "rewardlab-task"):
        super().__init__()
        self.background = bool(background)
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True)
        self.cancel_button.add_class(f"{css}-cancel")
        self.cancel_button.on_click(lambda _: self.cancel())
        self.progress = W.FloatProgress(value=0.0, min=0.0, max=1.0,
                                        layout=W.Layout(width="320px", visibility="hidden"))
        self.progress.add_class(f"{css}-progress")
        self.status = W.HTML()
        self.status.add_class(f"{css}-status")
        self.children = [self.cancel_button, self.progress, self.status]
        self._token: CancelToken | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """True from :meth:`start` until the work returns (then ``finish`` runs; :meth:`wait` waits for it)."""
        return self._token is not None

    def start(self, work: Callable[[Callable[[float, str], None], CancelToken], object], *,
              finish: Callable[[object, BaseException | None], None], name: str = "rewardlab-task") -> bool:
        """Run ``work(progress, token)``, then ``finish(result, None)`` or ``finish(None, error)``.

        Returns False (and runs nothing) while another work of this task runs.
        """
        if self.running:
            return False
        self._token = token = CancelToken()
        self.cancel_button.disabled = False
        self.progress.value = 0.0
        self.progress.layout.visibility = "visible"
        self.status.value = ""
        if self.background:
            self._thread = threading.Thread(target=self._run, args=(work, finish, token), name=name, daemon=True)
            self._thread.start()
        else:
            self._run(work, finish, token)
        return True

    def cancel(self) -> None:
        """Ask the running work to stop at its next check point (nothing is kept)."""
        if self._token is not None:
            self._token.cancel()
            self.cancel_button.disabled = True
            self.status.value = "<small>cancelling…</small>"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the work to finish; True when none runs any more."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def report(self, fraction: float, message: str) -> None:
        """Show progress: ``fraction`` of the work done, ``message`` what it is doing."""
        self.progress.value = min(max(float(fraction), 0.0), 1.0)
        self.status.value = f"<small>{html.escape(message)}</small>"

    def _run(self, work, finish, token: CancelToken) -> None:
        result, error = None, None
        try:
            result = work(self.report, token)
        except Exception as exc:  # noqa: BLE001 - handed to finish, which shows it
            error = exc
        finally:
            self._token = None
            self.cancel_button.disabled = True
            self.progress.layout.visibility = "hidden"
            self.status.value = ""
        try:
            finish(result, error)
        finally:
            self._thread = None


class ExportRow:
    """A tuner's export controls wired to its session's ``export``: what every tuner's Export button does.

    The tuner builds and lays out its own widgets (its labels, classes and
    extra options); this runs the export in ``task`` with the file and
    "overwrite" as they are at the click, keeps the button disabled while it
    runs, says what it is doing, then shows the tuner's rendering of the
    result or :func:`error_html` of what stopped it.

    Parameters
    ----------
    path : ipywidgets.Text
        The file box.
    overwrite : ipywidgets.Checkbox
        "overwrite if it exists".
    button : ipywidgets.Button
        The Export button (disabled while an export runs).
    result : ipywidgets.HTML
        Where the outcome is shown.
    task : BackgroundTask
        Where the export runs.

    Examples
    --------
    >>> row = ExportRow(W.Text("r.py"), W.Checkbox(False), W.Button(), W.HTML(), BackgroundTask(background=False))
    >>> row.start(lambda path, *, overwrite, progress, cancel: f"wrote {path}", doing="writing",
    ...           shown=lambda result: result, name="export")
    True
    >>> row.result.value, row.button.disabled
    ('wrote r.py', False)
    """

    def __init__(self, path: W.Text, overwrite: W.Checkbox, button: W.Button, result: W.HTML, task: BackgroundTask):
        self.path, self.overwrite, self.button, self.result, self.task = path, overwrite, button, result, task

    def start(self, export: Callable, *, doing: str, shown: Callable[[object], str], name: str,
              done: Callable[[], None] | None = None) -> bool:
        """Run ``export(path, overwrite=, progress=, cancel=)``; False (nothing started) while one runs.

        ``doing`` is shown (in italics) while it runs, ``shown(result)`` (HTML)
        when it returns; ``done`` is called last (default: the button is
        enabled again), in the export's thread.
        """
        if self.task.running:
            return False
        path, overwrite = self.path.value, self.overwrite.value
        self.button.disabled = True
        self.result.value = f"<i>{html.escape(doing)}</i>"

        def finish(result, error: BaseException | None) -> None:
            self.result.value = error_html(error, f"export of {path!r}") if error is not None else shown(result)
            if done is None:
                self.button.disabled = False
            else:
                done()

        return self.task.start(lambda progress, token: export(path, overwrite=overwrite, progress=progress,
                                                              cancel=token), finish=finish, name=name)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background export to finish; True when none is running any more."""
        return self.task.wait(timeout)


class ExportsInBackground:
    """What a tuner with an :class:`ExportRow` (as ``self.exporter``) offers its callers: waiting for the export."""

    exporter: ExportRow

    def wait_for_export(self, timeout: float | None = None) -> bool:
        """Wait for a background export to finish; True when none is running any more.

        Examples
        --------
        >>> tuner.export_button.click(); tuner.wait_for_export()  # doctest: +SKIP
        True
        """
        return self.exporter.wait(timeout)
