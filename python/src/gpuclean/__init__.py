"""gpuclean for Python: the gpuclean binary's answers as typed objects, a supervised
``run``, a ``contained()`` block, and a pytest plugin (gpuclean.pytest_plugin).

    import gpuclean
    s = gpuclean.status()
    if not s.clean:
        for p in s.errors:
            print(p.message, "->", p.fix)

The binary is found through ``$GPUCLEAN`` or PATH; see the package's README.md.
"""

from ._binary import GpucleanError, find_binary
from .api import check, diff, history_report, kill, run, snapshot, status, who
from .model import (HOLDER_CLASSES, Activity, Diff, Difference, Frozen, Gpu, GpuProcess, HistoryReport,
                    Holder, KillResult, KillTarget, Memory, Nvml, Owner, Problem, ReportGroup,
                    ReportLeftover, RunLeftover, RunRecord, RunResult, Skipped, Snapshot, Status,
                    format_bytes)
from .scope import Containment, Leftover, contained

__version__ = "0.1.0"

__all__ = [
    "GpucleanError", "find_binary", "status", "check", "who", "kill", "snapshot", "diff", "run",
    "contained", "Containment", "Leftover", "Status", "Gpu", "GpuProcess", "Memory", "Holder",
    "Owner", "Problem", "Nvml", "KillResult", "KillTarget", "Snapshot", "Diff", "Difference",
    "RunRecord", "RunLeftover", "RunResult", "Skipped", "format_bytes", "Frozen", "HOLDER_CLASSES",
    "Activity", "history_report", "HistoryReport", "ReportGroup", "ReportLeftover",
]
