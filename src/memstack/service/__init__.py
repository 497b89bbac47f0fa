"""The memory service: what every transport (REST, MCP, the CLI) calls.

- ``memories``: ``MemoryService``, storing, listing, searching and erasing memories of
  the two tiers; ``ltm`` the long-term tier over a ``RecordStore``, ``stm`` /
  ``stm_redis`` / ``stm_sync`` the short-term tier in process or in Redis;
- ``versions``, ``restore``, ``paging``: a memory's history, an export written back,
  cursors over listings;
- ``knowledge``, ``knowledge_index``, ``passages``: knowledge documents, indexed in the
  background;
- ``users`` (with ``user_types``, ``user_turns``, ``user_jobs``, ``user_export``): every
  tenant's users' long-term memory: conversation turns, facts, recall, extraction jobs;
- ``api_keys``, ``principal``: Bearer keys and what a key may do;
- ``checks``, ``ttl``, ``secret_fields``, ``types``: the rules every write passes;
- ``render``, ``prompt``, ``tools``: the prompt blocks and the LLM tools.

The modules are imported by name (``memstack.service.memories``); importing this
package loads none of them.
"""

__all__: list[str] = []
