"""vthread: fit LLM threads to a context window, tell when an agent is stuck, guard streams.

This is the public API.
"""

from vthread.scan import HEURISTIC_NAMES, ScanResult, scan

__all__ = ["HEURISTIC_NAMES", "ScanResult", "scan"]
