"""What a run records and prints: summary.json (summary, its entries in entries), the provenance in it
(provenance), the parameters the loggers get (parameters), the per-step loss and sample rate (step_metrics), and the
closing block (report)."""

from lightning_runs.records.provenance import SaveConfigInRun
from lightning_runs.records.report import report_fit
from lightning_runs.records.step_metrics import LossMonitor, SampleRateMonitor
from lightning_runs.records.summary import RunSummary

__all__ = ["LossMonitor", "RunSummary", "SampleRateMonitor", "SaveConfigInRun", "report_fit"]
