"""The efficiency family of ``composite``: problems with an efficient and a naive solution that differ measurably.

A problem of the family is up to two length-preserving steps from the step library (maps: ``Add 3 to each
number.``) followed by one *heavy* step whose obvious implementation is quadratic and whose better one is linear:
counting distinct numbers (``x not in nums[:i]`` against a set), numbers that occur once (``nums.count(x)`` against a
dict of counts), numbers whose shifted value is in the list (list against set membership), whether a number repeats,
and pairs with a given sum (a double loop against a dict). Each problem records both programs: ``reference_solution``
(linear, the yardstick of the runtime and memory reward terms and of relative runtime in evaluation) and
``naive_solution`` (quadratic). Beside the composite tests (edge cases, small random lists) it has ``large_tests``
lists of ``large_n`` numbers, on which the naive program takes tens to hundreds of milliseconds and the efficient one
well under one (figures in the docstring of tests/data/test_data_efficiency.py), inside the sandbox's 3 s per test.
The naive pair count also keeps a list of every pair's test, megabytes where the efficient one keeps a dict.

Memory-heavy steps (``MEMORY_HEAVY``, opt-in: ``efficiency_memory_frac`` of the family's problems, default 0): both
bodies visit every pair of positions (quadratic time, about the same), but the naive one first builds the list of all
pairs' values (``sum([a < b for ...])`` against ``sum(1 for ... if a < b)``): on ``efficiency_memory_large_n``
numbers it adds 10-45 MiB to the sandbox's peak-memory measure where the efficient one adds what every reference
does (about 2 MiB), at 1.2-1.8x its CPU time (tests/data/test_data_efficiency.py). A list only as long as the input
does not show there: the sandbox's forks reuse the memory their zygote freed after parsing the input.

SFT rows show the naive program for a share of the family (``efficiency_sft_naive_frac``, by a hash of the task id):
human-written training code is not always the efficient kind, and a Coder that learnt both forms is where the
runtime and memory reward terms can act. Plans do not name the algorithm, so the choice is the Coder's.

Written by hand because the point is this exact plan/naive/efficient triple with tests sized to the sandbox.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from corecode.data.composite import Chain, ChainItem, chain_problem, render_statement, run_gold
from corecode.data.config import CompositeParams
from corecode.data.schema import Problem, TestCase
from corecode.data.steps import STEP_BY_NAME, TYPES, Step

TAG = "efficiency"
# Length-preserving steps that may come first (a filter would shrink the large inputs; a modulo would leave so few
# distinct values that the naive membership tests end early).
PRE_STEPS = ("map_mul", "map_add", "map_square", "map_abs", "map_clip")
# Steps that keep distinct numbers distinct: the only ones before "repeats", whose large test has no repeat.
INJECTIVE_PRE = ("map_mul", "map_add")


@dataclass(frozen=True)
class Heavy:
    """A heavy step: its ``Step`` (plan, phrasings, types; ``code`` is unused) and its two bodies.

    ``efficient`` and ``naive`` are function-body lines over ``{v}`` (the current variable) and ``{k}``; the last
    line is the returned expression. ``distinct_large``: the large tests hold distinct numbers (a repeat would end
    the naive search early), one of them with a repeat at its very end.
    """

    step: Step
    efficient: tuple[str, ...]
    naive: tuple[str, ...]
    distinct_large: bool = False


def _heavy(name, out_t, plan, verbs, nps, efficient, naive, consts=(), distinct_large=False) -> Heavy:
    step = Step(name, "efficiency", "ints", out_t, plan, "", tuple(verbs), tuple(nps), tuple(consts))
    return Heavy(step, tuple(efficient), tuple(naive), distinct_large)


HEAVY: list[Heavy] = [
    _heavy(
        "distinct_count",
        "int",
        "Count the distinct numbers.",
        [
            "count the distinct numbers",
            "count how many different values there are",
            "find how many distinct values occur",
        ],
        [
            "the number of distinct values in {x}",
            "how many different numbers {x} holds",
            "the count of distinct values of {x}",
        ],
        ["len(set({v}))"],
        ["len([x for i, x in enumerate({v}) if x not in {v}[:i]])"],
    ),
    _heavy(
        "once_count",
        "int",
        "Count the numbers that occur exactly once.",
        [
            "count the numbers that occur exactly once",
            "count the values that appear only once",
            "find how many values are not repeated",
        ],
        [
            "the number of values occurring once in {x}",
            "how many numbers appear only once in {x}",
            "the count of unrepeated values of {x}",
        ],
        [
            "counts = {{}}",
            "for x in {v}:",
            "    counts[x] = counts.get(x, 0) + 1",
            "sum(1 for c in counts.values() if c == 1)",
        ],
        ["sum(1 for x in {v} if {v}.count(x) == 1)"],
    ),
    _heavy(
        "shift_member",
        "int",
        "Count the numbers x for which x + {k} is also in the list.",
        [
            "count the numbers x for which x + {k} also occurs",
            "count how many values have their value plus {k} present too",
            "find how many x have x + {k} in the list as well",
        ],
        [
            "the number of values x of {x} with x + {k} also in it",
            "how many x in {x} have x + {k} there too",
            "the count of values of {x} whose shift by {k} is present",
        ],
        ["present = set({v})", "sum(1 for x in {v} if x + {k} in present)"],
        ["sum(1 for x in {v} if x + {k} in {v})"],
        consts=(1, 2, 3, 4, 5, 7, 10),
    ),
    _heavy(
        "has_repeat",
        "bool",
        "Return whether some number occurs more than once.",
        ["report whether some number occurs twice", "check if any value repeats", "say whether a value appears again"],
        [
            "whether some value of {x} repeats",
            "True if a number occurs twice in {x} (else False)",
            "if any value of {x} appears more than once",
        ],
        ["len(set({v})) < len({v})"],
        ["any(x in {v}[i + 1:] for i, x in enumerate({v}))"],
        distinct_large=True,
    ),
    _heavy(
        "pair_sum_count",
        "int",
        "Count the pairs of positions i < j whose numbers add up to {k}.",
        [
            "count the pairs of positions whose numbers add up to {k}",
            "count the index pairs i < j summing to {k}",
            "find how many pairs of entries have sum {k}",
        ],
        [
            "the number of pairs in {x} adding up to {k}",
            "how many index pairs of {x} sum to {k}",
            "the count of pairs with sum {k} in {x}",
        ],
        [
            "seen = {{}}",
            "pairs = 0",
            "for x in {v}:",
            "    pairs += seen.get({k} - x, 0)",
            "    seen[x] = seen.get(x, 0) + 1",
            "pairs",
        ],
        ["sum([{v}[i] + {v}[j] == {k} for i in range(len({v})) for j in range(i + 1, len({v}))])"],
        consts=(-4, -2, 0, 1, 2, 3, 4, 6),
    ),
]
# Memory-heavy steps (``efficiency_memory_frac``, default none; why pairs, the module docstring).
MEMORY_HEAVY: list[Heavy] = [
    _heavy(
        "rising_pairs",
        "int",
        "Count the pairs of positions i < j where the number at j is larger than the number at i.",
        [
            "count the pairs of positions i < j whose later number is the larger",
            "count the index pairs i < j with a bigger value at j than at i",
            "find how many pairs of entries increase from the first to the second",
        ],
        [
            "the number of pairs i < j in {x} with a larger value at j",
            "how many index pairs of {x} go up from the first to the second",
            "the count of increasing pairs of positions in {x}",
        ],
        ["sum(1 for i in range(len({v})) for j in range(i + 1, len({v})) if {v}[i] < {v}[j])"],
        ["sum([{v}[i] < {v}[j] for i in range(len({v})) for j in range(i + 1, len({v}))])"],
    ),
    _heavy(
        "close_pairs",
        "int",
        "Count the pairs of positions i < j whose numbers differ by at most {k}.",
        [
            "count the pairs of positions whose numbers differ by at most {k}",
            "count the index pairs i < j at distance {k} or less in value",
            "find how many pairs of entries are within {k} of each other",
        ],
        [
            "the number of pairs in {x} differing by at most {k}",
            "how many index pairs of {x} are within {k} in value",
            "the count of pairs of {x} no more than {k} apart",
        ],
        ["sum(1 for i in range(len({v})) for j in range(i + 1, len({v})) if abs({v}[i] - {v}[j]) <= {k})"],
        [
            "gaps = [abs({v}[i] - {v}[j]) for i in range(len({v})) for j in range(i + 1, len({v}))]",
            "sum(1 for g in gaps if g <= {k})",
        ],
        consts=(0, 1, 2, 3, 5, 10),
    ),
    _heavy(
        "pair_product_sum",
        "int",
        "Add up the products of the numbers of all pairs of positions i < j.",
        [
            "add up the products of all pairs of positions i < j",
            "sum the product of every pair of entries",
            "find the total of the pairwise products",
        ],
        [
            "the sum of the products of all pairs of {x}",
            "the total of the pairwise products of {x}",
            "the products of every two entries of {x}, added up",
        ],
        ["sum({v}[i] * {v}[j] for i in range(len({v})) for j in range(i + 1, len({v})))"],
        ["products = [{v}[i] * {v}[j] for i in range(len({v})) for j in range(i + 1, len({v}))]", "sum(products)"],
    ),
]
HEAVY_BY_NAME = {h.step.name: h for h in HEAVY + MEMORY_HEAVY}


def _fill(line: str, var: str, const: object) -> str:
    line = line.replace("{v}", var)
    if const is not None:
        line = line.replace("{k}", repr(const))
    return line.replace("{{", "{").replace("}}", "}")


def render_code(chain: Chain, entry_point: str, naive: bool = False) -> str:
    """The function for a chain of (pre step,) heavy step: the heavy step's efficient or naive body."""
    arg, arg_ann = TYPES[chain.start_type]
    body: list[str] = []
    var = arg
    *pre, last = chain.items
    for item in pre:
        expr = item.step.code.replace("{v}", var)
        expr = expr.replace("{k}", repr(item.const)) if item.const is not None else expr
        var = TYPES[item.step.out_type][0]
        body.append(f"{var} = {expr}")
    heavy = HEAVY_BY_NAME[last.step.name]
    lines = [_fill(line, var, last.const) for line in (heavy.naive if naive else heavy.efficient)]
    body += lines[:-1] + [f"return {lines[-1]}"]
    header = f"def {entry_point}({arg}: {arg_ann}) -> {TYPES[chain.out_type][1]}:"
    return "\n".join([header] + ["    " + b for b in body]) + "\n"


def sample_chain(rng: random.Random, heavies: list[Heavy] = HEAVY) -> Chain:
    """A heavy step of ``heavies`` (the runtime-heavy ones unless told) with its constant, after zero, one or two
    distinct pre steps (probabilities 0.3, 0.4, 0.3)."""
    heavy = rng.choice(heavies)
    names = rng.sample(INJECTIVE_PRE if heavy.distinct_large else PRE_STEPS, rng.choices((0, 1, 2), (3, 4, 3))[0])
    items = [ChainItem(STEP_BY_NAME[name], rng.choice(STEP_BY_NAME[name].consts or (None,))) for name in names]
    items.append(ChainItem(heavy.step, rng.choice(heavy.step.consts) if heavy.step.consts else None))
    return Chain(tuple(items))


def small_inputs(rng: random.Random, n: int) -> list[list]:
    """Edge cases (empty, one number, a repeat) and short random lists with repeats."""
    out = [[], [rng.randint(-5, 9)], [2, 2, 5, -1, 2]]
    while len(out) < n:
        out.append([rng.randint(-4, 8) for _ in range(rng.randint(3, 9))])
    return [[x] for x in out[:n]]


def large_inputs(rng: random.Random, heavy: Heavy, n: int, count: int) -> list[list]:
    """``count`` lists of ``n`` numbers: with repeats (values in [-n, n]), or for ``distinct_large`` distinct ones,
    the second ending in a repeat of its last-but-one number (both naive searches run to the end)."""
    out = []
    for i in range(count):
        if heavy.distinct_large:
            values = rng.sample(range(-3 * n, 3 * n), n)
            if i % 2:
                values[-1] = values[-2]
        else:
            values = [rng.randint(-n, n) for _ in range(n)]
        out.append([values])
    return out


def naive_share(task_id: str, frac: float, seed: int) -> bool:
    """Whether a family problem's SFT rows show the naive program: a hash of seed and task id below ``frac``."""
    digest = hashlib.sha256(f"{seed}:naive:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < frac


def make_problem(chain: Chain, rng: random.Random, cfg: CompositeParams, task_id: str, split: str) -> Problem | None:
    """One family problem (None when its small tests have too few distinct outputs, as in composite). The large
    tests are left out of the train split: its programs are never run."""
    code = render_code(chain, cfg.entry_point)
    naive = render_code(chain, cfg.entry_point, naive=True)
    small = small_inputs(rng, cfg.n_tests)
    outputs = run_gold(code, cfg.entry_point, small)
    need = 2 if chain.out_type == "bool" else 3  # distinct outputs, so that a constant answer cannot pass
    if len({repr(o) for o in outputs}) < need or run_gold(naive, cfg.entry_point, small) != outputs:
        return None
    heavy = HEAVY_BY_NAME[chain.items[-1].step.name]
    large_n = cfg.efficiency_memory_large_n if heavy in MEMORY_HEAVY else cfg.efficiency_large_n
    large = large_inputs(rng, heavy, large_n, cfg.efficiency_large_tests) if split != "train" else []
    inputs = small + large
    outputs += run_gold(code, cfg.entry_point, large)
    candidates = sorted((i for i, a in enumerate(small) if len(a[0]) > 2), key=lambda i: len(repr(small[i])))
    examples = [(small[i], outputs[i]) for i in candidates[: cfg.n_examples]]
    statement = render_statement(chain, rng.choice(cfg.styles), rng, cfg.phrasing_variety)
    tests = [TestCase(input=repr(a), output=repr(o)) for a, o in zip(inputs, outputs)]
    tags = [i.step.kind for i in chain.items if i.step.kind != TAG] + [TAG]
    return chain_problem(chain, cfg, task_id, split, statement, examples, tests, code, tags, naive_solution=naive)


# Each chain belongs to one split, by a hash of its signature (twentieths of the space): no problem is in two splits,
# and no split's problems depend on another's size (test does not move when n_train changes).
_SPLIT_BUCKETS = {"val": range(0, 1), "test": range(1, 3), "dev": range(3, 5), "rl": range(5, 7), "train": range(7, 20)}


def _split_of(chain: Chain, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}:{TAG}:{chain.signature()}".encode()).digest()
    bucket = int.from_bytes(digest[:8], "big") % 20
    return next(split for split, buckets in _SPLIT_BUCKETS.items() if bucket in buckets)


# A split's share of the family's chain space is finite (about 1,800 train, 270 test chains at seed 0, half of them
# usable): after this many draws in a row give no new problem, the share counts as exhausted.
EXHAUSTED_AFTER = 50_000


def generate(split: str, n: int, start: int, cfg: CompositeParams, seed: int) -> list[tuple[Chain, Problem]]:
    """Up to ``n`` family problems of ``split`` with their chains, task ids from ``start``: the runtime-heavy ones
    (``HEAVY``), then ``round(efficiency_memory_frac * n)`` memory-heavy ones (``MEMORY_HEAVY``), each kind on its own
    RNG stream (with the share at 0 the memory stream is never drawn from). Only chains of the split's share of the
    family's space (``_split_of``). Fewer than asked when a kind's share runs out (``EXHAUSTED_AFTER`` draws in a
    row without a new problem): the caller fills the split with other problems."""
    n_memory = round(cfg.efficiency_memory_frac * n)
    out = _generate_kind(HEAVY, "", split, n - n_memory, start, cfg, seed)
    if n_memory:
        out += _generate_kind(MEMORY_HEAVY, ":memory", split, n_memory, start + len(out), cfg, seed)
    return out


def _generate_kind(
    heavies: list[Heavy], stream: str, split: str, n: int, start: int, cfg: CompositeParams, seed: int
) -> list[tuple[Chain, Problem]]:
    rng = random.Random(f"{seed}:composite:{split}:{TAG}{stream}")
    out: list[tuple[Chain, Problem]] = []
    seen: set[tuple] = set()
    fruitless = 0
    while len(out) < n and fruitless < EXHAUSTED_AFTER:
        fruitless += 1
        chain = sample_chain(rng, heavies)
        if chain.signature() in seen or _split_of(chain, seed) != split:
            continue
        prob = make_problem(chain, rng, cfg, f"composite/{split}/{start + len(out)}", split)
        if prob is None:
            continue
        seen.add(chain.signature())
        out.append((chain, prob))
        fruitless = 0
    return out
