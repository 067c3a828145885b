# ClusterTwin: the two commands.
#   make run   set up and start the dashboard on http://127.0.0.1:8050 (SQLite + synthetic colossus)
#   make test  set up (venv, Python deps, Debian packages the tests need), lint and run the whole suite
#   make test-fast  lint and the tests that need no server or browser

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SITE   ?= colossus
# Debian packages the test suite needs: headless Chromium and its driver (browser tests),
# PostgreSQL server (storage on PostgreSQL), Prometheus + promtool (Prometheus API ingest),
# OpenIPMI's ipmi_sim and ipmitool (IPMI ingest), Slurm's controller, node daemon, clients and REST
# daemon (a real 22.05 cluster of many virtual GPU nodes for the Slurm source).
APT_PACKAGES := chromium chromium-driver postgresql prometheus openipmi ipmitool slurmctld slurmd slurm-client slurmrestd prometheus-alertmanager

.PHONY: run test test-fast lint bench setup system-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/clustertwin serve --site $(SITE) --host 127.0.0.1 --port 8050

system-deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	{ command -v prometheus >/dev/null && command -v promtool >/dev/null; } || missing="$$missing prometheus"; \
	command -v ipmi_sim >/dev/null || missing="$$missing openipmi"; \
	command -v prometheus-alertmanager >/dev/null || missing="$$missing prometheus-alertmanager"; \
	command -v ipmitool >/dev/null || missing="$$missing ipmitool"; \
	command -v slurmctld >/dev/null || missing="$$missing slurmctld"; \
	command -v slurmd >/dev/null || missing="$$missing slurmd"; \
	command -v squeue >/dev/null || missing="$$missing slurm-client"; \
	command -v slurmrestd >/dev/null || missing="$$missing slurmrestd"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint system-deps
	$(BIN)/python -m pytest

# everything but the tests marked slow (browser and server-backed ones): a few minutes
test-fast: lint
	$(BIN)/python -m pytest -m "not slow"

bench: $(STAMP)
	$(BIN)/clustertwin bench --json

clean:
	rm -rf $(VENV) var build *.egg-info tests/screenshots
