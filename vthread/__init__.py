"""vthread: fit LLM threads to a context window, tell when an agent is stuck, guard streams.

This is the public API.
"""

from vthread.arrow import scan_arrow
from vthread.build import BuildResult, build_thread
from vthread.cycle import (
    describe_thread_cycle,
    has_repeated_activity_tail,
    has_repeated_result_run,
    has_repeated_suffix,
    is_thread_cyclic,
)
from vthread.fingerprint import fingerprint, message_fingerprint
from vthread.guard import Guard, GuardReason
from vthread.replay import GuardTrip, has_repeated_text_runs, scan_texts
from vthread.scan import HEURISTIC_NAMES, ScanResult, scan
from vthread.textrun import has_repeated_text_run
from vthread.volatile import masked_thread

__all__ = [
    "HEURISTIC_NAMES",
    "BuildResult",
    "Guard",
    "GuardReason",
    "GuardTrip",
    "ScanResult",
    "build_thread",
    "describe_thread_cycle",
    "fingerprint",
    "has_repeated_activity_tail",
    "has_repeated_result_run",
    "has_repeated_suffix",
    "has_repeated_text_run",
    "has_repeated_text_runs",
    "is_thread_cyclic",
    "masked_thread",
    "message_fingerprint",
    "scan",
    "scan_arrow",
    "scan_texts",
]
