"""The specification's NODETOOL_* variable names as aliases of memstack's own, and the
server's settings from a .env file (the environment wins over the file)."""

from pathlib import Path

import pytest

from memstack.embeddings import EmbeddingSettings
from memstack.errors import ConfigError
from memstack.longterm.settings import LongTermSettings
from memstack.settings import ServerSettings


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NODETOOL_MEMORY_ENABLED": "1"}, {"enabled": True}),
        ({"NODETOOL_MEMORY_ENABLED": "1", "MEMSTACK_MEMORY_ENABLED": "0"}, {"enabled": False}),
        ({"NODETOOL_MEMORY_MAX_ITEMS": "7"}, {"max_items": 7}),
        ({"NODETOOL_MEMORY_MAX_ITEMS": "7", "MEMSTACK_MEMORY_MAX_ITEMS": "9"}, {"max_items": 9}),
        ({"NODETOOL_VECTOR_PROVIDER": "memory"}, {"vector_provider": "memory"}),
        (
            {"NODETOOL_VECTOR_PROVIDER": "memory", "MEMSTACK_VECTOR_PROVIDER": "sqlite"},
            {"vector_provider": "sqlite"},
        ),
        ({"NODETOOL_MEMORY_ENABLED": "1", "MEMSTACK_MEMORY_ENABLED": " "}, {"enabled": True}),
    ],
)
def test_long_term_settings_answer_to_the_spec_names(env, expected):
    settings = LongTermSettings.from_env(env)
    assert {name: getattr(settings, name) for name in expected} == expected


@pytest.mark.parametrize(
    ("env", "model", "provider"),
    [
        ({"NODETOOL_MEMORY_EMBEDDING_MODEL": "nomic-embed-text"}, "nomic-embed-text", None),
        ({"NODETOOL_MEMORY_EMBEDDING_PROVIDER": "Ollama"}, None, "ollama"),
        (
            {
                "NODETOOL_MEMORY_EMBEDDING_MODEL": "spec-model",
                "MEMSTACK_MEMORY_EMBEDDING_MODEL": "own-model",
                "NODETOOL_MEMORY_EMBEDDING_PROVIDER": "ollama",
                "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash",
            },
            "own-model",
            "hash",
        ),
    ],
)
def test_embedding_settings_answer_to_the_spec_names(env, model, provider):
    settings = EmbeddingSettings.from_env(env)
    assert (settings.model, settings.provider) == (model, provider)


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"NODETOOL_MEMORY_MAX_ITEMS": "lots"}, "NODETOOL_MEMORY_MAX_ITEMS='lots'"),
        ({"NODETOOL_VECTOR_PROVIDER": "faiss"}, "NODETOOL_VECTOR_PROVIDER='faiss'"),
        ({"NODETOOL_MEMORY_ENABLED": "maybe"}, "NODETOOL_MEMORY_ENABLED='maybe'"),
    ],
)
def test_an_error_names_the_variable_that_was_set(env, variable):
    with pytest.raises(ConfigError, match=variable):
        LongTermSettings.from_env(env)


DOTENV = """\
# memstack server settings
export MEMSTACK_PORT=9001
STM_MAX_ENTRIES = 5   # per agent
LTM_MAX_ENTRIES="0"
MEMSTACK_DB='/data/my memstack.db'
NODETOOL_MEMORY_EMBEDDING_PROVIDER=hash

"""


def test_server_settings_read_a_dotenv_file(tmp_path: Path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(DOTENV, encoding="utf-8")
    settings = ServerSettings.from_env({}, dotenv=dotenv)
    assert (settings.port, settings.stm_max_entries, settings.ltm_max_entries) == (9001, 5, 0)
    assert settings.db == Path("/data/my memstack.db")
    assert settings.embedding.provider == "hash"


def test_the_environment_wins_over_the_dotenv_file(tmp_path: Path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(DOTENV, encoding="utf-8")
    settings = ServerSettings.from_env(
        {"MEMSTACK_PORT": "9002", "STM_MAX_ENTRIES": "6"}, dotenv=dotenv
    )
    assert (settings.port, settings.stm_max_entries, settings.ltm_max_entries) == (9002, 6, 0)
    assert settings.port == ServerSettings.from_env({"MEMSTACK_PORT": "9002"}, port=None).port


def test_the_working_directory_dotenv_is_read_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / ".env").write_text("MEMSTACK_PORT=9003\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert ServerSettings.from_env({}).port == 9003
    assert ServerSettings.from_env({}, dotenv=None).port != 9003


def test_a_missing_dotenv_file_is_no_error(tmp_path: Path):
    assert ServerSettings.from_env({}, dotenv=tmp_path / "absent.env").port == 8000


def test_a_malformed_dotenv_line_names_the_file_and_line(tmp_path: Path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("MEMSTACK_PORT=9001\nthis is not a setting\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.env, line 2: 'this is not a setting'"):
        ServerSettings.from_env({}, dotenv=dotenv)
