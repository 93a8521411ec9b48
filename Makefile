# Two commands set up everything on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
IOFP := $(VENV)/bin/iofp

.PHONY: setup test test-fast demo lint bench clean

setup:
	bash scripts/setup.sh

# Every test (CI): real eBPF capture, fio on lab loop devices, the demo.
test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

# Between edits: every test but those that make lab block devices (`device`) or take seconds (`slow`);
# tests/conftest.py marks them. No heavy-run lock needed.
test-fast: setup
	$(PY) -m pytest -q -m "not device and not slow" $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .

demo: setup
	bash scripts/demo.sh

# The benchmarks behind BENCHMARKS.md (root; ~30 min). Each takes --help for its options.
BENCHES := capture_overhead request_stamps fingerprint_scale import_scale iolog_convert replay_fidelity commit_fidelity
bench: setup
	for b in $(BENCHES); do flock /tmp/iofp-heavy.lock $(PY) -m bench.$$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache demo-out
