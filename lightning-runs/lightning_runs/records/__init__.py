"""What a run records: summary.json (RunSummary), its provenance and saved config (provenance: SaveConfigInRun), the
parameters and scores every logger gets (hparams), and the closing block of a fit (report)."""

from lightning_runs.records.provenance import SaveConfigInRun
from lightning_runs.records.report import report_fit
from lightning_runs.records.run_summary import RunSummary

__all__ = ["RunSummary", "SaveConfigInRun", "report_fit"]
