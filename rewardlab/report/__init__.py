"""The stand-alone HTML report of a diagnosis: one file a reviewer reads in a browser without Python.

:func:`build_report` turns a diagnosis (its context and findings) into one HTML
page (inline style, embedded PNG pictures, no script, nothing fetched);
:func:`write_report` writes it atomically; ``rewardlab report CANDIDATE...
--data DATA --out report.html`` does both after :func:`rewardlab.diagnose`.
See :mod:`rewardlab.report.build` for the page's parts.

Examples
--------
>>> from rewardlab.report import build_report, write_report
>>> d = rewardlab.diagnose(frame, ["data/plugins/steps/potential_shaping.py"])  # doctest: +SKIP
>>> write_report("report.html", build_report(d.context, d.findings, errors=d.errors))  # doctest: +SKIP
"""

from rewardlab.report.build import DEFAULT_TITLE, build_report, diagnosis_report, write_report

__all__ = ["DEFAULT_TITLE", "build_report", "diagnosis_report", "write_report"]
