"""The REST API over the memory service: routes, the fast path for the busiest ones,
Bearer auth, body limits and ``/healthz``. ``memstack.transports.app.create_app`` serves
it together with MCP and the inspector (``memstack serve``)."""
