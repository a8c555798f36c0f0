"""Reports for people: the pyramid summary in the terminal (pyramid.py) and the run console, one
self-contained HTML page per set of traces (build.py: `build_report`, `write_report`; docs/report.md).

The run console, one concept per module: load.py reads a trace as far as it can be read; run.py
makes a run's view in one pass (the metrics and their series, the transcript); downsample.py,
charts.py, header.py and html.py draw it; transcript.py keeps long runs light; markdown.py is the
summary; verdicts.py the marathon section's slot; secrets.py the check over what would be written;
session.py the pytest face (`--agentevals-report`).
"""
