from transformers import AutoTokenizer

from corecode.models.tokenizer import EOS_TOKEN, PAD_TOKEN, train_bpe_tokenizer

CODE = [
    "def add(a, b):\n    return a + b\n",
    "def clip(xs, lo, hi):\n    out = []\n    for x in xs:\n        if x < lo:\n            out.append(lo)\n"
    "        elif x > hi:\n            out.append(hi)\n        else:\n            out.append(x)\n    return out\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n"
    "    def push(self, x):\n        self.items.append(x)\n",
] * 20


def test_roundtrip_specials_and_determinism():
    tok = train_bpe_tokenizer(CODE, vocab_size=500)
    text = "def h(z):\n\tif z >= 10:\n        return 'é' * 3  # ünïcode\n"
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level: any text round-trips exactly
    assert (tok.pad_token, tok.eos_token) == (PAD_TOKEN, EOS_TOKEN)
    assert (tok.pad_token_id, tok.eos_token_id) == (0, 1)
    assert tok.padding_side == "left"
    assert 300 < len(tok) <= 500
    assert train_bpe_tokenizer(CODE, vocab_size=500).get_vocab() == tok.get_vocab()


def test_indentation_levels_are_single_tokens_whatever_follows():
    tok = train_bpe_tokenizer(CODE, vocab_size=500)
    for line in ("        if y:", "        return y", "        out.append(y)"):
        assert tok.convert_ids_to_tokens(tok(line)["input_ids"])[0] == "Ġ" * 7, line  # 8 spaces: 7 + " word"
    four = [tok.convert_ids_to_tokens(tok(s)["input_ids"])[0] for s in ("    return x", "    for x in y")]
    assert four == ["ĠĠĠ", "ĠĠĠ"]
    assert tok.convert_ids_to_tokens(tok("12")["input_ids"]) == ["1", "2"]  # digits one by one


def test_autotokenizer_reload_tokenizes_identically(tmp_path):
    # transformers v5 rebuilds a Qwen2Tokenizer for qwen2 checkpoints: the saved tokenizer must survive that.
    tok = train_bpe_tokenizer(CODE, vocab_size=500)
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    for text in CODE[:3] + ["x = [1, 2, 3]\n\n\n    # tail  \n"]:
        assert again(text)["input_ids"] == tok(text)["input_ids"]
    assert (again.pad_token_id, again.eos_token_id) == (0, 1)
