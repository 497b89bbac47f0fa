"""Adapters: memstack behind the memory interfaces agent frameworks already have.

Each is a thin layer over ``memstack.storage`` and memstack's tools, and each needs its
framework as an extra:

- ``memstack.adapters.langgraph``: ``MemstackStore``, a LangGraph ``BaseStore``
  (``pip install "memstack[langgraph]"``).
- ``memstack.adapters.openai_agents``: ``MemstackSession``, an OpenAI Agents SDK
  ``Session``; ``function_tools`` turns memstack tools into the SDK's ``FunctionTool``;
  ``ScriptedResponsesModel`` replays Responses API payloads offline
  (``pip install "memstack[openai-agents]"``).
- ``memstack.adapters.tool_loop``: ``run_tool_calls`` answers the tool calls of an OpenAI
  (Chat Completions or Responses) or Anthropic (Messages) reply with memstack's tools, in
  one call; no extra needed.
"""
