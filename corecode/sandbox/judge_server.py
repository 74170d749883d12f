"""Trusted helper process: runs benchmark code (reference solutions, ``check`` functions) -- never candidate code.

It lives in its own process (stdlib only, started with ``python -I``) so that a slow or hanging check can be killed
and so that ``random.seed`` and the check's globals never touch the host process. Requests are length-prefixed JSON
on stdin; each reply likewise on stdout.

ops:
  record:  run ``check(recorder)`` with the reference solution behind the recorder; return every call's
           (repr(args), repr(result)) -- the trusted test inputs and expected outputs of a check()-style problem.
  replay:  run ``check(stand_in)`` where the stand-in returns the candidate's recorded outputs call by call (parsed
           plain data, or re-raised exceptions): the trusted check decides, tolerances and property checks included.
  call:    call the reference ``entry`` on each argument list (function tests whose expected outputs are missing).
With ``cls`` set (LeetCode's ``class Solution``), the entry is that class's method, on a fresh instance per call.
"""

import ast
import builtins
import copy
import json
import math
import os
import random
import re
import struct
import sys

PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_compiled = {}


# The protocol pipes are moved off fds 0/1 so that benchmark code that prints or reads stdin cannot corrupt them.
_IN = _OUT = None


def read_frame():
    head = _IN.read(4)
    if len(head) < 4:
        return None
    return json.loads(_IN.read(struct.unpack(">I", head)[0]))


def write_frame(obj):
    data = json.dumps(obj).encode()
    _OUT.write(struct.pack(">I", len(data)) + data)
    _OUT.flush()


def is_plain(x, depth=0):
    if depth > 100 or type(x) not in PLAIN:
        return False
    if type(x) in (list, tuple, set, frozenset):
        return all(is_plain(v, depth + 1) for v in x)
    if type(x) is dict:
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in x.items())
    return True


class _Floats(ast.NodeTransformer):
    def visit_Name(self, node):
        if node.id in ("nan", "inf"):
            return ast.copy_location(ast.Constant(float(node.id)), node)
        return node


_CONSTANTS = {"True": True, "False": False, "None": None}
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,999})")


def parse_literal(text):
    """``ast.literal_eval`` plus the non-literal float reprs ``nan`` and ``inf``.

    The commonest answers (a bool or None, a decimal int, a printable ASCII string without quotes or backslashes
    inside) are read directly, exactly as ``literal_eval`` reads them and about 20 times faster; anything else goes
    through ``literal_eval``.
    """
    if type(text) is str:
        if text in _CONSTANTS:
            return _CONSTANTS[text]
        if _INT.fullmatch(text):
            return int(text)
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and text.isascii() and text.isprintable():
            inner = text[1:-1]
            if text[0] not in inner and "\\" not in inner:
                return inner
    try:
        return ast.literal_eval(text)
    except ValueError:
        if "nan" not in text and "inf" not in text:
            raise
    return ast.literal_eval(_Floats().visit(ast.parse(text, mode="eval")))


def literal(x):
    """repr(x) if x is plain data that survives a round trip through parse_literal, else raise ValueError."""
    text = repr(x)
    if not is_plain(x):
        raise ValueError(f"not plain data: {type(x).__name__}")
    back = parse_literal(text)
    if not (back == x or (isinstance(x, float) and math.isnan(x))) and "nan" not in text:
        raise ValueError(f"repr does not round-trip: {text[:80]}")
    return text


# The names LeetCode's judge imports before ``class Solution`` (kept equal to zygote.CLASS_PRELUDE; both files are
# standalone, stdlib-only scripts).
CLASS_PRELUDE = (
    "from typing import *\nfrom collections import *\nfrom heapq import *\nfrom bisect import *\n"
    "from itertools import *\nfrom functools import *\n"
    "import collections, heapq, bisect, itertools, functools, math, string, re, random, operator\n"
)


def namespace(program, check_code, cls=None):
    key = (program, check_code)
    if key not in _compiled:
        _compiled[key] = (
            compile(program, "<reference>", "exec"),
            compile(check_code, "<check>", "exec") if check_code else None,
        )
    prog, chk = _compiled[key]
    g = {"__name__": "__reference__"}
    if cls:
        exec(CLASS_PRELUDE, g)
    exec(prog, g)
    if chk is not None:
        exec(chk, g)
    return g


def entry_of(g, req):
    """The reference's callable: ``g[entry]``, or ``cls().entry`` bound anew per call for class problems."""
    cls, name = req.get("cls"), req["entry"]
    if not cls:
        return g[name]
    return lambda *args: getattr(g[cls](), name)(*args)


def describe(exc):
    msg = f"{type(exc).__name__}: {exc}"
    return msg if len(msg) <= 300 else msg[:297] + "..."


def op_record(req):
    g = namespace(req["program"], req["check_code"], req.get("cls"))
    ref = entry_of(g, req)
    calls = []

    def recorder(*args, **kwargs):
        if kwargs:
            raise ValueError("check() passes keyword arguments; only positional calls can be recorded")
        args_text = literal(list(args))
        result = ref(*copy.deepcopy(args))
        calls.append([args_text, literal(result)])
        return result

    random.seed(req["seed"])
    g["check"](recorder)
    return {"calls": calls}


def exception_from(name, message):
    """A builtin exception of type ``name`` (RuntimeError("name: message") for anything else) carrying ``message``."""
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass
    return RuntimeError(f"{name}: {message}")


def op_replay(req):
    g = namespace(req["program"], req["check_code"])
    calls, outputs = req["calls"], req["outputs"]
    state = {"n": 0}

    def stand_in(*args, **kwargs):
        j = state["n"]
        state["n"] = j + 1
        if j >= len(calls) or kwargs or repr(list(args)) != calls[j]:
            raise RuntimeError("check() called the candidate differently than in the trusted recording")
        out = outputs[j]
        if "v" in out:
            return parse_literal(out["v"])
        raise exception_from(out.get("exc", "RuntimeError"), out.get("err", "no result"))

    random.seed(req["seed"])
    try:
        g["check"](stand_in)
    except BaseException as e:
        return {"ok": False, "fail_index": max(state["n"] - 1, 0), "err": describe(e)}
    return {"ok": True, "fail_index": None, "err": ""}


def op_call(req):
    g = namespace(req["program"], None, req.get("cls"))
    ref = entry_of(g, req)
    return {"outputs": [literal(ref(*parse_literal(text))) for text in req["inputs"]]}


OPS = {"record": op_record, "replay": op_replay, "call": op_call}


def main():
    global _IN, _OUT
    _IN, _OUT = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin, sys.stdout = open(os.devnull), open(os.devnull, "w")
    os.chdir(os.environ.get("TMPDIR", "/tmp"))
    sys.setrecursionlimit(10_000)
    while True:
        req = read_frame()
        if req is None:
            return
        try:
            reply = OPS[req["op"]](req)
        except BaseException as e:  # a broken benchmark record must not take the judge down
            reply = {"error": describe(e)}
        write_frame(reply)


if __name__ == "__main__":
    main()
