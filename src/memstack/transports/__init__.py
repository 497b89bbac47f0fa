"""The ways into memstack: thin adapters over ``memstack.service``, none importing another.

- ``rest``: the FastAPI app (routes, schemas, errors, body limits, ``/healthz``);
- ``mcp``: the MCP server (official SDK) over stdio and streamable HTTP;
- ``inspector``: the web page at ``/ui``, a static page over the REST API;
- ``app``: ``create_app``, the one ASGI app that serves the three together;
- ``schemas`` and ``errors``: what REST and MCP share, the wire shapes of memories and
  results, and errors as HTTP answers.
"""
