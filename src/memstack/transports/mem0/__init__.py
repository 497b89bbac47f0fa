"""mem0's REST dialect, so that mem0's own clients (``mem0.MemoryClient``, npm ``mem0ai``)
work against memstack with ``host=`` changed and nothing else: the routes (``routes``),
mem0's filter language (``filters``), its ids and shapes (``ids``, ``subjects``), and the
operations carried out by memstack's services (``dialect``). See ``docs/mem0.md``."""

from memstack.transports.mem0.dialect import Mem0Dialect
from memstack.transports.mem0.routes import MEM0_PATHS, mem0_routes

__all__ = ["MEM0_PATHS", "Mem0Dialect", "mem0_routes"]
