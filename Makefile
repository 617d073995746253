# Two commands on a fresh machine (each sets itself up in .venv first):
#   make notebooks   execute every notebook with papermill into out/notebooks, with a summary (the main job)
#   make test        ruff, the suite (WORKERS processes), every notebook through nbval (CPU: Triton's interpreter)
PYTHON ?= python3
VENV ?= .venv
# The CPU build on a machine without a GPU; on a GPU machine set TORCH to the torch you use (or TORCH=).
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
# test processes for the suite (pytest-xdist; Triton's interpreter keeps a core busy each): CI's machine has two.
# The notebooks' cells run in order in one kernel each, so nbval runs them in one process after the suite.
WORKERS ?= 2

.PHONY: notebooks test setup clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(if $(TORCH),$(BIN)/python -m pip install -q $(TORCH))
	$(BIN)/python -m pip install -q -e ".[test,notebooks,bench]"
	touch $@

setup: $(BIN)/.installed

notebooks: $(BIN)/.installed
	$(BIN)/python -m normkit.notebooks --out out/notebooks

test: $(BIN)/.installed
	$(BIN)/ruff check normkit tests notebooks
	$(BIN)/ruff format --check normkit tests notebooks
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(WORKERS) tests
	$(BIN)/python -m pytest -q -p no:cacheprovider notebooks --nbval-lax

clean:
	rm -rf $(VENV) out
