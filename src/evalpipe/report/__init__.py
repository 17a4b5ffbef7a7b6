"""The self-contained HTML report (no network request of any kind) and the comparison of two
revisions. Pure functions: metrics dicts and DataFrames in, HTML / SVG strings out."""

from evalpipe.report.assemble import build_figures, build_report
from evalpipe.report.data import ReportData, ReportOptions

__all__ = ["ReportData", "ReportOptions", "build_figures", "build_report"]
