"""mem0's Platform quickstart (https://docs.mem0.ai/quickstart, steps 2-4) as written,
but for ``host=``: the program a mem0 user runs first, against memstack's server.

The key, which the quickstart writes in as "your-api-key", and the host come from the
environment (MEM0_API_KEY, MEM0_HOST); tests/mem0/test_quickstart.py runs it.
"""

import os

from mem0 import MemoryClient

client = MemoryClient(api_key=os.environ["MEM0_API_KEY"], host=os.environ["MEM0_HOST"])

messages = [
    {"role": "user", "content": "I'm a vegetarian and allergic to nuts."},
    {"role": "assistant", "content": "Got it! I'll remember your dietary preferences."},
]
client.add(messages, user_id="user123")

results = client.search("What are my dietary restrictions?", filters={"user_id": "user123"})
print(results)
