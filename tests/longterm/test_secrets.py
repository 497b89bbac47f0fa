import pytest

from memstack.secrets import looks_like_secret, secret_kind

SECRETS = [
    ("openai_key", "my key is sk-abcdefghijklmnopqrstuvwx1234"),
    ("openai_key", "use sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345 for the project"),
    ("anthropic_key", "ANTHROPIC=sk-ant-api03-abcdefghijklmnopqrstu"),
    ("github_token", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github_token", "gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("stripe_key", "stripe sk_live_51Habcdefghijklmn"),
    ("stripe_key", "restricted rk_live_abcdefghijklmnop"),
    ("stripe_key", "publishable pk_live_abcdefghijklmnop"),  # spec 001: sk_live_…/pk_live_…
    ("aws_access_key", "AKIAIOSFODNN7ABCDEFG is the access key"),
    ("aws_secret", "aws_secret_access_key = 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"),
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
    ("credential_assignment", "My password is hunter2, don't tell anyone"),
    ("connection_string", "DATABASE_URL=postgres://admin:pa55word@db.internal:5432/app"),
    ("connection_string", "mongodb+srv://user:pw@cluster0.mongodb.net"),
    ("slack_token", "xoxb-1234567890-abcdefghij"),
    ("google_api_key", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    # issue 30: vendor prefixes
    ("twilio_sid", "sid AC0123456789abcdef0123456789abcdef"),
    ("twilio_sid", "SK0123456789abcdef0123456789abcdef"),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3A"),
    ("digitalocean_token", "dop_v1_" + "0123456789abcdef" * 4),
    ("shopify_token", "shpat_0123456789abcdef0123456789abcdef"),
    ("databricks_token", "dapi0123456789abcdef0123456789abcdef"),
    ("mailgun_key", "key-0123456789abcdef0123456789abcdef"),
    ("telegram_bot_token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"),
    ("dotted_token", "MTA4NzQ2NjI5MzY0NjU0NjA4MQ.GaBcDe.q1w2e3r4t5y6u7i8o9p0AsDfGhJkLzX"),
    ("terraform_token", "Ab1Cd2Ef3Gh4Ij.atlasv1.q1w2e3r4t5y6u7i8o9p0AsDfGhJkLzXcVbNm"),
    ("square_token", "EAAA" + "l0ZxB7hT2kQp9Wm4" * 4),
    ("square_token", "sq0csp-q1w2e3r4t5y6u7i8o9p0AsDf"),
    ("firebase_key", "AAAAb1c2d3e:APA91b" + "q1w2e3r4t5y6u7i8o9p0" * 3),
    ("gcp_service_account", '{"type": "service_account", "project_id": "acme"}'),
    ("gcp_service_account", "private_key_id: " + "0123456789abcdef" * 2 + "01234567"),
    # issue 30: any value assigned to a credential name
    ("credential_assignment", "password = letmein"),
    ("credential_assignment", "pwd=qwerty"),
    ("credential_assignment", 'api_key="abcdef"'),
    ("credential_assignment", "token=abc"),
    ("credential_assignment", "db:\n  password: letmein\n  port: 5432"),
    ("credential_assignment", '{"refresh_token": "r1"}'),
    ("credential_assignment", "authToken := guest"),
    ("credential_assignment", "https://example.com/login?user=ada&password=letmein"),
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
    "AKIAIOSFODNN7EXAMPLE is the access key AWS's documentation uses",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (the docs' example)",
    "STRIPE_PUBLISHABLE_KEY=pk_test_abcdefghijklmnop",
    "memstack.storage._postgres_query.vector_search_sql",
    "S3 key: reports/2024/q3/summary.csv",
    "Cache key: user:42:profile",
    "idempotency key: order-2024-11-27-0042",
    "partition_key=tenant_42",
    "Kubernetes secret: db-credentials",
    "secret: the launch is on Monday",
]

# The placeholders and empties an assignment to a credential name may hold.
PLACEHOLDERS = [
    "password=",
    'password=""',
    "password: <redacted>",
    "token: ***",
    "password: ${DB_PASSWORD}",
    "token=$GITHUB_TOKEN",
    "password: '{{ db_password }}'",
    "api_key=None",
    "password: null",
    "secret = changeme",
    "api_key: your-api-key-here",
    "token = get_token()",
    "api_key = os.environ['OPENAI_API_KEY']",
    "api_key = settings.OPENAI_API_KEY",
    "password: PASSWORD",
    "auth_token: false",
    "?user=ada&password=&next=/",
]


@pytest.mark.parametrize(("kind", "text"), SECRETS)
def test_credential_shapes_are_caught(kind: str, text: str):
    assert looks_like_secret(text)
    assert secret_kind(text) == kind


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_facts_pass(text: str):
    assert not looks_like_secret(text)


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_placeholders_assigned_to_credential_names_pass(text: str):
    assert secret_kind(text) is None
