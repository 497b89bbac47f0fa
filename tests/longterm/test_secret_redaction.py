"""Issue 30: redaction (what a path that must keep going stores instead of a credential),
a credential's name as a dict key, and JSON carried inside a string."""

import json

import pytest

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.redaction import redact, redact_secrets
from memstack.secrets import find_secret, secret_kind
from memstack.service.types import check_id_part
from tests.longterm.secret_corpus import ALL_BENIGN, ALL_SECRETS, _pem, hexs, tok
from tests.security.harness import ALL_NEEDLES


@pytest.mark.parametrize(("label", "text"), ALL_SECRETS, ids=[label for label, _ in ALL_SECRETS])
def test_redaction_leaves_no_credential_and_no_piece_of_one(label: str, text: str):
    redacted = redact(text)
    assert "[REDACTED:" in redacted and secret_kind(redacted) is None
    kept = [token for token in ALL_NEEDLES[label] if token in redacted.lower()]
    assert kept == [], (kept, redacted)


def test_benign_text_is_never_changed():
    assert [label for label, text in ALL_BENIGN if redact(text) != text] == []


def test_a_whole_key_goes_not_only_the_part_its_shape_names():
    key = f"sk-proj-{tok(48)}"
    assert redact(f"the key {key} works") == "the key [REDACTED:openai_key] works"
    pem = _pem("RSA ")
    assert redact(f"key:\n{pem}\nend") == "key:\n[REDACTED:private_key]\nend"


def test_a_second_token_beside_a_known_one_goes_too():
    text = f"Twilio account AC{hexs(32)} with auth token {hexs(32)}"
    assert redact(text) == (
        "Twilio account [REDACTED:twilio_sid] with auth token [REDACTED:random_token]"
    )


def test_structured_values_are_redacted_keys_and_values_and_nothing_else():
    given: JSON = {
        "role": "user",
        "content": [{"type": "input_text", "text": f"push with ghp_{tok(36)} please"}],
        f"ghp_{tok(36)}": "a key as a key",
        "auth": {"password": "letmein", "user": "ada", "count": 3},
    }
    assert redact_secrets(given) == {
        "role": "user",
        "content": [{"type": "input_text", "text": "push with [REDACTED:github_token] please"}],
        "[REDACTED:github_token]": "a key as a key",
        "auth": {"password": "[REDACTED:credential_assignment]", "user": "ada", "count": 3},
    }


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"db": {"password": "letmein"}}, "metadata.db.password"),
        ({"clientSecret": "abc"}, "metadata.clientSecret"),
        ({"X-API-Key": "qwerty"}, "metadata.X-API-Key"),
        (
            {"headers": [{"Authorization": f"Bearer {tok(40)}"}]},
            "metadata.headers[0].Authorization",
        ),
    ],
)
def test_a_credential_under_its_name_is_refused(metadata, field):
    found = find_secret({"metadata": metadata})
    assert found is not None and found.field == field


@pytest.mark.parametrize(
    "metadata",
    [
        {"token_count": "4096"},
        {"max_tokens": "4000"},
        {"cache_key": "user:42:profile"},
        {"password_policy": "min 12 characters"},
        {"next_page_token": "CAoQAA"},
        {"api_key": "${OPENAI_API_KEY}"},
        {"password": ""},
        {"I keep my passwords in 1Password": "x"},  # prose, not a credential's name
        {"auth": "required"},
    ],
)
def test_names_that_are_not_a_credential_holder_are_kept(metadata):
    assert find_secret({"metadata": metadata}) is None


def test_json_inside_a_string_is_read_through_its_escapes():
    """A tool's arguments are JSON in a string: the quotes of a JSON text inside are
    escaped (``{\\"client_secret\\": \\"...\\"}``)."""
    inner = {"client_secret": tok(40), "private_key_id": hexs(40)}
    arguments = json.dumps({"q": json.dumps(inner)})
    assert secret_kind(arguments) is not None
    assert tok(40) not in redact(arguments)
    assert secret_kind(json.dumps({"q": 'PASSWORD=""'})) is None  # an escaped empty value


def test_an_id_error_never_echoes_a_credential():
    secret = f"AccountKey={tok(40)}"  # not an id: "=" is outside the id rule
    with pytest.raises(InvalidInput) as refused:
        check_id_part(secret, "session_id")
    assert secret[:20] not in str(refused.value) and refused.value.field == "session_id"
    with pytest.raises(InvalidInput) as plain:
        check_id_part("not an id", "session_id")
    assert "'not an id'" in str(plain.value)  # an ordinary mistake is still shown
