"""Path constants: everything the pipeline produces lives under ``data/`` (cookiecutter-data-science style)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("data")
RAW = DATA / "raw"
PROCESSED = DATA / "processed"
CHECKPOINTS = DATA / "checkpoints"
REPORTS = DATA / "reports"
PARAMS_FILE = Path("params.yaml")
