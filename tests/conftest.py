"""Suite-wide hygiene: no telemetry, a private MLflow store and cache, and no MLflow state leaking between tests.

MLflow keeps the active experiment and tracking URI in module globals; a test that points MLflow at its own sqlite
store in tmp_path would otherwise leave the next test looking up an experiment id that does not exist there.
"""

import os

import pytest

for _k, _v in {
    "DO_NOT_TRACK": "true",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DVC_NO_ANALYTICS": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(_k, _v)


@pytest.fixture(scope="session")
def free_port():
    """Picks a free TCP port on 127.0.0.1 (``corecode.deploy.local.free_port``): for the tests that start servers
    (MLflow, Prefect, PostgreSQL, sshd, `corecode serve`)."""
    from corecode.deploy.local import free_port as pick

    return pick


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """corecode's user cache (the sandbox's materialised tests) in a throwaway directory, not the user's."""
    if "CORECODE_CACHE_DIR" not in os.environ:
        os.environ["CORECODE_CACHE_DIR"] = str(tmp_path_factory.mktemp("corecode-cache"))
    yield


@pytest.fixture(scope="session", autouse=True)
def _private_mlflow_store(tmp_path_factory):
    """Stages run in tests log to a throwaway store, never to the repo's mlflow.db."""
    if "MLFLOW_TRACKING_URI" not in os.environ:
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    yield


@pytest.fixture(autouse=True)
def _reset_mlflow_globals():
    # Trainers' MLflow callbacks export MLFLOW_EXPERIMENT_ID & co. into os.environ; put the environment back.
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    yield
    for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
        if k not in saved:
            del os.environ[k]
    os.environ.update(saved)
    import sys

    if "mlflow" not in sys.modules:
        return
    import mlflow
    from mlflow.tracking import fluent
    from mlflow.tracking._tracking_service import utils as tracking_utils

    while mlflow.active_run() is not None:
        mlflow.end_run()
    fluent._active_experiment_id = None
    tracking_utils._tracking_uri = None


@pytest.fixture(scope="module")
def one_thread():
    """One torch intra-op thread for a module's tests: tiny models are overhead-bound, and on a shared 2-core machine
    one thread runs them several times faster than two spin-waiting ones. A module asks for it with
    ``pytestmark = pytest.mark.usefixtures("one_thread")`` or by naming it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
