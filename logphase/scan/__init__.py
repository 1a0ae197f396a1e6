"""The scan: each line of a run's sources once through its matcher into one timeline, a line or a batch at a time."""

from logphase.scan.feed import ScanResult, SourceFeed
from logphase.scan.files import scan
from logphase.scan.session import SourceScan

__all__ = ["ScanResult", "SourceFeed", "SourceScan", "scan"]
