"""``resolve_model("provider:model", env=...)``: a ChatModel and a model name from one string.

``env`` is passed in (``os.environ`` at the edge); blank values count as unset. Every
key and URL is passed to the provider explicitly, so the SDKs do not pick one up from
the process environment.

============  =========================================================================
openai        OPENAI_API_KEY (required), OPENAI_BASE_URL
anthropic     ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL
ollama        OLLAMA_BASE_URL, default http://127.0.0.1:11434/v1 (``/v1`` is added to a
              bare host)
vllm          MEMSTACK_LLM_BASE_URL, default http://127.0.0.1:8000/v1; MEMSTACK_LLM_API_KEY
lmstudio      MEMSTACK_LLM_BASE_URL, default http://127.0.0.1:1234/v1; MEMSTACK_LLM_API_KEY
scripted      ``scripted:echo`` answers with the first line of the last user message;
              ``scripted:fibonacci`` plays the MemoryBank Fibonacci agent (providers.demos)
============  =========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import urlsplit

from memstack.errors import ConfigError, InvalidInput
from memstack.providers.anthropic import AnthropicProvider
from memstack.providers.base import ChatModel
from memstack.providers.demos import DEMOS, echo
from memstack.providers.openai import OpenAIProvider
from memstack.providers.scripted import ScriptedProvider

__all__ = ["PROVIDERS", "echo", "resolve_model"]

DEFAULT_OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
DEFAULT_OLLAMA_BASE_URL: Final = "http://127.0.0.1:11434/v1"
_LOCAL_SERVERS: Final = {
    "vllm": "http://127.0.0.1:8000/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
}

Builder = Callable[[str, str, Mapping[str, str]], ChatModel]


def resolve_model(spec: str, *, env: Mapping[str, str]) -> tuple[ChatModel, str]:
    """The provider and model ``spec`` names, e.g. ``openai:gpt-4o-mini`` or
    ``ollama:qwen2.5:7b`` (split on the first colon: the model may contain more).

    A missing key raises ``ConfigError``; a spec that is not ``provider:model`` with a
    known provider raises ``InvalidInput`` (field ``model``). Nothing is requested here.
    """
    name, _, model = spec.strip().partition(":")
    build = _BUILDERS.get(name.strip().lower())
    if build is None or not model.strip():
        raise InvalidInput(
            f"model {spec!r} is not provider:model with a known provider; use one of "
            f"{', '.join(PROVIDERS)}, e.g. openai:gpt-4o-mini, ollama:qwen2.5:7b or "
            "scripted:echo.",
            field="model",
        )
    model = model.strip()
    return build(spec, model, env), model


def _read(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _key(env: Mapping[str, str], name: str, spec: str) -> str:
    key = _read(env, name)
    if key is None:
        raise ConfigError(
            f"{spec} needs an API key: set {name} (or use scripted:echo to try memstack "
            "without one)."
        )
    return key


def _openai(spec: str, model: str, env: Mapping[str, str]) -> ChatModel:
    return OpenAIProvider(
        api_key=_key(env, "OPENAI_API_KEY", spec),
        base_url=_read(env, "OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL,
    )


def _anthropic(spec: str, model: str, env: Mapping[str, str]) -> ChatModel:
    return AnthropicProvider(
        api_key=_key(env, "ANTHROPIC_API_KEY", spec),
        base_url=_read(env, "ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL,
    )


def _ollama(spec: str, model: str, env: Mapping[str, str]) -> ChatModel:
    url = _read(env, "OLLAMA_BASE_URL") or DEFAULT_OLLAMA_BASE_URL
    if urlsplit(url).path.strip("/") == "":
        url = f"{url.rstrip('/')}/v1"  # Ollama's OpenAI-compatible API lives under /v1
    return OpenAIProvider(api_key="ollama", base_url=url, provider_name="ollama")


def _local(name: str) -> Builder:
    def build(spec: str, model: str, env: Mapping[str, str]) -> ChatModel:
        return OpenAIProvider(
            api_key=_read(env, "MEMSTACK_LLM_API_KEY") or "none",
            base_url=_read(env, "MEMSTACK_LLM_BASE_URL") or _LOCAL_SERVERS[name],
            provider_name=name,
        )

    return build


def _scripted(spec: str, model: str, env: Mapping[str, str]) -> ChatModel:
    if model not in DEMOS:
        names = ", ".join(f"scripted:{name}" for name in DEMOS)
        raise InvalidInput(
            f"model {spec!r}: the scripted provider's models are {names}.", field="model"
        )
    return ScriptedProvider(responder=DEMOS[model])


_BUILDERS: Final[dict[str, Builder]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "ollama": _ollama,
    **{name: _local(name) for name in _LOCAL_SERVERS},
    "scripted": _scripted,
}
PROVIDERS: Final = tuple(_BUILDERS)
