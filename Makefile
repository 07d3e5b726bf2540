# Set-up and the two entry points of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test lint imports typecheck docs bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hpcsa demo

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(MAKE) --no-print-directory imports
	$(MAKE) --no-print-directory typecheck
	$(MAKE) --no-print-directory docs
	$(PY) -m pytest -q -n 2 $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The packages' import contracts ([tool.importlinter] in pyproject.toml), on the installed layout of
# `hpcsa` (see .ci/import_graph.py; lint-imports reads the package from its working directory).
IMPORT_GRAPH := build/import-graph
imports: $(STAMP)
	$(PY) .ci/import_graph.py $(IMPORT_GRAPH) >/dev/null
	cd $(IMPORT_GRAPH) && $(abspath $(VENV))/bin/lint-imports --config $(CURDIR)/pyproject.toml

# The type checker ([tool.mypy] in pyproject.toml) on the same layout: mypy cannot follow the editable install's
# import hook, and finds the package in its working directory. Its cache is kept under build/.
MYPY_CACHE := build/mypy-cache
typecheck: $(STAMP)
	$(PY) .ci/import_graph.py $(IMPORT_GRAPH) >/dev/null
	cd $(IMPORT_GRAPH) && $(abspath $(VENV))/bin/mypy --config-file $(CURDIR)/pyproject.toml \
		--cache-dir $(CURDIR)/$(MYPY_CACHE) -p hpcsa

# The documentation (docs/, Sphinx with MyST): warnings are errors, every cross-reference and internal link must
# resolve (-n), and every problem is listed before it fails (--keep-going). The HTML lands in build/docs/html.
DOCS_OUT := build/docs
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -j 2 -b html -W -n --keep-going -q docs $(DOCS_OUT)/html

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info demo-out
