"""Every Python script under benchmarks/ and notebooks/ answers ``--help``: exit status 0 and an argparse usage line;
every shell script under benchmarks/ and deploy/ parses (``bash -n``).
No other test runs most of these scripts, so an import that a refactor broke, or an argparse error, otherwise shows
only when someone next runs the script (benchmarks/large_test.sh went unnoticed that way).

Each script runs as ``__main__`` with ``sys.argv = [script, "--help"]`` and ``sys.path[0]`` its folder, as
``python SCRIPT --help`` runs it, in its own process forked from one runner process (the current interpreter, cwd the
repo root) that has imported torch and transformers' Qwen2 classes once beforehand: the scripts that import them would
otherwise pay 5-10 s each for that import. The preloaded modules change nothing a script sees: it still executes its
own imports into fresh globals, so a missing or renamed import fails here as it does from the shell.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(str(p.relative_to(ROOT)) for d in ("benchmarks", "notebooks") for p in (ROOT / d).glob("*.py"))

RUNNER = r"""
import json, os, runpy, sys, tempfile, time
try:  # third-party imports only: a corecode module is imported by each script itself
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
except ImportError:
    pass
results = {}
for script in sys.argv[1:]:
    with tempfile.TemporaryFile() as out:
        sys.stdout.flush(); sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.dup2(out.fileno(), 1); os.dup2(out.fileno(), 2)
            code = 1
            try:
                sys.argv = [script, "--help"]
                sys.path[0] = os.path.dirname(os.path.abspath(script))
                runpy.run_path(script, run_name="__main__")
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                import traceback; traceback.print_exc()
            finally:
                sys.stdout.flush(); sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + 120
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9); os.waitpid(pid, 0); rc = "timeout"
                break
            time.sleep(0.02)
        out.seek(0)
        results[script] = {"rc": rc, "output": out.read().decode(errors="replace")}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def helps() -> dict[str, dict]:
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *SCRIPTS], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_scripts_found():
    assert len(SCRIPTS) > 10 and "notebooks/sweep.py" in SCRIPTS and "benchmarks/grpo_log_summary.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(helps, script):
    got = helps[script]
    assert got["rc"] == 0, f"{script} --help exited {got['rc']}:\n{got['output'][-3000:]}"
    assert "usage:" in got["output"], f"{script} --help printed no usage line:\n{got['output'][-3000:]}"


SHELL_SCRIPTS = sorted(
    str(p.relative_to(ROOT)) for p in [*(ROOT / "benchmarks").glob("*.sh"), *(ROOT / "deploy").glob("*.sh")]
)


@pytest.mark.parametrize("script", SHELL_SCRIPTS)
def test_shell_script_parses(script):
    """`bash -n`: the shell scripts (mostly GPU runs, which no test can start here) at least parse."""
    proc = subprocess.run(["bash", "-n", script], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"{script}: {proc.stderr}"
