"""The self-contained HTML report (no network request of any kind) and the comparison of two
revisions. Pure functions: metrics dicts and DataFrames in, HTML / SVG strings out."""

from evalpipe.report.build import ReportData, ReportOptions, build_figures, build_report

__all__ = ["ReportData", "ReportOptions", "build_figures", "build_report"]
