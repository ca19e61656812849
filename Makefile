# rewardlab: two commands on a fresh machine (see README, Quick start).
#   make lab   set up .venv, make sure the sample data exists, open JupyterLab on the tour
#   make test  set up .venv if missing, run the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := data/sample.tsv.gz
# Bump the stamp when the dependency set changes so existing venvs re-install.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: lab test bench sample venv clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[lab,test]'
	$(BIN)/python -m rewardlab.sources.kanachan.tokenizer
	$(BIN)/python -m rewardlab.analysis.replay_kernels
	$(BIN)/python -m rewardlab.analysis.sums
	$(BIN)/python -m rewardlab.sources.mjai.compile
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

$(SAMPLE): | $(STAMP)
	$(BIN)/rewardlab sample --games 240 --seed 2024 --out $(SAMPLE)

sample: $(SAMPLE)

# Opens the tour notebook; --allow-root only when run as root (containers, CI images).
lab: $(STAMP) $(SAMPLE)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/01_tour.ipynb \
		$(if $(filter 0,$(shell id -u)),--allow-root) notebooks/01_tour.ipynb

test: $(STAMP) $(SAMPLE)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP) $(SAMPLE)
	$(BIN)/python -m benchmarks

clean-venv:
	rm -rf $(VENV)
