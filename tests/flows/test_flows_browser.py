"""What a user sees in the UIs after a small pipeline run, checked in headless Chromium (tests/flows/cdp.py).

A scratch git + DVC project whose stages are the real report and promote commands (``corecode metrics``, ``corecode
report``, ``corecode promote``) on fixture training logs and evaluations, with the repository's ``plots:`` and
``.dvc/plots.html``, runs twice through the Prefect flow (the second run after a ``report`` param change: the other
stages are skipped). Then a real Prefect server and MLflow server serve it, and each page must render: no blank
page, no empty chart, no broken image, no console error. ``CORECODE_SCREENSHOTS=docs/screenshots`` also saves a
screenshot of each page there (the ones in docs/screenshots/ were taken so).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from cdp import Browser, chromium_binary

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOGS = REPO / "tests" / "fixtures" / "train_logs"
METHODS = {
    "single_sft": 0.15,
    "single_grpo": 0.12,
    "planner_coder_sft": 0.31,
    "planner_coder_grpo": 0.36,
    "planner_coder_ptx": 0.33,
    "magrpo": 0.08,
    "planner_coder_grpo_retrieval": 0.30,
    "planner_coder_grpo_debug": 0.37,
}
SHOTS = os.environ.get("CORECODE_SCREENSHOTS")
# How many plots embedded in a page (data: URIs) have loaded as pictures.
LOADED_PLOTS = "[...document.images].filter(i => i.src.startsWith('data:image/png') && i.naturalWidth > 0).length"

# The stages: `train` stands in for the trainers (it replays fixture training logs into MLflow step metrics, as
# transformers' MLflowCallback logs them, and writes stand-in checkpoints); `evaluate` writes the evaluate stage's
# files; `report` and `promote` are the real commands.
STAGES_PY = """\
import json, os, pathlib, shutil, sys
from corecode.tracking.config import TrackingParams
from corecode.tracking.runs import stage_run

LOGS, METHODS = pathlib.Path({logs!r}), {methods!r}
tracking = TrackingParams(log_system_metrics=False)
stage = sys.argv[1]
if stage == "train":
    shutil.copytree(LOGS, "data/reports/train", ignore=shutil.ignore_patterns("*.md"))
    for name in ("sft_coder", "grpo_team"):
        with stage_run(name, {{"log": name}}, tracking) as run:
            for rec in json.loads((LOGS / f"{{name}}.json").read_text()):
                step = int(rec.pop("step"))
                run.log_metrics({{k: v for k, v in rec.items() if isinstance(v, (int, float))}}, step=step)
    for role in ("planner", "coder"):
        os.makedirs(f"data/checkpoints/grpo_{{role}}", exist_ok=True)
        pathlib.Path(f"data/checkpoints/grpo_{{role}}/config.json").write_text(json.dumps({{"role": role}}))
elif stage == "evaluate":
    with stage_run("evaluate", {{}}, tracking) as run:
        for method, rate in METHODS.items():
            d = pathlib.Path("data/reports/eval", method)
            d.mkdir(parents=True)
            benchmarks = {{}}
            for bench, p in (("composite_test", rate),):  # the embedded default's one benchmark
                n_pass = round(p * 100)
                rows = [{{"task_id": f"t{{i}}", "n": 1, "c": int(i < n_pass)}} for i in range(100)]
                (d / f"{{bench}}.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
                benchmarks[bench] = {{"pass_at_1": n_pass / 100, "pass_at_k": {{"pass_at_1": n_pass / 100}}}}
            (d / "summary.json").write_text(json.dumps({{"benchmarks": benchmarks}}))
        run.log_artifacts("data/reports/eval", "eval")
"""

DVC_STAGES = {
    "train": {
        "cmd": "python stages.py train",
        "deps": ["stages.py"],
        "outs": ["data/reports/train", "data/checkpoints"],
    },
    "evaluate": {"cmd": "python stages.py evaluate", "deps": ["stages.py"], "outs": ["data/reports/eval"]},
    "report": {
        "cmd": "corecode --pipeline-outputs metrics && corecode --pipeline-outputs report",
        "deps": ["data/reports/train", "data/reports/eval"],
        "params": ["report"],
        "outs": ["data/reports/report.md", "data/reports/metrics.json"],
    },
    "promote": {
        "cmd": "corecode --pipeline-outputs promote",
        "deps": ["data/reports/eval", "data/checkpoints"],
        "outs": [{"data/reports/promotion.json": {"cache": False}}],
    },
}


def _serve(cmd: list[str], url: str, env: dict, cwd: Path, log: Path, timeout_s: float = 180) -> subprocess.Popen:
    """Start a server and wait until ``url`` answers 200."""
    # its own process group: the servers start workers of their own (uvicorn, MLflow's job consumers), and
    # _stop ends them all
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if urllib.request.urlopen(url, timeout=5).status == 200:
                return proc
        except OSError:
            time.sleep(0.5)
    _stop(proc)
    raise RuntimeError(f"{url}: no answer after {timeout_s} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """End a server started by _serve and every process of its group."""
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _project(root: Path) -> Path:
    root.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=root, check=True)
    subprocess.run(["dvc", "config", "core.analytics", "false"], cwd=root, check=True)
    shutil.copy(REPO / ".dvc" / "plots.html", root / ".dvc" / "plots.html")
    subprocess.run(["dvc", "config", "plots.html_template", "plots.html"], cwd=root, check=True)
    (root / "stages.py").write_text(STAGES_PY.format(logs=str(LOGS), methods=METHODS))
    plots = yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": DVC_STAGES, "plots": plots}, sort_keys=False))
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["tracking"]["log_system_metrics"] = False
    params["report"]["n_resamples"] = 200
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (root / ".gitignore").write_text("mlflow.db*\nmlruns/\nmlartifacts/\n.corecode/\ndvc_plots/\n")
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "project"], cwd=root, check=True)
    return root


def _shot(browser: Browser, name: str) -> None:
    if SHOTS:
        browser.screenshot(REPO / SHOTS / f"{name}.png")


# Errors the UIs log on every page whatever the data, each with why it is not a fault of what is shown.
UI_NOISE = {
    # MLflow's UI asks who is logged in; a server without MLflow's auth app (the default) answers 404
    "404 (Not Found) http://127.0.0.1:*/ajax-api/2.0/mlflow/users/current",
    # the browser's note that a chart's resize handler left work for the next frame (the charts re-lay out as the
    # panel settles); the spec calls it benign and the chart is drawn, which the page's checks verify
    "ResizeObserver loop completed with undelivered notifications.",
    # favicons, not page content: the browser's own /favicon.ico probe (Prefect serves its icons under /ico/), and
    # Prefect's flow-run favicon /ico/<state>.svg, asked for as 'undefined' before the run's state has loaded
    "404 (Not Found) http://127.0.0.1:*/favicon.ico",
    "404 (Not Found) http://127.0.0.1:*/ico/undefined.svg",
}


def _noise(error: str) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(error, f"*{pattern}") for pattern in UI_NOISE)


def _clean(browser: Browser, page: str) -> None:
    """The page is not blank, shows no broken image and logged no error."""
    assert len(browser.text().strip()) > 100, f"{page}: blank page"
    assert browser.broken_images() == [], f"{page}: broken images {browser.broken_images()}"
    errors = [e for e in browser.errors if not _noise(e)]
    assert errors == [], f"{page}: console errors {errors}"


@pytest.mark.slow  # two flow runs of real stage commands, a Prefect and an MLflow server, Chromium: ~3 min
@pytest.mark.skipif(chromium_binary() is None, reason="chromium not installed (make test installs it with apt)")
def test_uis_show_the_pipeline_run(tmp_path, monkeypatch, free_port):
    from mlflow import MlflowClient
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_RETRY_EXTRA_CODES, temporary_settings

    from flows.pipeline import pipeline

    assert PREFECT_CLIENT_RETRY_EXTRA_CODES.value() == {500}  # tests/flows/conftest.py, as flows/start_local.sh
    project = _project(tmp_path / "proj")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    pport, mport = free_port(), free_port()
    prefect_env = {
        **env,
        "PREFECT_HOME": str(tmp_path / "prefect_home"),
        "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp_path / 'prefect.db'}",
        "PREFECT_UI_API_URL": f"http://127.0.0.1:{pport}/api",  # the UI's API otherwise defaults to port 4200
    }
    prefect_env.pop("PREFECT_API_URL", None)
    servers = [
        _serve(
            [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(pport)],
            f"http://127.0.0.1:{pport}/api/health",
            prefect_env,
            tmp_path,
            tmp_path / "prefect.log",
        )
    ]
    try:
        with temporary_settings({PREFECT_API_URL: f"http://127.0.0.1:{pport}/api"}):
            kw = dict(repo_dir=str(project), retry_backoff_s=0, retries=0)
            first = pipeline(**kw)
            assert [r["status"] for r in first] == ["ran"] * 4, first
            params = yaml.safe_load((project / "params.yaml").read_text())
            params["report"]["n_resamples"] = 300
            (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            second = pipeline(**kw, return_state=True)
            assert [r["status"] for r in second.result()] == ["skipped", "skipped", "ran", "skipped"]
            flow_run = second.state_details.flow_run_id
            with get_client(sync_client=True) as client:
                (report,) = client.read_artifacts(
                    artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["corecode-report"])), limit=1
                )
        res = subprocess.run(["dvc", "plots", "show"], cwd=project, env=env, capture_output=True, text=True)
        assert res.returncode == 0 and res.stderr == "", res.stdout + res.stderr
        n_plots = len(list((project / "data/reports/plots").glob("*.png")))

        client = MlflowClient(store)
        exp = client.get_experiment_by_name("corecode").experiment_id
        (train_run,) = client.search_runs(exp, "tags.`corecode.stage` = 'sft_coder'")
        (report_run,) = client.search_runs(exp, "tags.`corecode.stage` = 'report'", max_results=1)
        servers.append(
            _serve(
                [str(BIN / "mlflow"), "server", "--backend-store-uri", store, "--host", "127.0.0.1"]
                + ["--port", str(mport), "--workers", "1"],
                f"http://127.0.0.1:{mport}/health",
                {**env, "MLFLOW_TRACKING_URI": store, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},  # no job workers
                project,
                tmp_path / "mlflow.log",
            )
        )
        mlflow_ui, prefect_ui = f"http://127.0.0.1:{mport}", f"http://127.0.0.1:{pport}"
        with Browser() as browser:
            _check_mlflow(browser, mlflow_ui, exp, train_run.info.run_id, report_run.info.run_id, n_plots)
            _check_prefect(browser, prefect_ui, flow_run, report.id, n_plots)
            _check_dvc_plots(browser, project)
    except BaseException:
        for log in (tmp_path / "prefect.log", tmp_path / "mlflow.log"):  # the servers' side of a failure
            if log.exists():
                print(f"--- {log.name}, last 6000 characters ---\n{log.read_text()[-6000:]}")
        raise
    finally:
        for proc in servers:
            _stop(proc)


def _check_mlflow(browser: Browser, ui: str, exp: str, train_run: str, report_run: str, n_plots: int) -> None:
    from corecode.tracking.config import TrackingParams
    from corecode.tracking.runs import experiment_url

    # the link `corecode report` prints opens the experiment on its runs (not the GenAI traces view)
    url = experiment_url(TrackingParams(), ui=ui)
    assert url == f"{ui}/#/experiments/{exp}/runs?workflowType=machine_learning"
    browser.open(url, "document.body.innerText.includes('pipeline-')")
    assert "/runs" in browser.evaluate("location.hash") and "Traces" not in browser.evaluate(
        "document.querySelector('main') ? document.querySelector('main').innerText : ''"
    )
    _clean(browser, "MLflow experiment")
    _shot(browser, "mlflow_experiment")

    # a training run's charts: one chart per logged metric, each with a drawn line
    browser.open(
        f"{ui}/#/experiments/{exp}/runs/{train_run}/model-metrics?workflowType=machine_learning",
        "document.querySelectorAll('.js-plotly-plot .scatterlayer .trace path.js-line').length >= 3",
    )
    lines = browser.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot path.js-line')].map(p => p.getAttribute('d') || '')"
    )
    assert lines and all(len(d) > 10 for d in lines), f"empty chart: {lines}"
    assert "loss" in browser.text()
    _clean(browser, "MLflow training run charts")
    _shot(browser, "mlflow_training_charts")

    # the report as MLflow previews it (report.html, shown in a sandboxed iframe): the plots are pictures
    loaded = f"{LOADED_PLOTS} >= {n_plots}"
    browser.open(
        f"{ui}/#/experiments/{exp}/runs/{report_run}/artifacts/report.html?workflowType=machine_learning",
        "document.querySelector('iframe') !== null",
    )
    deadline = time.monotonic() + 30
    while not any(browser.evaluate_in_frames(loaded)) and time.monotonic() < deadline:
        browser.pump(0.5)
    assert browser.evaluate_in_frames(loaded) == [True], f"report.html: fewer than {n_plots} plots shown"
    assert browser.evaluate_in_frames("document.body.innerText.includes('corecode evaluation report')") == [True]
    _clean(browser, "MLflow report preview")
    _shot(browser, "mlflow_report")

    # the registry: the team's version carries the champion alias
    browser.open(
        f"{ui}/#/models/corecode-team?workflowType=machine_learning", "document.body.innerText.includes('champion')"
    )
    _clean(browser, "MLflow registry")
    _shot(browser, "mlflow_registry_champion")


def _check_prefect(browser: Browser, ui: str, flow_run, artifact_id, n_plots: int) -> None:
    # the flow run's task runs: the three up-to-date stages shown as Skipped, report as Completed
    names = "['train', 'evaluate', 'report', 'promote'].every(s => document.body.innerText.includes(s))"
    browser.open(f"{ui}/runs/flow-run/{flow_run}", names)
    browser.evaluate(
        "[...document.querySelectorAll('*')]"
        ".filter(e => e.children.length === 0 && e.textContent.trim() === 'Task Runs')[0].click()"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not browser.evaluate(
        "(document.body.innerText.match(/Skipped/g) || []).length >= 3"
        " && !document.body.innerText.includes('Beginning flow run')"
    ):
        browser.pump(0.5)
    text = browser.text()
    assert text.count("Skipped") >= 3 and "Beginning flow run" not in text, f"task runs tab: {text[:2000]}"
    _clean(browser, "Prefect flow run")
    _shot(browser, "prefect_flow_run")

    # the report artifact: every plot is an image that loaded
    browser.open(
        f"{ui}/artifacts/artifact/{artifact_id}",
        f"{LOADED_PLOTS} >= {n_plots}",
    )
    assert "corecode evaluation report" in browser.text()
    _clean(browser, "Prefect report artifact")
    _shot(browser, "prefect_report_artifact")


def _check_dvc_plots(browser: Browser, project: Path) -> None:
    """`dvc plots show`'s page, offline: every chart drawn with data marks."""
    page = project / "dvc_plots" / "index.html"
    n = len(yaml.safe_load((project / "dvc.yaml").read_text())["plots"])
    marks = textwrap.dedent("""
        [...document.querySelectorAll('.vega-embed')].map(e =>
            e.querySelectorAll('g.role-mark path, g.role-mark line, g.role-mark rect').length)
    """)
    counts = browser.open(page.as_uri(), f"(() => {{ const c = {marks}; return c.length >= {n} ? c : null; }})()")
    assert len(counts) == n and all(c > 0 for c in counts), f"empty charts: {counts}"
    _clean(browser, "dvc plots show")
    _shot(browser, "dvc_plots")
