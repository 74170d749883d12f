"""A tiny real checkpoint (untrained: these tests need real weights and a real tokenizer, not known outputs)."""

import pytest

from corecode.models.testing import make_tiny_checkpoint

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]


@pytest.fixture(scope="session")
def tiny_ckpt(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("models") / "tiny", TEXTS, train_steps=0)
