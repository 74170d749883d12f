"""Path constants: everything the pipeline produces lives under ``data/`` (cookiecutter-data-science style); caches
that outlive a project live in the user's cache directory (:func:`user_cache_dir`)."""

import os
from pathlib import Path

DATA = Path("data")
PROCESSED = DATA / "processed"
CHECKPOINTS = DATA / "checkpoints"
REPORTS = DATA / "reports"
PARAMS_FILE = Path("params.yaml")
# Where a stage command run by hand writes instead (corecode.cli_common.output_path): no DVC stage reads or writes here.
MANUAL = DATA / "work" / "manual"
# The validated params sections, one file each, that the stages depend on (corecode check-params, stage params).
PARAMS_DIR = DATA / "params"


def user_cache_dir(*parts: str) -> Path:
    """corecode's directory in the user's cache: ``$CORECODE_CACHE_DIR`` if set, else platformdirs' user cache
    directory (``$XDG_CACHE_HOME/corecode``, by default ``~/.cache/corecode``, on Linux)."""
    import platformdirs

    root = os.environ.get("CORECODE_CACHE_DIR") or platformdirs.user_cache_dir("corecode", appauthor=False)
    return Path(root, *parts)
