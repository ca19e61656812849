"""What every widget shares: HTML tables and messages, number boxes, the session binding.

:func:`fmt`, :func:`table`, :func:`pre` and :func:`message` (the HTML the
widgets show); :class:`NumberText` (a text box for a number, parsed by the
session); :class:`SessionWidget` (a VBox bound to a session).  The layouts
:data:`NARROW`, :data:`NUMBER`, :data:`WIDE` and :data:`STYLE` keep the
tuners alike.  The overview is in :mod:`rewardlab.widgets`.

Examples
--------
>>> fmt(1e-13), fmt(2 / 3)
('0', '0.6667')
"""

from __future__ import annotations

import html
import math
import numbers

import ipywidgets as W
import numpy as np
import traitlets

from rewardlab.core.fronts import WIDGET, render
from rewardlab.sessions import Session
from rewardlab.sessions.state import default_state_path

__all__ = ["fmt", "table", "pre", "message", "number_text", "NumberText", "SessionWidget",
           "NARROW", "NUMBER", "WIDE", "STYLE"]


#: Layouts shared by the tuners: a narrow and a number box, a wide control, the description width.
NARROW = W.Layout(width="170px")
NUMBER = W.Layout(width="230px")
WIDE = W.Layout(width="320px")
STYLE = {"description_width": "70px"}


def fmt(x: float) -> str:
    """4 significant digits; rounding noise around 0 (``|x| < 1e-12``) shows as 0."""
    if x is None or not math.isfinite(x):
        return "–"
    return "0" if abs(x) < 1e-12 else f"{x:.4g}"


def table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th style='padding:0 8px;text-align:right'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='padding:0 8px;text-align:right'>{c}</td>" for c in row)
                   + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pre(text: str) -> str:
    return f"<pre style='margin:2px 0;font-size:11px;line-height:1.3'>{html.escape(text)}</pre>"


def message(text: str, *, color: str = "#b00020", mark: str = "⚠ ") -> str:
    """A message as HTML; a remedy in ``text`` (a :class:`~rewardlab.core.fronts.Text`) in the widgets' words.

    Examples
    --------
    >>> from rewardlab.core.errors import OutputExistsError
    >>> from rewardlab.core.fronts import text_of
    >>> message(text_of(OutputExistsError("r.py")), mark="")
    "<div style='color:#b00020;white-space:pre-wrap'>r.py already exists; tick &#x27;overwrite if it exists&#x27; to replace it</div>"
    """
    return f"<div style='color:{color};white-space:pre-wrap'>{mark}{html.escape(render(text, WIDGET))}</div>"


def number_text(value) -> str:
    """How a number is shown in a :class:`NumberText`: ints as digits, floats exactly (``repr``).

    Examples
    --------
    >>> number_text(25000), number_text(0.1), number_text(-150.0)
    ('25000', '0.1', '-150.0')
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a NumberText holds a number, not a bool")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return repr(float(value))


class _NumberOrText(traitlets.Unicode):
    """Text; a number assigned from Python is stored as its text (:func:`number_text`)."""

    def validate(self, obj, value):
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            value = number_text(value)
        return super().validate(obj, value)


class NumberText(W.Text):
    """A text box for a number: the session reads what is typed, the way a person reads it.

    ipywidgets' ``IntText`` / ``FloatText`` convert in the browser (and in
    Python ``IntText.value = 1.5`` silently becomes 1), so a typo turns into
    another number.  Here the text goes to the session as typed, which parses
    it (:func:`rewardlab.sessions.parse_number`) or refuses it with a message;
    the box then shows the value in use again.  Assigning a number from
    Python stores its text.

    Examples
    --------
    >>> box = NumberText(value=0.5)
    >>> box.value
    '0.5'
    """

    value = _NumberOrText(help="The text in the box (a number assigned from Python is stored as text).").tag(
        sync=True)


class SessionWidget(W.VBox):
    """A VBox bound to a session: controls -> ``try_update``, session observer -> ``_render``.

    Every tuner also gets the session's pin / undo / redo / save-state
    buttons (:attr:`state_bar`) and the pinned candidates' table
    (:attr:`pinned`); the logic is the session's.

    Attributes
    ----------
    pin_button, undo_button, redo_button : Button
        :meth:`Session.pin`, :meth:`Session.undo`, :meth:`Session.redo`.
    clear_pins_button : Button
        :meth:`Session.clear_pins`.
    state_path, state_overwrite, save_state_button, restore_button : widgets
        :meth:`Session.save_state` / :meth:`Session.restore` with the file typed.
    state_status : HTML
        What the last save / restore did.
    pinned : HTML
        :meth:`Session.compare_pinned` (empty while nothing is pinned).
    """

    def __init__(self, session: Session, **kwargs):
        super().__init__(**kwargs)
        self.session = session
        self._syncing = False
        self._rendered = -1
        self._pins_rendered = -1
        self.error = W.HTML(layout=W.Layout(min_height="0px"))
        self.error.add_class("rewardlab-error")
        self.pin_button = W.Button(description="Pin", icon="thumb-tack", tooltip="Keep the current candidate "
                                   "beside the live one")
        self.pin_button.add_class("rewardlab-pin")
        self.pin_button.on_click(lambda _: self.session.attempt(self.session.pin))
        self.clear_pins_button = W.Button(description="Clear pins")
        self.clear_pins_button.on_click(lambda _: self.session.attempt(self.session.clear_pins))
        self.undo_button = W.Button(description="Undo", icon="undo")
        self.undo_button.add_class("rewardlab-undo")
        self.undo_button.on_click(lambda _: self.session.attempt(self.session.undo))
        self.redo_button = W.Button(description="Redo", icon="repeat")
        self.redo_button.add_class("rewardlab-redo")
        self.redo_button.on_click(lambda _: self.session.attempt(self.session.redo))
        # rewardlab-state/<kind>.state.json under the kernel's working directory (ignored by git); a name typed
        # here is relative to that directory too
        self.state_path = W.Text(value=str(default_state_path(session.state_kind)), description="state",
                                 style=STYLE, layout=WIDE)
        self.state_path.add_class("rewardlab-state-path")
        self.state_overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False,
                                          layout=W.Layout(width="170px"))  # the words errors use (WIDGET)
        self.save_state_button = W.Button(description="Save state", icon="save")
        self.save_state_button.add_class("rewardlab-save-state")
        self.save_state_button.on_click(self._on_save_state)
        self.restore_button = W.Button(description="Restore", icon="folder-open")
        self.restore_button.add_class("rewardlab-restore")
        self.restore_button.on_click(self._on_restore)
        self.state_status = W.HTML()
        self.state_bar = W.VBox([
            W.HBox([self.undo_button, self.redo_button, self.pin_button, self.clear_pins_button]),
            W.HBox([self.state_path, self.state_overwrite, self.save_state_button, self.restore_button,
                    self.state_status])])
        self.pinned = W.HTML()
        self.pinned.add_class("rewardlab-pinned")
        session.observe(self._on_session)

    def _on_save_state(self, _button=None) -> None:
        path = self.state_path.value
        if self.session.attempt(self.session.save_state, path, overwrite=self.state_overwrite.value):
            self.state_status.value = f"<small>saved to {html.escape(str(self.session.state_path))}</small>"
        else:
            self.state_status.value = ""

    def _on_restore(self, _button=None) -> None:
        path = self.state_path.value
        if self.session.attempt(self.session.restore, path):
            self.state_status.value = f"<small>restored from {html.escape(path)}</small>"
        else:
            self.state_status.value = ""

    def _render_state(self) -> None:
        s = self.session
        self.undo_button.disabled = not s.can_undo
        self.redo_button.disabled = not s.can_redo
        self.clear_pins_button.disabled = not s.pinned
        self._pins_rendered = s.pins_version
        if not s.pinned:
            self.pinned.value = ""
            return
        self.pinned.value = ("<div>pinned candidates beside the live one (<i>label - live</i>: the difference):"
                             "</div><div style='max-height:320px;overflow:auto'>"
                             + s.compare_pinned()._repr_html_() + "</div>")

    def _bind(self, control: W.Widget, param: str) -> W.Widget:
        control.observe(lambda change: self._set(**{param: change["new"]}), names="value")
        return control

    def _set(self, **changes) -> None:
        if not self._syncing:
            self.session.try_update(**changes)

    def _call(self, method, *args) -> None:
        self.session.attempt(method, *args)

    def _open_episode(self, view, find) -> bool:
        """Open in ``view`` the episode ``find()`` names (a click on a plot); a refusal shows as a message."""
        opened: list = []
        if not self.session.attempt(lambda: opened.append(self.session.episode(find()))):
            return False
        view.show(opened[0])
        return True

    def _on_session(self, session: Session) -> None:
        self.error.value = "" if session.last_error is None else message(session.last_error)
        if session.version == self._rendered:
            if session.last_error is not None:  # a refused value: the controls go back to the values in use
                self._sync()
            if session.pins_version != self._pins_rendered:
                self._render_state()
                self._render()  # plots show the pins too
            return
        self._sync()
        self._render()
        self._render_state()
        self._rendered = session.version

    def _sync(self) -> None:
        self._syncing = True
        try:
            self._sync_controls()
        finally:
            self._syncing = False

    def refresh(self) -> None:
        """Redraw everything from the session (normally automatic)."""
        self._rendered = -1
        self._on_session(self.session)

    # subclasses
    def _sync_controls(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _render(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
