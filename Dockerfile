# The memory server, built from this repository: memstack with the server, MCP, PostgreSQL
# and Redis extras, run by a user without privileges. compose.yaml runs it beside
# PostgreSQL (pgvector) and Redis; docs/deploy.md says how to use both.

FROM python:3.11-slim AS build
WORKDIR /src
# What the wheel is built from: the metadata (README.md is the package description,
# LICENSE its licence file) and the package.
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN python -m venv /opt/memstack \
    && /opt/memstack/bin/pip install --no-cache-dir ".[server,mcp,postgres,redis]"

FROM python:3.11-slim
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/memstack memstack \
    && mkdir /data \
    && chown memstack:memstack /data
COPY --from=build /opt/memstack /opt/memstack
# Listen beyond the container's loopback; the SQLite file and the first API key (when no
# PostgreSQL is set) are kept in /data.
ENV PATH=/opt/memstack/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    MEMSTACK_HOME=/data \
    MEMSTACK_HOST=0.0.0.0 \
    MEMSTACK_PORT=8000
VOLUME ["/data"]
USER memstack
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; url = 'http://127.0.0.1:' + os.environ.get('MEMSTACK_PORT', '8000') + '/healthz'; sys.exit(0 if urllib.request.urlopen(url, timeout=4).status == 200 else 1)"]
CMD ["memstack", "serve"]
