# rewardlab: two commands on a fresh machine (see README, Quick start).
#   make lab   set up .venv with the lab extra, make sure the sample data exists, open JupyterLab on the tour
#   make test  set up .venv if missing, add the test extra, run the whole test suite
# The optional sources' extras (gym, rllib, minari, ray) are installed on demand:
#   .venv/bin/pip install -e '.[gym]'   (an error that needs one names that command)
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := data/sample.tsv.gz
PIP := $(BIN)/pip install --quiet --disable-pip-version-check
# Two stamps keyed on pyproject.toml's checksum, so an edit there re-installs: the lab's (rewardlab, its
# dependencies and the lab extra, then the compile steps) and the test suite's (the test extra on top).
CKSUM := $(shell cksum pyproject.toml | cut -d' ' -f1)
LAB_STAMP := $(VENV)/.lab-$(CKSUM)
TEST_STAMP := $(VENV)/.test-$(CKSUM)
# The requirements of pyproject.toml's dependencies and the extras named as arguments, one a line: the test
# stamp installs them with pip -r, which installs only what is missing (no rebuild of rewardlab itself).
REQUIREMENTS = $(BIN)/python -c 'import sys, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	print("\n".join(p["dependencies"] + [r for e in sys.argv[1:] for r in p["optional-dependencies"][e]]))'

# The compile steps (numba, cached next to the modules): the MJAI kernels (the longest) beside the others,
# on two cores; a failure of either side fails the step.
COMPILE = $(BIN)/python -m rewardlab.sources.mjai.compile & mjai=$$!; \
	$(BIN)/python -m rewardlab.sources.kanachan.tokenizer && \
	$(BIN)/python -m rewardlab.analysis.replay_kernels && \
	$(BIN)/python -m rewardlab.analysis.sums && \
	$(BIN)/python -m rewardlab.domains.retro.kernels; status=$$?; wait $$mjai && exit $$status

.PHONY: lab test bench bench-scale bench-cores sample venv venv-test clean-venv

# What `make lab` installs (no JupyterLab server).
venv: $(LAB_STAMP)

# What `make test` installs (no test run).
venv-test: $(TEST_STAMP)

$(LAB_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[lab]'
	$(COMPILE)
	rm -f $(VENV)/.installed-* $(VENV)/.lab-* $(VENV)/.test-*
	touch $(LAB_STAMP)

# After the lab's stamp (whose compile steps serve both): the test extra, with the pins of the rest.
$(TEST_STAMP): $(LAB_STAMP)
	$(REQUIREMENTS) lab test > $(VENV)/requirements-test.txt
	$(PIP) -r $(VENV)/requirements-test.txt
	rm -f $(VENV)/.test-*
	touch $(TEST_STAMP)

$(SAMPLE): | $(LAB_STAMP)
	$(BIN)/rewardlab sample --games 240 --seed 2024 --out $(SAMPLE)

sample: $(SAMPLE)

# Opens the tour notebook; --allow-root only when run as root (containers, CI images).
lab: $(LAB_STAMP) $(SAMPLE)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/01_tour.ipynb \
		$(if $(filter 0,$(shell id -u)),--allow-root) notebooks/01_tour.ipynb

test: $(TEST_STAMP) $(SAMPLE)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(TEST_STAMP) $(SAMPLE)
	$(BIN)/python -m benchmarks

# Corpus scale (issue 21, minutes): N transitions generated, converted, two plug-ins applied, statistics.
#   make bench-scale N=80000000 (or N=20000000,80000000 for both sizes side by side; N=1e6 quick);
#   KEEP=1 keeps the generated files under $TMPDIR. Not part of `make bench`.
bench-scale: $(TEST_STAMP) $(SAMPLE)
	N="$(N)" KEEP="$(KEEP)" $(BIN)/python -m benchmarks scale

# Scaling with cores (issue 21): the parse and the pipeline at 1, 2, 4, ... workers up to the cores here.
#   make bench-cores N=4e7 (one size with many parts per worker: the steady state a corpus runs at; two
#   sizes, N=1e6,8e6, also give marginal rates, misleading when the small one leaves workers idle).
#   Not part of `make bench`.
bench-cores: $(TEST_STAMP) $(SAMPLE)
	N="$(N)" $(BIN)/python -m benchmarks cores

clean-venv:
	rm -rf $(VENV)
