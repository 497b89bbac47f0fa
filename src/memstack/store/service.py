"""Deprecated: ``memstack.service.memories``; ``MemoryStore`` is ``MemoryService`` now."""

from memstack.service.memories import *  # noqa: F403
from memstack.service.memories import MemoryService

MemoryStore = MemoryService
