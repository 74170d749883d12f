"""A tiny real checkpoint overfit on two functions, so greedy output is known (EOS, stop strings, batching)."""

import pytest
import torch

from corecode.models.testing import make_tiny_checkpoint

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]
F_BODY = "    return x + 1\n# done"
G_BODY = "    if y:\n        return y\n# end"


@pytest.fixture(scope="session")
def tiny_ckpt(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("gen") / "tiny", TEXTS, train_steps=60)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models are overhead-bound: one intra-op thread is much faster than two on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
