# Two commands on a fresh machine (each sets itself up in .venv first):
#   make notebooks   execute every notebook with papermill into out/notebooks, with a summary (the main job)
#   make test        ruff, then the test suite and every notebook through nbval (CPU: Triton's interpreter)
PYTHON ?= python3
VENV ?= .venv
# The CPU build on a machine without a GPU; on a GPU machine set TORCH to the torch you use (or TORCH=).
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin

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
	$(BIN)/python -m pytest -q -p no:cacheprovider tests notebooks --nbval-lax

clean:
	rm -rf $(VENV) out
