# rewardlab: two commands on a fresh machine (see README, Quick start).
#   make lab   set up .venv, make sure the sample data exists, open JupyterLab on the tour
#   make test  set up .venv if missing, run the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := data/sample.tsv.gz
# Bump the stamp when the dependency set changes so existing venvs re-install.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: lab test bench bench-scale bench-cores sample venv clean-venv

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

# Corpus scale (issue 21, minutes): N transitions generated, converted, two plug-ins applied, statistics.
#   make bench-scale N=80000000 (or N=20000000,80000000 for both sizes side by side; N=1e6 quick);
#   KEEP=1 keeps the generated files under $TMPDIR. Not part of `make bench`.
bench-scale: $(STAMP) $(SAMPLE)
	N="$(N)" KEEP="$(KEEP)" $(BIN)/python -m benchmarks scale

# Scaling with cores (issue 21): the parse and the pipeline at 1, 2, 4, ... workers up to the cores here.
#   make bench-cores N=1e6,8e6 (two sizes: marginal rates, start-up costs cancel). Not part of `make bench`.
bench-cores: $(STAMP) $(SAMPLE)
	N="$(N)" $(BIN)/python -m benchmarks cores

clean-venv:
	rm -rf $(VENV)
