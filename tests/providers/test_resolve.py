"""resolve_model: "provider:model" strings, with the environment passed in."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memstack.errors import ConfigError, InvalidInput
from memstack.providers import (
    AnthropicProvider,
    ChatModel,
    Message,
    OpenAIProvider,
    ScriptedProvider,
    resolve_model,
)
from memstack.providers.resolve import PROVIDERS


async def close(provider: ChatModel) -> None:
    if isinstance(provider, OpenAIProvider | AnthropicProvider):
        await provider.aclose()


@pytest.mark.parametrize(
    ("spec", "env", "kind", "name", "model", "base_url"),
    [
        (
            "openai:gpt-4o-mini",
            {"OPENAI_API_KEY": "sk"},
            OpenAIProvider,
            "openai",
            "gpt-4o-mini",
            "https://api.openai.com/v1",
        ),
        (
            " OpenAI:gpt-4o ",
            {"OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": "https://proxy.test/v1"},
            OpenAIProvider,
            "openai",
            "gpt-4o",
            "https://proxy.test/v1",
        ),
        (
            "anthropic:claude-haiku-4-5",
            {"ANTHROPIC_API_KEY": "sk-ant"},
            AnthropicProvider,
            "anthropic",
            "claude-haiku-4-5",
            "https://api.anthropic.com",
        ),
        (
            "ollama:qwen2.5:7b",
            {},
            OpenAIProvider,
            "ollama",
            "qwen2.5:7b",
            "http://127.0.0.1:11434/v1",
        ),
        (
            "ollama:llama3.1",
            {"OLLAMA_BASE_URL": "http://gpu-box:11434"},
            OpenAIProvider,
            "ollama",
            "llama3.1",
            "http://gpu-box:11434/v1",
        ),
        (
            "vllm:meta-llama/Llama-3.1-8B-Instruct",
            {"MEMSTACK_LLM_BASE_URL": "http://10.0.0.5:8000/v1"},
            OpenAIProvider,
            "vllm",
            "meta-llama/Llama-3.1-8B-Instruct",
            "http://10.0.0.5:8000/v1",
        ),
        ("lmstudio:qwen3", {}, OpenAIProvider, "lmstudio", "qwen3", "http://127.0.0.1:1234/v1"),
    ],
)
async def test_specs_choose_provider_model_and_endpoint(spec, env, kind, name, model, base_url):
    provider, chosen = resolve_model(spec, env=env)
    try:
        assert isinstance(provider, kind)
        assert isinstance(provider, ChatModel)
        assert isinstance(provider, OpenAIProvider | AnthropicProvider)
        assert provider.provider_name == name
        assert provider.base_url == base_url
        assert chosen == model
    finally:
        await close(provider)


@pytest.mark.parametrize(
    ("spec", "variable"),
    [("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY")],
)
@pytest.mark.parametrize("env", [{}, {"OPENAI_API_KEY": " ", "ANTHROPIC_API_KEY": ""}])
def test_a_missing_key_says_which_variable_to_set(spec, variable, env):
    with pytest.raises(ConfigError) as info:
        resolve_model(spec, env=env)
    assert str(info.value) == (
        f"{spec} needs an API key: set {variable} (or use scripted:echo to try memstack "
        "without one)."
    )


def test_only_the_env_passed_in_is_read(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-process")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini", env={})


@pytest.mark.parametrize(
    "spec", ["gpt-4o-mini", "mistral:large", "openai:", ":gpt-4o", "", "scripted:other"]
)
def test_a_bad_spec_is_invalid_input_naming_the_providers(spec):
    with pytest.raises(InvalidInput) as info:
        resolve_model(spec, env={"OPENAI_API_KEY": "sk"})
    assert info.value.field == "model"
    if spec != "scripted:other":
        assert all(name in str(info.value) for name in PROVIDERS)


async def test_scripted_echo_needs_no_key_and_echoes_the_first_line():
    provider, model = resolve_model("scripted:echo", env={})
    assert isinstance(provider, ScriptedProvider)
    assert model == "echo"
    messages = [
        Message(role="system", content="You are an agent."),
        Message(role="user", content="Say hello\n\nRequired upstream memory: none"),
    ]
    reply = await provider.generate(messages, model=model)
    assert reply.content == "echo: Say hello"
    assert reply.tool_calls == ()


def test_importing_the_package_or_resolving_scripted_imports_no_sdk():
    code = (
        "import sys\n"
        "from memstack.providers import resolve_model\n"
        "resolve_model('scripted:echo', env={})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
