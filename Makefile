# Every target installs what it needs first (into .venv), so each works on a fresh clone.
#   make notebooks   install, then execute every notebook in place (outputs stored)
#   make test        install, then lint, unit tests, notebooks at smoke, nbval, budget report
#   make lab         install, then open JupyterLab on notebooks/
#   make run SLUG=sigma_reparam PRESET=smoke ARGS="--set lr=1e-3"

VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(VENV)/bin
TORCH   := 2.13.0
STAMP   := $(VENV)/.installed
SLUG    ?= sigma_reparam
PRESET  ?= smoke
JOBS    ?= 2
export MPLBACKEND := Agg

.PHONY: setup notebooks test lint unit smoke nbval lab run student clean

setup: $(STAMP)

# torch first, from the pinned local CPU build; then the project with a constraints file that
# keeps that torch; then refuse the environment if anything replaced it.
$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev]"
	$(PY) -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '$(TORCH)' else f'torch {v} replaced torch $(TORCH)')"
	@if $(PY) -m pip list 2>/dev/null | grep -qiE '^(torchvision|lightning) '; then \
		echo "torchvision or the lightning meta-package got installed: see DESIGN.md"; exit 1; fi
	touch $(STAMP)

notebooks: setup
	$(BIN)/companion notebooks execute --all --inplace --jobs 1
	$(BIN)/companion notebooks budget --budget 60

lint: setup
	$(BIN)/ruff check companion tests

# one thread per test worker: with default threads `-n 2` is twice slower on 2 cores
unit: setup
	OMP_NUM_THREADS=1 COMPANION_PROGRESS=0 $(BIN)/pytest -n 2 -m "not notebooks" -q

smoke: setup
	COMPANION_BUDGET_REPORT=smoke-budget.txt COMPANION_PROGRESS=0 $(BIN)/pytest -m notebooks -q tests/test_notebooks.py
	@echo "== smoke durations (papermill metadata) against the 10 s budget =="; cat smoke-budget.txt

nbval: setup
	COMPANION_PROGRESS=0 $(BIN)/pytest --nbval-lax --nbval-current-env -p no:randomly -q notebooks/
	@echo "== stored notebook durations against the 60 s budget =="
	$(BIN)/companion notebooks budget --budget 60

test: lint unit smoke nbval

lab: setup
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root,)

run: setup
	$(BIN)/companion run $(SLUG) --preset $(PRESET) $(ARGS)

student: setup
	$(BIN)/companion notebooks student --all --out student/

clean:
	rm -rf $(VENV) runs student smoke-budget.txt .pytest_cache
