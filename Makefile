# `make help` lists the targets. `make train` and `make test` install what they need first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONFIG ?= configs/digits.yaml
SWEEP ?= sweeps/digits.yaml
FORMAT ?= onnx
ARGS ?=
# One pytest worker per core, each file on one worker (its module fixtures run once), one torch thread each.
PYTEST := OMP_NUM_THREADS=1 $(PY) -m pytest -n auto --dist loadfile

# The template's own targets (its library's install, benchmarks, new-project); a copy has no template.mk.
-include template.mk

.DEFAULT_GOAL := help
.PHONY: help install train evaluate-seeds test test-slow test-all lint format tensorboard runs clean sweep export schema completion

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'
	@echo "More GPUs or machines, FSDP, torch.compile, sweep workers: docs/scaling.md"

# The project, editable, with its dev tools; pip takes the machinery (lightning-runs) from where pyproject.toml's
# dependency says: in a copy, the template's git repository at the commit the copy is on (docs/updating.md). pip
# keeps an installed lightning-runs of the same version when that commit moves (make update-template), so a copy
# then reinstalls the library alone, at the pinned commit, whenever pyproject.toml changes.
LIBRARY_PIN = $(shell sed -n 's/^ *"\(lightning-runs @ [^"]*\)".*/\1/p' pyproject.toml)
$(VENV)/.installed: pyproject.toml $(LIBRARY_PYPROJECT)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(LIBRARY) -e ".[dev]"
	$(if $(LIBRARY_PIN),$(PY) -m pip install --quiet --force-reinstall --no-deps "$(LIBRARY_PIN)")
	touch $@

install: $(VENV)/.installed ## create .venv and install the project, its dev tools and the library it runs on

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
# none of the template's tooling). Only python3 and git, before any install: it works while .venv does not.
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
update-template: ## in a copy: merge in the template's changes since it was made (docs/updating.md); TEMPLATE=path/URL
	@$(PYTHON) -c "$$UPDATE_TEMPLATE" $(if $(TEMPLATE),--template "$(TEMPLATE)")

test: install ## the everyday suite: every test not marked slow; CI adds make test-slow
	$(PYTEST) -m "not slow" $(ARGS)

test-slow: install ## the slow end-to-end tests only: full fits, DDP, kill -9 resume, sweeps, copies (~12 min on 2 cores)
	$(PYTEST) -m slow $(ARGS) || [ $$? -eq 5 ]  # 5: no test is marked slow (a new copy has none yet)

test-all: install ## the whole suite, slow tests included: what .ci/run runs, as make test then make test-slow
	$(PYTEST) $(ARGS)

lint: install ## the pre-commit hooks over every tracked file: ruff check, ruff format --check, notebooks clean
	$(VENV)/bin/pre-commit run --all-files

format: install ## fix what lint finds: ruff check --fix, ruff format, notebook outputs stripped
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	$(VENV)/bin/nbstripout --keep-id notebooks/*.ipynb

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
