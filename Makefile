# corecode: the two commands of the README, plus helpers.
#   make run   set up .venv and reproduce the embedded-default pipeline (corecode repro: dvc repro with independent
#              stages side by side; the optional baselines/dvc.yaml run only when params.yaml's `baselines` lists them)
#   make test  set up .venv, check lint and formatting (ruff), and run the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch lies on the project's machines; on a GPU box set TORCH_SPEC to the CUDA build you want.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# dvc stages call `corecode`, `dvc` and `python` by name: put the project's venv first on PATH.
export PATH := $(abspath $(BIN)):$(PATH)
# No usage telemetry from MLflow, Prefect or DVC (the pipeline talks only to local stores).
export DO_NOT_TRACK := true
export MLFLOW_DISABLE_TELEMETRY := true
export DVC_NO_ANALYTICS := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
# Tiny models on a busy small CPU: one intra-op thread is several times faster than two contended ones
# (docs/benchmarks.md); `make run` overrides this with RUN_THREADS.
export OMP_NUM_THREADS ?= 1

.PHONY: setup sandbox-deps browser-deps run lint format test test-e2e test-deploy test-fast prefect mlflow-ui services services-stop clean-venv

# --no-compile: byte-compiling every installed module took about half of the install here (docs/benchmarks.md);
# Python compiles the modules a run imports on first use instead, and keeps them: make lets it write the bytecode
# even where PYTHONDONTWRITEBYTECODE is set (without it every process recompiled torch and transformers, about half
# of a `corecode solve` on the embedded model: 13 s CPU against 7 s).
unexport PYTHONDONTWRITEBYTECODE
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --no-compile "$(TORCH_SPEC)"
	$(BIN)/pip install -q --no-compile -e ".[dev]"
	touch $(STAMP)

# The sandbox isolates untrusted code with bubblewrap (namespaces, read-only root); install it when we can.
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "bubblewrap (bwrap) is not installed: install it (e.g. 'sudo apt-get install bubblewrap')" >&2; exit 1; fi; }

setup: $(STAMP) sandbox-deps

# The browser test (tests/flows/test_flows_browser.py) opens the MLflow and Prefect UIs and `dvc plots show`'s page
# in Debian's headless Chromium; only `make test` needs it.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is not installed: the browser test is skipped (e.g. 'sudo apt-get install chromium')" >&2; fi; }

# dvc repro runs one stage at a time; corecode repro runs the pipeline's independent stages side by side
# (dvc repro --single-item each): the three SFT runs, the GRPO runs and the evaluations, RUN_JOBS at once with
# RUN_THREADS torch threads each. On the idle 2-core VM two stages of one thread each finish sooner than one stage of
# two threads, since a stage's second thread adds less than a second core does (docs/benchmarks.md). A stage's thread
# count is fixed, so what it computes does not depend on how many run beside it. Tests keep one thread (pytest runs
# sandbox workers beside the model).
RUN_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
RUN_THREADS ?= 1

# README's results block is rewritten from data/reports/metrics.json after the pipeline, outside DVC (no stage
# depends on README.md).
run: setup
	$(BIN)/corecode repro --jobs $(RUN_JOBS) --threads $(RUN_THREADS)
	$(BIN)/corecode report --readme README.md

# ruff (configured in pyproject.toml): lint and formatting are part of the test suite.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The browser test runs in its own pytest process: its Prefect and MLflow servers and the flows tests' session-wide
# prefect_test_harness do not share one process (together, the harness's teardown hangs). --durations lists the
# slowest tests: the suite has to stay within `make test`'s 20 minutes on a 2-core machine.
test: lint browser-deps
	$(BIN)/python -m pytest -q --durations=15 -m "not e2e" --ignore=tests/flows/test_flows_browser.py
	$(BIN)/python -m pytest -q tests/flows/test_flows_browser.py

# The longest end-to-end checks (marker e2e) are kept out of `make test`'s 20 minutes; .ci/run runs them after
# make test: the hub-checkpoint profile path under dvc repro (about 6 minutes here) and the share-nothing deployment
# (real PostgreSQL, MLflow and Prefect servers, sshd, workers in their own checkouts; about 11 minutes).
test-e2e: setup
	$(BIN)/python -m pytest -q -m e2e

test-deploy: setup
	$(BIN)/python -m pytest -q tests/deploy/test_share_nothing.py

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

# Local Prefect server + workers (see docs/prefect.md) and the MLflow UI on the pipeline's sqlite store.
prefect: setup
	bash flows/start_local.sh

# Shared services of a share-nothing deployment (docs/deploy.md): PostgreSQL, the MLflow tracking server, the Prefect
# server and the DVC remote's sshd, all under .services/ (CORECODE_SERVICES_DIR); workers source its services.env.
# `make run` does not use them (sqlite and the local remote stay the embedded default).
services: setup
	bash deploy/services.sh start

services-stop:
	bash deploy/services.sh stop

mlflow-ui: setup
	@$(BIN)/python -c "from corecode.tracking.config import TrackingParams; from corecode.tracking.runs import \
	  experiment_url; print('MLflow UI:', experiment_url(TrackingParams()) or 'http://127.0.0.1:5000 (no runs yet)')"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5000

clean-venv:
	rm -rf $(VENV)
