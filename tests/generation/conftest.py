"""A tiny real checkpoint overfit on two functions, so greedy output is known (EOS, stop strings, batching)."""

import pytest

from corecode.models.testing import make_tiny_checkpoint

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]
F_BODY = "    return x + 1\n# done"
G_BODY = "    if y:\n        return y\n# end"


@pytest.fixture(scope="session")
def tiny_ckpt(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("gen") / "tiny", TEXTS, train_steps=60)


@pytest.fixture(autouse=True)
def _one_thread_everywhere(one_thread):
    """Every test in this directory runs with the suite's one torch thread (tests/conftest.py)."""
