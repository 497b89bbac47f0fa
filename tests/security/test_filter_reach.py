"""Issue 43: the secret filter holds on credentials it was not shown. Spec 001's list whole
(a test per line of it), credentials said in prose and in configs, wrapped in base64 or
percent-encoding, beside a credential word; payment data as its own kinds with the setting
that allows it; and the unseen half of the issue's corpus."""

from __future__ import annotations

import base64
import json
import urllib.parse
from pathlib import Path

import pytest

from memstack._payment import ALLOW_PAYMENT_DATA
from memstack.bench.secret_filter import corpus_figures
from memstack.errors import InvalidInput
from memstack.redaction import redact
from memstack.secrets import find_secret, refuse_secrets, secret_kind
from tests.security import fresh_corpus
from tests.security.fresh_corpus import PAYMENT_CARD, tok

KEY = tok(32)


# Spec 001, "Trust boundary: secret/credential redaction", one test per line of its list.


def test_spec_openai_style_sk_anthropic_sk_ant_github_ghp_gho_etc():
    assert secret_kind(f"sk-{tok(48)}") == "openai_key"
    assert secret_kind(f"sk-ant-api03-{tok(60)}") == "anthropic_key"
    for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        assert secret_kind(f"{prefix}{tok(36)}") == "github_token"


def test_spec_stripe_sk_live_and_pk_live():
    assert secret_kind(f"sk_live_{tok(24)}") == "stripe_key"
    assert secret_kind(f"the checkout uses pk_live_{tok(24)}") == "stripe_key"
    assert secret_kind(f"pk_test_{tok(24)} is the test page's public key") is None


def test_spec_aws_access_keys_akia_and_aws_secret_access_key_assignments():
    assert secret_kind("AKIA" + tok(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")) == "aws_access_key"
    assert secret_kind(f"aws_secret_access_key = {tok(40)}") == "aws_secret"


def test_spec_authorization_bearer_headers():
    assert secret_kind(f"Authorization: Bearer {KEY}") == "authorization_header"
    assert secret_kind(f"curl -H 'x: Bearer {KEY}'") == "bearer_token"


def test_spec_pem_armored_private_keys():
    assert secret_kind("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE") == "private_key"
    assert secret_kind("-----BEGIN PUBLIC KEY-----\nMFkwEwYH") is None


def test_spec_jwts_three_base64_segments_separated_by_dots():
    assert secret_kind(f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.{tok(43)}") == "jwt"


def test_spec_generic_api_key_token_password_secret_assignments():
    for name in ("api_key", "token", "password", "secret"):
        assert secret_kind(f"{name} = {tok(20)}") == "credential_assignment", name


def test_spec_db_connection_strings_with_embedded_creds():
    assert secret_kind(f"postgres://user:{tok(12)}@host/db") == "connection_string"
    assert secret_kind("postgres://db.internal:5432/app") is None


# Context: a credential word followed closely by a value, in prose, configs and tool calls.

SAID = {
    "the wifi password at the office is purple-elephant-42": "password_in_prose",
    "ssh root@10.0.0.5 with password Tr0ub4dor&3": "password_in_prose",
    "my debit card PIN is 4921": "code_in_prose",
    "your verification code is 839201": "code_in_prose",
    f"[database]\npass = {tok(12)}": "credential_assignment",
    f"//registry.npmjs.org/:_authToken={tok(36)}": "npm_token",
    f"x-api-key: {tok(32)}": "credential_assignment",
    f"https://bob:{tok(10)}@git.acme.io/app.git": "connection_string",
    f'{{"arguments": "{{\\"pwd\\": \\"{tok(10)}\\"}}"}}': "credential_assignment",
}

NOT_SAID = [
    "passwords must be at least 12 characters",
    "use the publishable key from the dashboard",
    "my password manager is 1Password",
    "the verification code expires in 10 minutes",
    "zip code 94107",
    "error code 500 from the gateway",
    "the GPG key id is 3F9A8B7C6D5E4F3A",
    "the password reset link expires after an hour",
]


@pytest.mark.parametrize("text", SAID, ids=list(SAID.values()))
def test_a_credential_word_followed_by_a_value_is_a_secret(text: str):
    assert secret_kind(text) == SAID[text]


@pytest.mark.parametrize("text", NOT_SAID)
def test_the_same_words_without_a_value_are_not(text: str):
    assert secret_kind(text) is None


def test_a_random_token_beside_a_credential_word_is_a_secret_but_not_a_low_entropy_one():
    assert secret_kind(f"the deploy token {KEY} expires Friday") == "token_beside_word"
    assert secret_kind("the deploy token configurationmanager expires Friday") is None
    assert secret_kind("the deploy token Aa1Aa1Aa1Aa1Aa1Aa1 expires") is None  # 1.6 bits


def test_a_wrapped_credential_is_decoded_once_and_checked_again():
    inner = f"api_key={tok(32)}"
    assert secret_kind(f"blob {base64.b64encode(inner.encode()).decode()}") is not None
    assert secret_kind(f"next={urllib.parse.quote(inner, safe='')}") is not None
    basic = base64.b64encode(f"admin:{tok(12)}".encode()).decode()
    assert secret_kind(f"the header was {basic}") == "basic_credentials"
    prose = base64.b64encode(b"we met in Lisbon last spring").decode()
    assert secret_kind(f"blob {prose}") is None
    assert secret_kind("caf%C3%A9 au lait") is None


def test_a_credential_inside_escaped_strings_is_read_as_written():
    """A tool call's arguments are JSON in a JSON string; a message quoting one escapes it
    again, and a config file's newlines become two characters."""
    call = json.dumps({"arguments": json.dumps({"pwd": "XXID5rXwlh"})})
    assert '\\\\\\"pwd' in json.dumps({"q": call})
    assert secret_kind(json.dumps({"q": call})) == "credential_assignment"
    assert secret_kind(json.dumps({"q": "[smtp]\nuser=mailer\npass=jUihNCtY31zeLI"})) is not None
    assert redact(json.dumps({"q": call})) == "[REDACTED:credential_assignment]"
    assert secret_kind(json.dumps({"path": "C:\\new\\tokens\\readme.txt"})) is None
    assert secret_kind(json.dumps({"q": json.dumps({"note": "the pwd is in the vault"})})) is None


# Payment data: its own kinds, refused by default, allowed by a setting.


def test_card_numbers_and_ibans_are_refused_as_their_own_kinds(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.delenv(ALLOW_PAYMENT_DATA, raising=False)
    assert all(secret_kind(text) == "payment_card" for text in PAYMENT_CARD)
    assert secret_kind("my IBAN is GB82 WEST 1234 5698 7654 32") == "iban"
    assert secret_kind("test card 4242 4242 4242 4242") is None  # a published test number
    assert secret_kind("card 4111 1111 1111 1112") is None  # fails the Luhn check
    assert secret_kind("GB83 WEST 1234 5698 7654 32") is None  # fails mod 97
    assert secret_kind("call +49 1512 3456789") is None


def test_the_setting_lets_payment_data_through_but_not_credentials(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(ALLOW_PAYMENT_DATA, "1")
    assert secret_kind(PAYMENT_CARD[0]) is None
    assert secret_kind("my IBAN is GB82 WEST 1234 5698 7654 32") is None
    assert secret_kind(f"sk_live_{tok(24)}") == "stripe_key"


def test_the_error_names_the_field_and_the_kind_never_the_value():
    card = PAYMENT_CARD[1]
    found = find_secret({"metadata": {"billing": [card]}})
    assert found is not None and found.field == "metadata.billing[0]"
    with pytest.raises(InvalidInput) as raised:
        refuse_secrets({"metadata": {"billing": [card]}}, where="memories")
    message = str(raised.value)
    assert "metadata.billing[0]" in message and "payment card" in message
    digits = "".join(c for c in card if c.isdigit())
    assert digits[-8:] not in message.replace(" ", "")


# The corpus, measured on the half the filter was not tuned on too.


@pytest.mark.parametrize("half", ["tuned", "held_out"])
def test_the_corpus_is_caught_and_its_look_alikes_pass(half: str):
    figures = corpus_figures(Path(fresh_corpus.__file__))[half]
    assert figures["caught"] >= 0.95 * figures["credentials"], figures["wrong"]
    assert figures["refused"] <= 0.01 * figures["lookalikes"], figures["wrong"]
