"""Reward diagnostics on recorded data: is it shaping, how far apart are two rewards, terms, traps.

See :mod:`rewardlab.diagnostics.base` for findings, candidates, the context and
the registry, and ``docs/diagnostics.md`` for each diagnostic's definition.
"""

from rewardlab.diagnostics.base import (
    BUILTIN_DIAGNOSTICS, MAX_ROWS, VERDICTS, Candidate, DiagnosisContext, DiagnosisOptions, Diagnostic, Finding,
    findings_table, get_diagnostic, register_diagnostic, registered_diagnostics, unregister_diagnostic,
    worst_verdict,
)

__all__ = [
    "BUILTIN_DIAGNOSTICS", "MAX_ROWS", "VERDICTS", "Candidate", "DiagnosisContext", "DiagnosisOptions",
    "Diagnostic", "Finding", "findings_table", "get_diagnostic", "register_diagnostic",
    "registered_diagnostics", "unregister_diagnostic", "worst_verdict",
]
