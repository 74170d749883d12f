"""``composite``: the embedded, procedurally generated task suite the demo learns on.

A problem chains 1-4 primitive steps from ``corecode.data.steps`` (filters, maps, reducers, windows, string and word
transforms, with guards such as "if the list is empty return -1"). Each problem gets

* a human-eval shaped ``prompt`` (typed ``def`` + docstring with the statement and ``n_examples`` examples),
* a natural-language statement in one of three styles — *sequential* ("keep the odd numbers, square them, add them
  up"), *nested* ("the sum of the squares of the odd numbers in nums": the reverse of the plan order) or *mixed* —
  with several phrasings per step, so the statement is not a copy of the plan,
* a gold ``plan`` (one regular numbered line per step, about one line of code each) and gold code,
* tests made by running the gold code on random inputs plus edge cases (empty, single, negatives, duplicates).

Splits measure what planning is for. ``train``/``val`` use chains of ``min_steps..train_max_steps`` steps that never
contain a *held-out pair* (a step ``a`` directly followed by a step ``b``, a ``heldout_pair_frac`` share of all
pairs). ``test`` is made of held-out compositions of three kinds: *longer* chains (``train_max_steps+1..
test_max_steps``, tag ``ood:length``), *unseen chains* whose step sequence never occurs in train/val although each
adjacent pair does (``ood:chain``), and chains with a held-out pair (``ood:pair``). ``dev`` is drawn the way ``test``
is, for tuning: no problem of it is a test problem, and ``rl`` (GRPO's problems) shares no step sequence with either;
its chains are drawn like train's, except a ``rl_longer_frac`` share of longer ones (still without a held-out pair).
Everything is deterministic from the seed; each split has its own RNG stream, so ``test`` does not move when
``n_train``, ``n_dev`` or ``n_rl`` changes.

The gold code is ours (generated from the trusted step table), so running it in-process to compute expected outputs is
safe; model-written code only ever runs in ``corecode.sandbox``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from corecode.data.config import CompositeParams
from corecode.data.schema import Problem, TestCase
from corecode.data.steps import (
    ORDER_INSENSITIVE,
    ORDER_ONLY,
    STEP_BY_NAME,
    STEPS,
    TERMINAL_TYPES,
    TYPES,
    Step,
)

GUARD_DEFAULTS = (-1, 0)
# Splits of held-out compositions (longer chains, unseen chains, held-out pairs): the test split and the dev split
# that tuning reads instead of it.
HELDOUT_SPLITS = ("test", "dev")
_BASE_NP = {"ints": ("nums", "the list nums", "the numbers in nums"), "str": ("s", "the string s", "the text s")}
_GUARD_PHRASES = (
    "If there is nothing left to choose from, return {d}.",
    "Return {d} when that list is empty.",
    "If the list is empty at that point, return {d}.",
)
_SEQ_OPENERS = ("Given {b}, ", "Starting from {b}, ", "Take {b}: ")
# How the mixed style refers to the value at the cut, by its type.
_REST_NPS = {
    "ints": ("the result", "what remains", "the resulting numbers"),
    "int": ("the result", "that number", "the value obtained"),
    "str": ("the result", "the resulting string", "that text"),
    "words": ("the result", "the resulting words", "those words"),
}
# fmt: off
_WORDS = ("apple", "sky", "tea", "banana", "box", "a", "Sun", "code42", "x7", "bob", "ant", "stop", "tree", "Echo",
          "sea", "bee", "it", "oak", "moon", "dog", "tide", "b2b", "ice", "Tom", "star", "ten", "eel", "sand")
# fmt: on


@dataclass(frozen=True)
class ChainItem:
    """One step of a problem with its drawn constant (None for steps without one)."""

    step: Step
    const: object = None


@dataclass(frozen=True)
class Chain:
    items: tuple[ChainItem, ...]
    guard_default: int = -1

    @property
    def start_type(self) -> str:
        return self.items[0].step.in_type

    @property
    def out_type(self) -> str:
        return self.items[-1].step.out_type

    def signature(self) -> tuple:
        guard = (self.guard_default,) if any(i.step.guard for i in self.items) else ()
        return tuple((i.step.name, i.const) for i in self.items) + guard

    def step_names(self) -> tuple[str, ...]:
        return tuple(i.step.name for i in self.items)

    def pairs(self) -> list[tuple[str, str]]:
        return [(a.step.name, b.step.name) for a, b in zip(self.items, self.items[1:])]


# ---------------------------------------------------------------------------------------------------------- steps


def select_steps(names_or_kinds: list[str] | None) -> list[Step]:
    """The step library, restricted to the given step names or kinds (None: all). Unknown entries are an error."""
    if not names_or_kinds:
        return list(STEPS)
    kinds = {s.kind for s in STEPS}
    unknown = [n for n in names_or_kinds if n not in STEP_BY_NAME and n not in kinds and n != "efficiency"]
    if unknown:
        raise ValueError(f"data.composite.steps: unknown step names/kinds {unknown}; known kinds: {sorted(kinds)}")
    wanted = set(names_or_kinds)
    return [s for s in STEPS if s.name in wanted or s.kind in wanted]


def all_pairs(steps: list[Step]) -> list[tuple[str, str]]:
    """Every type-compatible, allowed adjacent pair (a then b)."""
    return [(a.name, b.name) for a in steps for b in steps if _may_follow(a, b)]


def heldout_pairs(steps: list[Step], frac: float, seed: int) -> set[tuple[str, str]]:
    """A seeded ``frac`` share of all adjacent pairs, never seen in train/val."""
    pairs = all_pairs(steps)
    rng = random.Random(f"{seed}:composite:pairs")
    return set(rng.sample(pairs, round(frac * len(pairs))))


def _may_follow(a: Step, b: Step) -> bool:
    if a.out_type != b.in_type or a.out_type in TERMINAL_TYPES or a.name == b.name:
        return False
    if a.name in ORDER_ONLY and (b.name in ORDER_INSENSITIVE or b.name in ORDER_ONLY):
        return False  # the order step would be pointless (and untestable)
    if a.kind == b.kind == "case" or (a.kind == "arith" and b.kind == "arith"):
        return False  # lower-then-upper, add-then-add: one of them is redundant
    return True


def sample_chain(
    rng: random.Random,
    steps: list[Step],
    length: int,
    start_types: list[str],
    str_start_prob: float,
    banned: set[tuple[str, str]] = frozenset(),
) -> Chain | None:
    """A random chain of exactly ``length`` steps avoiding ``banned`` pairs; None if the walk dead-ends."""
    types = list(start_types)
    if len(types) == 1:
        cur = types[0]
    else:
        cur = "str" if rng.random() < str_start_prob else "ints"
    items: list[ChainItem] = []
    used: set[str] = set()
    for pos in range(length):
        last = pos == length - 1
        cands = [
            s
            for s in steps
            if s.in_type == cur
            and s.name not in used
            and (not items or (_may_follow(items[-1].step, s) and (items[-1].step.name, s.name) not in banned))
            and (last or s.out_type not in TERMINAL_TYPES)
            # a guard returns an int, so a guarded chain must not end in a bool
            and not (s.out_type == "bool" and any(i.step.guard for i in items))
        ]
        if not cands:
            return None
        step = rng.choice(cands)
        const = rng.choice(step.consts) if step.consts else None
        items.append(ChainItem(step, const))
        used.add(step.name)
        cur = step.out_type
    return Chain(tuple(items), rng.choice(GUARD_DEFAULTS))


# ------------------------------------------------------------------------------------------------------- rendering


def _fill(template: str, const: object) -> str:
    if isinstance(const, tuple):
        return template.replace("{k2}", repr(const[1])).replace("{k}", repr(const[0]))
    return template.replace("{k}", repr(const)) if const is not None else template


def render_plan(chain: Chain) -> str:
    """Numbered plan lines: one per step, plus a line for each empty-list guard."""
    lines: list[str] = []
    for item in chain.items:
        if item.step.guard:
            lines.append(f"If the list is empty, return {chain.guard_default}.")
        lines.append(_fill(item.step.plan, item.const))
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))


def render_code(chain: Chain, entry_point: str) -> str:
    """The gold function: one statement per step, ``return`` on the last, guards before guarded reducers."""
    arg, arg_ann = TYPES[chain.start_type]
    out_ann = TYPES[chain.out_type][1]
    body: list[str] = []
    var = arg
    for idx, item in enumerate(chain.items):
        expr = _fill(item.step.code, item.const).replace("{v}", var)
        if item.step.guard:
            body += [f"if not {var}:", f"    return {chain.guard_default}"]
        if idx == len(chain.items) - 1:
            body.append(f"return {expr}")
        else:
            var = TYPES[item.step.out_type][0]
            body.append(f"{var} = {expr}")
    lines = [f"def {entry_point}({arg}: {arg_ann}) -> {out_ann}:"] + ["    " + b for b in body]
    return "\n".join(lines) + "\n"


def _pick(rng: random.Random, options: tuple[str, ...], variety: int) -> str:
    return rng.choice(options[:variety])


def _nested(items: tuple[ChainItem, ...], base: str, rng: random.Random, variety: int) -> str:
    np = base
    for item in items:
        np = _fill(_pick(rng, item.step.nps, variety), item.const).replace("{x}", np)
    return np


def render_statement(chain: Chain, style: str, rng: random.Random, variety: int) -> str:
    """The problem statement in the given style (see the module docstring)."""
    base = _pick(rng, _BASE_NP[chain.start_type], variety)
    items = chain.items
    if style == "nested" or len(items) == 1 and style == "mixed":
        text = f"Return {_nested(items, base, rng, variety)}."
    elif style == "sequential":
        verbs = [_fill(_pick(rng, i.step.verbs, variety), i.const) for i in items]
        if len(verbs) == 1:
            body = verbs[0]
        else:
            body = ", then ".join(verbs[:-1]) + ", and finally " + verbs[-1]
        text = _pick(rng, _SEQ_OPENERS, variety).format(b=base) + body + ". Return the result."
    elif style == "mixed":
        cut = rng.randint(1, len(items) - 1)
        verbs = [_fill(_pick(rng, i.step.verbs, variety), i.const) for i in items[:cut]]
        first = _pick(rng, _SEQ_OPENERS, variety).format(b=base) + ", then ".join(verbs) + "."
        rest = _nested(items[cut:], _pick(rng, _REST_NPS[items[cut - 1].step.out_type], variety), rng, variety)
        text = f"{first} Return {rest}."
    else:
        raise ValueError(f"unknown statement style {style!r}")
    text = text[0].upper() + text[1:]
    if any(i.step.guard for i in items):
        text += " " + _pick(rng, _GUARD_PHRASES, variety).format(d=chain.guard_default)
    return text


def render_prompt(chain: Chain, statement: str, examples: list[tuple[list, object]], entry_point: str) -> str:
    """Human-eval shaped prompt: signature + docstring (statement, then ``>>>`` examples)."""
    header = render_code(chain, entry_point).splitlines()[0]
    doc = [f'    """{statement}']
    for args, out in examples:
        doc += [f"    >>> {entry_point}({', '.join(repr(a) for a in args)})", f"    {out!r}"]
    doc.append('    """')
    return header + "\n" + "\n".join(doc) + "\n"


# ----------------------------------------------------------------------------------------------------------- tests


def _string_consts(chain: Chain) -> list[str]:
    out: list[str] = []
    for item in chain.items:
        c = item.const
        for v in c if isinstance(c, tuple) else (c,):
            if isinstance(v, str) and v:
                out.append(v)
    return out


def random_inputs(chain: Chain, rng: random.Random, n: int) -> list[list]:
    """``n`` argument lists: edge cases first (empty, single, negatives, duplicates), then random ones."""
    if chain.start_type == "ints":
        fixed = [[], [rng.randint(-9, 12)], [rng.randint(-9, -1) for _ in range(4)]]
        dup_pool = [rng.randint(-5, 9) for _ in range(3)]
        fixed.append([rng.choice(dup_pool) for _ in range(6)])
        out = fixed[:n]
        while len(out) < n:
            size = rng.randint(2, 8)
            lo = rng.choice((-9, -3, 0))
            out.append([rng.randint(lo, 12) for _ in range(size)])
        return [[x] for x in out]
    consts = _string_consts(chain)
    seps = [c for c in consts if len(c) == 1 and not c.isalnum()] + [" "]

    def text(k: int) -> str:
        words = [rng.choice(_WORDS) for _ in range(k)]
        for c in consts:  # make sure the constants of the problem actually occur
            if rng.random() < 0.5 and words:
                i = rng.randrange(len(words))
                words[i] = words[i] + c if c.isalnum() else words[i]
        if words and rng.random() < 0.4:
            words.append(words[0])  # a duplicate word
        sep = rng.choice(seps)
        return sep.join(words)

    out = ["", rng.choice(_WORDS), text(3)][:n]
    while len(out) < n:
        out.append(text(rng.randint(2, 5)))
    return [[x] for x in out]


def run_gold(code: str, entry_point: str, args_list: list[list]) -> list[object]:
    """Expected outputs from the trusted gold code (generated by us from the step table, never by a model)."""
    ns: dict = {}
    exec(compile(code, "<composite-gold>", "exec"), ns)  # noqa: S102 - trusted, generated from the step table
    fn = ns[entry_point]
    return [fn(*[list(a) if isinstance(a, list) else a for a in args]) for args in args_list]


# ------------------------------------------------------------------------------------------------------- problems


def make_problem(
    chain: Chain, rng: random.Random, cfg: CompositeParams, task_id: str, split: str, extra_tags: list[str]
) -> Problem | None:
    """Render and test one chain; None when its tests are degenerate (too few distinct outputs, huge outputs)."""
    code = render_code(chain, cfg.entry_point)
    inputs = random_inputs(chain, rng, cfg.n_tests + 4)
    # dedupe inputs, keep order
    seen: set[str] = set()
    inputs = [a for a in inputs if not (repr(a) in seen or seen.add(repr(a)))][: cfg.n_tests]
    outputs = run_gold(code, cfg.entry_point, inputs)
    reprs = [repr(o) for o in outputs]
    need = 2 if chain.out_type == "bool" else 3  # distinct outputs, so that a constant answer cannot pass
    if len(set(reprs)) < min(need, len(reprs)) or max(len(r) for r in reprs) > 80:
        return None
    # Examples: the shortest inputs whose output is not the empty/default case.
    candidates = sorted(
        (i for i, (a, o) in enumerate(zip(inputs, outputs)) if a[0] and o not in ([], "", chain.guard_default)),
        key=lambda i: len(repr(inputs[i])),
    )
    examples = [(inputs[i], outputs[i]) for i in candidates[2 : 2 + cfg.n_examples] or candidates[: cfg.n_examples]]
    style = rng.choice(cfg.styles)
    statement = render_statement(chain, style, rng, cfg.phrasing_variety)
    kinds = list(dict.fromkeys(i.step.kind for i in chain.items))
    tests = [TestCase(input=repr(a), output=r) for a, r in zip(inputs, reprs)]
    return chain_problem(chain, cfg, task_id, split, statement, examples, tests, code, kinds + extra_tags)


def chain_problem(
    chain: Chain,
    cfg: CompositeParams,
    task_id: str,
    split: str,
    statement: str,
    examples: list,
    tests: list[TestCase],
    code: str,
    tags: list[str],
    **extra,
) -> Problem:
    """The Problem of a rendered chain: its prompt, gold plan and gold code, tests and tags (``extra``: further fields,
    e.g. the efficiency family's naive solution)."""
    return Problem(
        task_id=task_id,
        source="composite",
        split=split,
        prompt=render_prompt(chain, statement, examples, cfg.entry_point),
        io_mode="function",
        entry_point=cfg.entry_point,
        tests=tests,
        reference_solution=code,
        plan=render_plan(chain),
        difficulty=str(len(chain.items)),
        tags=tags,
        **extra,
    )


def _lengths(rng: random.Random, lo: int, hi: int) -> int:
    """Chain length in [lo, hi], weighted toward longer chains (there are few distinct short ones)."""
    return rng.choices(range(lo, hi + 1), weights=range(1, hi - lo + 2))[0]


def _generate(
    split: str,
    n: int,
    cfg: CompositeParams,
    seed: int,
    steps: list[Step],
    held: set[tuple[str, str]],
    exclude: set[tuple],
    seen_sequences: set[tuple[str, ...]] = frozenset(),
    seen_pairs: set[tuple[str, str]] = frozenset(),
    avoid_sequences: set[tuple[str, ...]] = frozenset(),
) -> Iterator[tuple[Chain, Problem]]:
    rng = random.Random(f"{seed}:composite:{split}")
    made, attempts = 0, 0
    seen = set(exclude)
    n_longer = round(n * cfg.test_longer_frac) if cfg.test_max_steps > cfg.train_max_steps else 0
    n_unseen = round(n * cfg.test_unseen_chain_frac)
    n_rl_longer = round(n * cfg.rl_longer_frac) if split == "rl" else 0
    while made < n:
        attempts += 1
        if attempts > 200 * n + 1000:
            raise RuntimeError(
                f"composite/{split}: only {made}/{n} distinct problems after {attempts} attempts; "
                "widen data.composite.steps or lower the split size"
            )
        if split not in HELDOUT_SPLITS:
            chain, tags = _training_chain(rng, steps, cfg, held, made < n_rl_longer, avoid_sequences), []
        else:
            kind = "length" if made < n_longer else "chain" if made < n_longer + n_unseen else "pair"
            chain, tags = _heldout_chain(rng, steps, cfg, held, kind, seen_sequences, seen_pairs)
        if chain is None or chain.signature() in seen:
            continue
        if split in HELDOUT_SPLITS and any(p in held for p in chain.pairs()):
            tags.append("ood:pair")
        prob = make_problem(chain, rng, cfg, f"composite/{split}/{made}", split, tags)
        if prob is None:
            continue
        seen.add(chain.signature())
        made += 1
        yield chain, prob


def _training_chain(
    rng: random.Random,
    steps: list[Step],
    cfg: CompositeParams,
    held: set[tuple[str, str]],
    longer: bool,
    avoid_sequences: set[tuple[str, ...]],
) -> Chain | None:
    """A chain of a training split (no held-out pair; ``longer``: longer than any SFT chain, for the rl split), or
    None when the draw failed or gave a step sequence to avoid."""
    lo, hi = (cfg.train_max_steps + 1, cfg.test_max_steps) if longer else (cfg.min_steps, cfg.train_max_steps)
    chain = sample_chain(rng, steps, _lengths(rng, lo, hi), cfg.start_types, cfg.str_start_prob, banned=held)
    return None if chain is not None and chain.step_names() in avoid_sequences else chain


def _heldout_chain(
    rng: random.Random,
    steps: list[Step],
    cfg: CompositeParams,
    held: set[tuple[str, str]],
    kind: str,
    seen_sequences: set[tuple[str, ...]],
    seen_pairs: set[tuple[str, str]],
) -> tuple[Chain | None, list[str]]:
    """A chain of a held-out split that is out of distribution by ``kind``, and its ood tags; the chain is None when
    the draw failed or is not of that kind. ``length``: longer than any training chain; ``chain``: an unseen sequence
    of seen pairs, no held-out pair; ``pair``: at least one held-out pair (tagged by the caller)."""
    if kind == "length":
        lengths = _lengths(rng, cfg.train_max_steps + 1, cfg.test_max_steps)
        return sample_chain(rng, steps, lengths, cfg.start_types, cfg.str_start_prob), ["ood:length"]
    length = rng.randint(max(2, cfg.min_steps), max(2, cfg.train_max_steps))
    if kind == "chain":
        chain = sample_chain(rng, steps, length, cfg.start_types, cfg.str_start_prob, banned=held)
        if chain is None or chain.step_names() in seen_sequences or not set(chain.pairs()) <= seen_pairs:
            return None, []
        return chain, ["ood:chain"]
    chain = sample_chain(rng, steps, length, cfg.start_types, cfg.str_start_prob)
    if chain is not None and not any(p in held for p in chain.pairs()):
        return None, []
    return chain, []


def generate_composite(
    cfg: CompositeParams | None = None, seed: int = 0, progress: bool = False
) -> dict[str, list[Problem]]:
    """The splits, ``{"train": [...], "val": [...], "test": [...], "dev": [...], "rl": [...]}`` (``dev`` and ``rl``
    only when ``n_dev`` / ``n_rl`` > 0), deterministic from ``seed``.

    ``val`` is drawn first and ``train`` avoids its compositions; ``test`` is disjoint from both by construction
    (every test chain is longer than any train chain, has a held-out pair, or has a step sequence neither uses).
    ``dev`` is drawn like ``test`` and shares no problem (chain and constants) with it; ``rl`` uses no step sequence
    of any other split.
    """
    cfg = cfg or CompositeParams()
    steps = select_steps(cfg.steps)
    held = heldout_pairs(steps, cfg.heldout_pair_frac, seed)
    if cfg.n_test and cfg.test_longer_frac < 1.0 and not held:
        raise ValueError("data.composite: held-out-pair test problems need heldout_pair_frac > 0")
    from rich.progress import track

    from corecode.data import efficiency

    family = cfg.efficiency_frac if not cfg.steps or efficiency.TAG in cfg.steps else 0.0

    def run(
        split: str,
        n: int,
        exclude: set,
        sequences: set = frozenset(),
        pairs: set = frozenset(),
        avoid: set = frozenset(),
    ) -> list[tuple[Chain, Problem]]:
        n_family = round(family * n)  # the split's last problems: corecode/data/efficiency.py
        family_made = efficiency.generate(split, n_family, n - n_family, cfg, seed)
        if len(family_made) < n_family:  # the family's share of the split ran out: other problems fill the rest
            print(
                f"composite/{split}: {len(family_made)} efficiency problems, not {n_family} (the family's chains "
                f"for this split are used up); {n_family - len(family_made)} more of the others",
                file=sys.stderr,
            )
            n_family = len(family_made)  # their task ids follow the others'
            family_made = [
                (c, p.model_copy(update={"task_id": f"composite/{split}/{n - n_family + i}"}))
                for i, (c, p) in enumerate(family_made)
            ]
        gen = _generate(split, n - n_family, cfg, seed, steps, held, exclude, sequences, pairs, avoid)
        made = list(track(gen, total=n - n_family, description=f"composite {split}", disable=not progress))
        return made + family_made

    val = run("val", cfg.n_val, set())
    train = run("train", cfg.n_train, {c.signature() for c, _ in val})
    sequences = {c.step_names() for c, _ in train + val}
    pairs = {p for c, _ in train + val for p in c.pairs()}
    test = run("test", cfg.n_test, set(), sequences, pairs)
    out = {"train": [p for _, p in train], "val": [p for _, p in val], "test": [p for _, p in test]}
    dev = []
    if cfg.n_dev:  # after test, on its own RNG stream: test does not move when n_dev changes
        dev = run("dev", cfg.n_dev, {c.signature() for c, _ in test}, sequences, pairs)
        out["dev"] = [p for _, p in dev]
    if cfg.n_rl:  # last, on its own RNG stream: the other splits do not move when n_rl changes
        used = sequences | {c.step_names() for c, _ in test + dev}
        rl = run("rl", cfg.n_rl, {c.signature() for c, _ in train + val + test + dev}, avoid=used)
        out["rl"] = [p for _, p in rl]
    return out
