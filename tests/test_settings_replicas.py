"""``--postgres-read-url`` / ``MEMSTACK_POSTGRES_READ_URL`` and the replay lag bound: read
from flags or the environment, handed to worker processes, refused where they cannot
apply."""

from __future__ import annotations

import pytest

from memstack.errors import ConfigError
from memstack.settings import ServerSettings
from memstack.storage import open_record_store
from memstack.storage.postgres import MAX_REPLICA_LAG_S

PRIMARY = "postgresql://u@db1/m"
A, B = "postgresql://u@db2/m", "postgres://u@db3:5433,db4:5433/m"


@pytest.mark.parametrize(
    ("env", "flags", "urls", "lag"),
    [
        ({}, {}, (), MAX_REPLICA_LAG_S),
        ({"MEMSTACK_POSTGRES_READ_URL": f"{A}, {B}"}, {}, (A, B), MAX_REPLICA_LAG_S),
        ({"MEMSTACK_POSTGRES_READ_URL": A}, {"postgres_read_urls": (B,)}, (B,), MAX_REPLICA_LAG_S),
        ({"MEMSTACK_POSTGRES_MAX_LAG_S": "0.5"}, {}, (), 0.5),
        ({"MEMSTACK_POSTGRES_MAX_LAG_S": "0.5"}, {"postgres_max_lag": 3}, (), 3.0),
    ],
)
def test_read_urls_and_lag_come_from_flags_over_the_environment(env, flags, urls, lag):
    settings = ServerSettings.from_env(
        {"MEMSTACK_POSTGRES_URL": PRIMARY, **env}, dotenv=None, **flags
    )
    assert (settings.postgres_read_urls, settings.postgres_max_lag_s) == (urls, lag)
    assert ServerSettings.from_env(settings.to_env(), dotenv=None) == settings  # the workers'


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMSTACK_POSTGRES_READ_URL": A}, "give the primary with --postgres-url"),
        (
            {"MEMSTACK_POSTGRES_URL": PRIMARY, "MEMSTACK_POSTGRES_READ_URL": "host=db2"},
            "must be a postgresql:// URL",
        ),
        (
            {"MEMSTACK_POSTGRES_URL": PRIMARY, "MEMSTACK_POSTGRES_MAX_LAG_S": "soon"},
            "MEMSTACK_POSTGRES_MAX_LAG_S='soon' must be a number of seconds",
        ),
    ],
)
def test_unusable_read_settings_say_what_to_do(env, message):
    with pytest.raises(ConfigError, match=message):
        ServerSettings.from_env(env, dotenv=None)


def test_read_urls_need_a_postgresql_store(tmp_path):
    with pytest.raises(ConfigError, match="hot standbys of a PostgreSQL primary"):
        open_record_store(f"sqlite:///{tmp_path / 'm.db'}", read_urls=[A])
