"""The host's replay of literal-assert check()s gives exactly the trusted judge's replay reply, on every HumanEval
problem it applies to, for right outputs, wrong values at each call, and exceptions at each call."""

from __future__ import annotations

import random

import pytest

from corecode.data.loaders.humaneval import load_humaneval
from corecode.sandbox import SandboxParams
from corecode.sandbox.judge_server import op_replay, parse_literal
from corecode.sandbox.prepare import materialise
from corecode.sandbox.sandbox import _Derived


def _in_process_judge(request: dict) -> dict:
    from corecode.sandbox import judge_server

    return judge_server.OPS[request["op"]](request)


@pytest.fixture(scope="module")
def prepared():
    """Every HumanEval problem's recorded tests (trusted reference code, recorded in this process)."""
    seed = SandboxParams().seed
    return [materialise(p, _in_process_judge, seed, 30.0) for p in load_humaneval()]


def _wrong(value, rng: random.Random):
    """A plain value of the same kind that differs from ``value`` (or None)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([-1, 1, 7])
    if isinstance(value, float):
        return rng.choice([value + 1e-9, value * 2 + 1, float("nan")])
    if isinstance(value, str):
        return value + "x" if rng.random() < 0.5 else value[:-1]
    if isinstance(value, (list, tuple)):
        return type(value)(list(value)[:-1]) if value and rng.random() < 0.5 else type(value)([*value, 0])
    return None


def test_literal_asserts_found_in_most_humaneval_checks(prepared):
    derived = [_Derived(p) for p in prepared]
    assert sum(d.asserts is not None for d in derived) >= 140  # 141 at the time of writing
    # a check with loops, helpers or tolerances is left to the judge
    assert _Derived(next(p for p in prepared if p.task_id == "HumanEval/32")).asserts is None


def test_literal_checks_are_prepared_from_their_text_as_the_judge_records_them(prepared):
    """A literal-assert check()'s calls and expected values are read from its text (no reference run); on every such
    HumanEval problem they are exactly what the judge records by running check() on the reference."""
    judge_calls = []

    def recording_judge(request: dict) -> dict:
        judge_calls.append(request["op"])
        return _in_process_judge(request)

    by_text = 0
    for problem, prep in zip(load_humaneval(), prepared, strict=True):
        recorded = _in_process_judge(
            {
                "op": "record",
                "program": problem.reference_solution,
                "check_code": problem.check_code,
                "entry": problem.entry_point,
                "seed": prep.seed,
            }
        )["calls"]
        assert list(zip(prep.inputs, prep.expected, strict=True)) == [tuple(c) for c in recorded], problem.task_id
        before = len(judge_calls)
        materialise(problem, recording_judge, prep.seed, 30.0)
        by_text += len(judge_calls) == before
    assert by_text >= 140  # 141 at the time of writing: only the other checks ran in the judge
    assert judge_calls and set(judge_calls) == {"record"}


def test_host_replay_equals_judge_replay(prepared):
    rng = random.Random(0)
    compared = 0
    for prep in prepared:
        derived = _Derived(prep)
        if derived.asserts is None:
            continue
        right = [{"v": prep.expected[k]} for k in range(prep.n_check)]
        cases = [right]
        for j in range(prep.n_check):
            wrong = list(right)
            wrong[j] = {"v": repr(_wrong(parse_literal(prep.expected[j]), rng))}
            cases.append(wrong)
            raised = list(right)
            raised[j] = {"exc": rng.choice(["ValueError", "IndexError", "NoSuchError"]), "err": "boom: x"}
            cases.append(raised)
        for outputs in cases:
            request = {
                "program": prep.program,
                "check_code": prep.check_code,
                "seed": prep.seed,
                "calls": prep.inputs[: prep.n_check],
                "outputs": outputs,
            }
            assert derived.replay(outputs) == op_replay(request), (prep.task_id, outputs)
            compared += 1
    assert compared > 1000


EDGE_TEXTS = [
    "True",
    "False",
    "None",
    "0",
    "-0",
    "00",
    "007",
    "-12",
    "+5",
    " 5",
    "5 ",
    "1_000",
    "9" * 999,
    "9" * 1001,
    "''",
    '""',
    "'a'",
    '"it\'s"',
    "'\"'",
    "'a' 'b'",
    "'''a'''",
    "'a\\nb'",
    "'a\nb'",
    "'a\tb'",
    "'a\x00b'",
    "'é'",
    "b'x'",
    "u'x'",
    "'unterminated",
    "'",
    "[1, 2]",
    "(1,)",
    "{'a': 1}",
    "1.5",
    "-1e-05",
    "nan",
    "[inf]",
    "true",
    "none",
    "--1",
    "0x10",
    "1j",
    "",
]


@pytest.mark.parametrize("text", EDGE_TEXTS)
def test_parse_literal_reads_exactly_what_literal_eval_reads(text):
    """parse_literal's direct reading of simple answers never differs from ast.literal_eval (value, type, error)."""
    import ast

    try:
        expected = ("ok", ast.literal_eval(text))
    except Exception as e:
        expected = ("error", type(e))
    try:
        got = ("ok", parse_literal(text))
    except Exception as e:
        got = ("error", type(e))
    if text in ("nan", "[inf]"):  # the float reprs that literal_eval refuses and parse_literal reads
        assert got[0] == "ok"
        return
    assert got == expected and type(got[1]) is type(expected[1])


def test_parse_literal_matches_literal_eval_on_random_reprs():
    import ast

    rng = random.Random(1)
    alphabet = "ab'\"\\ \n\t0-9é"
    for _ in range(5000):
        text = rng.choice(
            [
                repr(rng.randint(-(10**12), 10**12)),
                repr("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))),
                "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))),
                rng.choice(["'", '"']) + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))),
            ]
        )
        try:
            expected = ("ok", ast.literal_eval(text))
        except Exception as e:
            expected = ("error", type(e))
        try:
            got = ("ok", parse_literal(text))
        except Exception as e:
            got = ("error", type(e))
        assert got == expected, text
