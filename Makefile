# Two commands set up everything on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
IOFP := $(VENV)/bin/iofp

.PHONY: setup test demo lint bench clean

setup:
	bash scripts/setup.sh

test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .

demo: setup
	bash scripts/demo.sh

bench: setup
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache demo-out
