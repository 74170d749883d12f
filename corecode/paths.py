"""Path constants: everything the pipeline produces lives under ``data/`` (cookiecutter-data-science style)."""

from pathlib import Path

DATA = Path("data")
PROCESSED = DATA / "processed"
CHECKPOINTS = DATA / "checkpoints"
REPORTS = DATA / "reports"
PARAMS_FILE = Path("params.yaml")
