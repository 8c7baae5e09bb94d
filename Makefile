# Two commands do all set-up: `make run` and `make test`. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
BENCH_ARGS ?=

.PHONY: venv run test bench clean dag report

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

run: venv
	$(BIN)/snakemake --cores $(CORES)

test: venv  # the import layers first (.importlinter, docs/architecture.md): a new upward import fails here
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

bench: venv  # make bench BENCH_ARGS=--quick: every benchmark at smoke size
	$(BIN)/python -m bench $(BENCH_ARGS)

dag: venv
	$(BIN)/snakemake -n

report: venv
	$(BIN)/snakemake --report report.html

clean:
	rm -rf results figures report.html .snakemake
