# `make help` lists the targets. `make train` and `make test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONFIG ?= configs/digits.yaml
SWEEP ?= sweeps/digits.yaml
FORMAT ?= onnx
ARGS ?=
# One pytest worker per core, each file on one worker (its module fixtures run once), one torch thread each.
PYTEST := OMP_NUM_THREADS=1 $(PY) -m pytest -n auto --dist loadfile

# The environment is uv.lock's, installed by uv (docs/development.md, Dependencies): the project and the library
# editable and the `dev` group (every extra among it), which uv syncs by default, as `uv run` does. uv is the one on
# PATH, else one that make installs into .uv/ with pip: a venv of its own works where `pip install --user` is refused
# (PEP 668) and needs no change to PATH. Its version range is pyproject.toml's required-version, written once.
UV_BOOTSTRAP := $(CURDIR)/.uv/bin/uv
UV ?= $(or $(shell command -v uv),$(UV_BOOTSTRAP))
UV_VERSION = $(shell sed -n 's/^required-version = "\([^"]*\)".*/\1/p' pyproject.toml)
# What the targets that run uv wait for: nothing where uv was found.
UV_NEEDED := $(filter $(UV_BOOTSTRAP),$(UV))
# Exported: the scripts a make target runs (new-project, update-template, the tests' copies) use this uv too. uv
# syncs the venv VENV names, so another Python gets a venv of its own: make test VENV=.venv-3.13 UV_PYTHON=3.13
export UV
export UV_PROJECT_ENVIRONMENT := $(VENV)

# The template's own targets (benchmarks, new-project); a copy has no template.mk.
-include template.mk

.DEFAULT_GOAL := help
.PHONY: help install lock upgrade train evaluate-seeds test test-slow test-all lint format tensorboard runs clean sweep export schema completion docs docs-serve audit ci

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'
	@echo "More GPUs or machines, FSDP, torch.compile, sweep workers: docs/scaling.md"

# Built in a folder of its own and renamed into place, so .uv/bin/uv exists only whole: a second make started meanwhile
# (two terminals of a fresh checkout) took a uv still being written as made ("Text file busy"). Where two build at
# once, the second rename finds .uv there and keeps it. Only uv's binary is used: the venv's scripts name the folder.
$(UV_BOOTSTRAP):
	@set -e; building=$$(mktemp -d "$(CURDIR)/.uv-building-XXXXXX"); trap 'rm -rf "$$building"' EXIT; \
	echo "bootstrapping uv into $(abspath $(@D)/..)"; \
	$(PYTHON) -m venv "$$building"; "$$building/bin/python" -m pip install --quiet "uv$(UV_VERSION)"; \
	$(PYTHON) -c 'import os, sys; os.rename(*sys.argv[1:])' "$$building" "$(abspath $(@D)/..)" 2>/dev/null || test -x $@ \
	|| { echo "error: $(abspath $(@D)/..) holds no uv (a bootstrap stopped midway?): remove it, then run make again" >&2; exit 2; }

# A pyproject.toml changed since uv.lock was written is refused in one line (uv's own takes three and names uv).
# Offline: a lock that matches is known so at once; one that does not sends uv resolving, which ends in one of these
# two messages whether or not its cache holds the index it would need.
LOCK_STALE = error: pyproject.toml changed since uv.lock was written: run make lock, then commit uv.lock
define CHECK_LOCK
said=$$($(UV) lock --check --offline 2>&1) || { case "$$said" in *"needs to be updated"*|*"No solution found"*) \
	echo "$(LOCK_STALE)";; *) echo "$$said";; esac >&2; exit 2; }
endef

# The editable sources' bytecode, as uv compiles site-packages' (pyproject.toml, compile-bytecode): where .pyc files
# are not written (PYTHONDONTWRITEBYTECODE), every command compiled them again, 40 ms of `fit --help`'s CPU.
EDITABLE = $(wildcard project/ lightning-runs/lightning_runs/)
install: $(UV_NEEDED) ## create .venv and install exactly what uv.lock pins (uv sync --locked)
	@$(CHECK_LOCK)
	$(UV) sync --locked --quiet
	@$(if $(EDITABLE),$(PY) -m compileall -q $(EDITABLE))

lock: $(UV_NEEDED) ## write uv.lock anew from pyproject.toml, keeping every pin still allowed
	$(UV) lock

upgrade: $(UV_NEEDED) ## move every package in uv.lock to its newest allowed release, then install
	$(UV) lock --upgrade
	$(UV) sync --locked --quiet

train: install ## fit CONFIG (default configs/digits.yaml), then test its best checkpoint; extra flags in ARGS
	$(PY) -m project fit --config $(CONFIG) --test_best true $(ARGS)

evaluate-seeds: install ## train and test CONFIG for seeds 0-4 beside SVC and logistic regression (runs/seeds.json)
	$(PY) -m project seeds --configs '[$(CONFIG)]' --baselines classification $(ARGS)

sweep: install ## run or resume the Optuna sweep SWEEP (default sweeps/digits.yaml); extra flags in ARGS
	$(PY) -m project sweep --config $(SWEEP) $(ARGS)

export: install ## export CKPT=<file.ckpt> as FORMAT (onnx, torchscript or pt2), beside the checkpoint
	$(if $(CKPT),,$(error give the checkpoint: make export CKPT=runs/digits/version_0/checkpoints/best.ckpt))
	$(PY) -m project export --ckpt_path $(CKPT) --format $(FORMAT) $(ARGS)

schema: install ## write configs/schema.json, the JSON Schema editors check configs with (docs/making-it-yours.md)
	$(PY) -m project schema --output configs/schema.json

completion: install ## write .venv/completion.bash: `source` it, then the package's own command completes (fit --<TAB>)
	$(PY) -m project completion --output $(VENV)/completion.bash

# The update is the template's own: its newest scripts/update_template.py, run from a clone of it (a copy holds
# none of the template's tooling). Only python3, git and uv (to relock where the copy's own dependencies need it),
# before any install: it works while .venv does not.
define UPDATE_TEMPLATE
import json, subprocess, sys, tempfile
from pathlib import Path
def refuse(line):
    print(f"error: {line}", file=sys.stderr)
    sys.exit(2)
given = sys.argv[1:]
try:
    template = given[1] if given else json.loads(Path(".template.json").read_text())["template"]
except (OSError, ValueError, KeyError, TypeError) as error:
    refuse(f"{Path.cwd()} has no readable .template.json ({type(error).__name__}): it was not made by make"
           " new-project (docs/updating.md); or give the template: make update-template TEMPLATE=<path or URL>")
with tempfile.TemporaryDirectory(prefix="update-template-") as tmp:
    clone = Path(tmp, "template")
    cloned = subprocess.run(["git", "clone", "--quiet", template, str(clone)], capture_output=True, text=True)
    if cloned.returncode != 0:
        said = (cloned.stderr.strip().splitlines() or ["git clone failed"])[-1]
        refuse(f"{template} is not a git repository that can be cloned ({said})")
    script = [sys.executable, str(clone / "scripts/update_template.py"), "--clone", str(clone), *given]
    sys.exit(subprocess.run(script).returncode)
endef
export UPDATE_TEMPLATE

.PHONY: update-template
update-template: $(UV_NEEDED) ## in a copy: merge in the template's changes since it was made (docs/updating.md); TEMPLATE=path/URL
	@$(PYTHON) -c "$$UPDATE_TEMPLATE" $(if $(TEMPLATE),--template "$(TEMPLATE)")

test: install ## the everyday suite: every test not marked slow; CI adds make test-slow
	$(PYTEST) -m "not slow" $(ARGS)

test-slow: install ## the slow end-to-end tests only: full fits, DDP, kill -9 resume, sweeps, copies (~20 min on 2 cores)
	$(PYTEST) -m slow $(ARGS) || [ $$? -eq 5 ]  # 5: no test is marked slow (a new copy has none yet)

test-all: install ## the whole suite, slow tests included: what .ci/run runs, as make test then make test-slow
	$(PYTEST) $(ARGS)

lint: install ## the pre-commit hooks over every tracked file: ruff check, ruff format --check, ty check, notebooks clean
	$(VENV)/bin/pre-commit run --all-files

# Every release uv.lock pins (each extra and group, both platforms), less this project and the library (not on PyPI),
# against the advisories PyPI publishes (pip-audit's default source, the same database as OSV's PyPI entries). Online:
# never part of the tests. --strict: a release it could not look up fails the audit instead of passing unchecked.
PIP_AUDIT_VERSION := 2.10.1
audit: $(UV_NEEDED) ## check every release uv.lock pins against published advisories (pip-audit; online)
	@mkdir -p $(VENV)
	$(UV) export --locked --all-extras --all-groups --no-emit-project --no-emit-package lightning-runs --quiet \
		--format requirements-txt --output-file $(VENV)/audited-requirements.txt
	$(UV) tool run --from pip-audit==$(PIP_AUDIT_VERSION) pip-audit --strict --disable-pip --progress-spinner off \
		--requirement $(VENV)/audited-requirements.txt

# .github/workflows/ci.yml's jobs, one after another on this machine; .ci/run is the part that needs no network.
ci: ## what CI runs: install (uv sync --locked), lint, test, test-slow, then audit (online)
	$(MAKE) lint
	$(MAKE) test
	$(MAKE) test-slow
	$(MAKE) audit

format: install ## fix what lint finds: ruff check --fix, ruff format, notebook outputs stripped
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	$(VENV)/bin/nbstripout --keep-id notebooks/*.ipynb

docs: install ## build the docs site into site/ (mkdocs-material; strict: a broken link or API name fails)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: install ## serve the docs site on http://localhost:8000 as you edit docs/ (this machine only)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

tensorboard: install ## serve runs/ on http://localhost:6006, or PORT= (this machine only; docs/observability.md)
	$(VENV)/bin/tensorboard --logdir runs --host 127.0.0.1 --port $(PORT)

.PHONY: mlflow-ui
mlflow-ui: install ## serve runs/mlflow.db on http://localhost:5000, or PORT= (this machine only; docs/loggers.md)
	MLFLOW_DISABLE_TELEMETRY=true MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(VENV)/bin/mlflow ui \
		--backend-store-uri sqlite:///runs/mlflow.db --artifacts-destination runs/mlflow-artifacts \
		--host 127.0.0.1 --port $(PORT) --workers 1

# Each server's usual port unless PORT= is given (two users on one machine, or both servers at once).
tensorboard: PORT ?= 6006
mlflow-ui: PORT ?= 5000

runs: install ## one line per run in runs/ (status, epochs, best val/acc, test/acc, ...), newest first; NAME= filters
	$(PY) -m project runs $(if $(NAME),--name $(NAME)) $(ARGS)

clean: ## remove caches and build leftovers (keeps runs/ and .venv)
	rm -rf .pytest_cache .ruff_cache *.egg-info
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
