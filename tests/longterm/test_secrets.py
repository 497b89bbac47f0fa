import pytest

from memstack.longterm.secrets import looks_like_secret, secret_kind

SECRETS = [
    ("openai_key", "my key is sk-abcdefghijklmnopqrstuvwx1234"),
    ("openai_key", "use sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345 for the project"),
    ("anthropic_key", "ANTHROPIC=sk-ant-api03-abcdefghijklmnopqrstu"),
    ("github_token", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github_token", "gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("stripe_key", "stripe sk_live_51Habcdefghijklmn"),
    ("stripe_key", "publishable pk_live_abcdefghijklmnop"),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE is the access key"),
    ("aws_secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("authorization_header", "Authorization: Basic dXNlcjpwYXNz"),
    ("bearer_token", "curl -H 'x: Bearer abcdef0123456789abcdef'"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow..."),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("private_key", "-----BEGIN PRIVATE KEY-----"),
    ("jwt", "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
    ("credential_assignment", "api_key=abcd1234efgh"),
    ("credential_assignment", 'password: "hunter22"'),
    ("credential_assignment", "SECRET = s3cr3tvalue"),
    ("credential_assignment", "client_secret => xyz987"),
    ("credential_assignment", "TOKEN:abc123.def456"),
    ("password_statement", "My password is hunter2, don't tell anyone"),
    ("connection_string", "DATABASE_URL=postgres://admin:pa55word@db.internal:5432/app"),
    ("connection_string", "mongodb+srv://user:pw@cluster0.mongodb.net"),
    ("slack_token", "xoxb-1234567890-abcdefghij"),
    ("google_api_key", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
]

BENIGN = [
    "The user prefers concise answers with code examples.",
    "Alice lives in Oslo and works on a Rust compiler.",
    "The user decided to use PostgreSQL for the project.",
    "We talked about the password manager the user likes (1Password).",
    "The user asked how tokens are counted by the model.",
    "Visit https://example.com/docs for the API reference.",
    "postgres://db.internal:5432/app has no credentials in it",
    "The user's favourite skiing spot is Hemsedal.",
    "Use sk-learn for the classifier.",
    "",
]


@pytest.mark.parametrize(("kind", "text"), SECRETS)
def test_credential_shapes_are_caught(kind: str, text: str):
    assert looks_like_secret(text)
    assert secret_kind(text) == kind


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_facts_pass(text: str):
    assert not looks_like_secret(text)
