"""The web inspector: a page at ``/ui`` of ``memstack serve`` to browse and fix memories.

Its HTML, CSS and JavaScript ship in this package (``static/``), so it works offline.
The files are public; every piece of data comes from the REST API with the API key
the page asks for, sent as ``Authorization: Bearer``.
"""

from memstack.transports.inspector.routes import inspector_router

__all__ = ["inspector_router"]
