"""A corpus of realistic credential shapes and near-miss benign facts for the secret filter.

Every credential is assembled here from a fixed seed and its documented prefix, so no
literal that a secret scanner would flag sits in the repository; the values are fake but
have the length, alphabet and framing of the real thing.
"""

from __future__ import annotations

import base64
import random
import string

_rng = random.Random(11)

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits


def tok(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64(n_bytes: int) -> str:
    return base64.b64encode(bytes(_rng.randrange(256) for _ in range(n_bytes))).decode()


def _pem(kind: str) -> str:
    begin, end = "-----BEGIN ", "-----END "
    tail = f"{kind}PRIVATE KEY-----"
    return f"{begin}{tail}\n{b64(48)}\n{b64(48)}\n{end}{tail}"


def _jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = base64.urlsafe_b64encode(b'{"sub":"4242","name":"Ada"}').rstrip(b"=").decode()
    return f"{header}.{claims}.{tok(43, URLSAFE)}"


def _uuid() -> str:
    return "-".join(tok(n, HEX) for n in (8, 4, 4, 4, 12))


_AZ_HOST = "core." + "windows.net"

# (label, text): each one must be refused.
SECRETS: list[tuple[str, str]] = [
    ("openai project key", f"Use this key for the batch job: sk-proj-{tok(48, URLSAFE)}"),
    ("openai legacy key", f"the old key was sk-{tok(20)}{'T3Blbk' + 'FJ'}{tok(20)}"),
    ("openai service account", f"OPENAI=sk-svcacct-{tok(40, URLSAFE)}"),
    ("anthropic key", f"claude key: sk-ant-api03-{tok(93, URLSAFE)}AA"),
    ("github classic pat", f"push with ghp_{tok(36)}"),
    ("github oauth token", f"gho_{tok(36)} is the oauth token"),
    ("github server token", f"GITHUB_TOKEN is ghs_{tok(36)}"),
    ("github fine-grained pat", f"github_pat_{tok(22)}_{tok(59)}"),
    ("stripe live secret", f"charge with sk_live_{tok(24)}"),
    ("stripe publishable", f"frontend uses pk_live_{tok(24)}"),
    ("stripe restricted", f"rk_test_{tok(24)} for the webhook"),
    ("aws access key id", f"AKIA{tok(16, UPPER_DIGITS)} is the deploy user's key id"),
    ("aws session key id", f"temporary ASIA{tok(16, UPPER_DIGITS)}"),
    ("aws secret key", f"aws_secret_access_key = {tok(40, B64)}"),
    ("slack bot token", f"xoxb-{tok(12, string.digits)}-{tok(13, string.digits)}-{tok(24)}"),
    ("google api key", f"maps key AIza{tok(35, URLSAFE)}"),
    ("bearer header", f"Authorization: Bearer {tok(40, URLSAFE)}"),
    (
        "basic header",
        f"Authorization: Basic {base64.b64encode(b'deploy:' + tok(12).encode()).decode()}",
    ),
    ("rsa private key", _pem("RSA ")),
    ("openssh private key", _pem("OPENSSH ")),
    ("jwt", f"session cookie {_jwt()}"),
    ("api_key assignment", f'api_key = "{tok(32)}"'),
    ("password prose", "my password is " + "Tr0ub4" + "dor&3x"),
    ("wifi password prose", "The wifi password is " + "sunflower" + "42"),
    ("passphrase", "passphrase: " + "-".join(("correct", "horse", "battery", "staple"))),
    ("postgres url", f"postgres://app:{tok(16)}@db.internal:5432/prod"),
    ("mongodb srv url", f"mongodb+srv://admin:{tok(14)}@cluster0.abcde.mongodb.net/test"),
    ("mysql url", "mysql://root:" + "pa55" + "w0rd!" + "@localhost:3306/shop"),
    ("amqp url", f"amqp://guest:{tok(18)}@rabbit:5672/"),
    (
        "azure storage connection string",
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={b64(64)};"
        f"EndpointSuffix={_AZ_HOST}",
    ),
    (
        "azure service bus connection string",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={b64(32)}",
    ),
    (
        "azure sas url",
        f"https://acme.blob.{_AZ_HOST}/reports/q3.pdf?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2025-01-01T00:00:00Z&sig={b64(32).replace('+', '%2B').replace('=', '%3D')}",
    ),
    ("redis url with password only", f"redis://:{tok(20)}@cache.internal:6379/0"),
    ("env DB_PASSWORD", "DB_PASSWORD=" + "Qw3rty" + "!2024x"),
    ("env TWILIO_AUTH_TOKEN", f"TWILIO_AUTH_TOKEN={tok(32, HEX)}"),
    ("env PGPASSWORD", "export PGPASSWORD=" + "s3cure" + "Pgpass"),
    ("env SECRET_KEY_BASE", f"SECRET_KEY_BASE={tok(128, HEX)}"),
    ("django secret key", f"SECRET_KEY = 'django-insecure-{tok(50, ALNUM + '!@#%^&*(-_=+)')}'"),
    ("hugging face token", f"hf_{tok(34, string.ascii_letters)}"),
    ("npm token", f"npm_{tok(36)}"),
    ("npmrc authToken", f"//registry.npmjs.org/:_authToken={_uuid()}"),
    ("gitlab pat", f"glpat-{tok(20, URLSAFE)}"),
    ("sendgrid key", f"SG.{tok(22, URLSAFE)}.{tok(43, URLSAFE)}"),
    (
        "slack webhook url",
        f"https://hooks.slack.com/services/T{tok(8, UPPER_DIGITS)}/B{tok(10, UPPER_DIGITS)}/"
        f"{tok(24)}",
    ),
    ("api key prose with hex", f"The weather API key is {tok(32, HEX)}"),
    ("client_secret json", f'{{"client_secret": "{tok(40, URLSAFE)}"}}'),
    ("refresh token assignment", f"refresh_token={tok(64, URLSAFE)}"),
    ("x-api-key header", f"X-API-Key: {tok(32)}"),
]

# (label, text): none of these may be refused (at most one is tolerated by the target).
BENIGN: list[tuple[str, str]] = [
    ("password changed", "The password was changed yesterday"),
    ("kubernetes secret name", "Kubernetes secret: db-credentials"),
    ("bearer template", "Send the header Authorization: Bearer <api key>"),
    ("connection template", "Connection format: postgres://USER:PASSWORD@HOST/DB"),
    ("mongodb template", "mongodb://<username>:<password>@cluster0.example.net"),
    ("secret prose", "secret: the launch is on Monday"),
    ("hex color", "The brand color is #1a2b3c"),
    ("hex colors", "Primary color #FF5733 and accent #C70039"),
    ("uuid", f"Request id {_uuid()} failed twice"),
    ("git sha", f"Fixed in commit {tok(40, HEX)}"),
    ("sha256", f"The sha256 of the file is {tok(64, HEX)}"),
    ("preference", "User prefers dark mode and vim keybindings"),
    ("rotation advice", "Remember to rotate the API keys every 90 days"),
    ("password policy", "The password policy requires 12 characters"),
    ("reset link", "Reset your password at https://example.com/reset"),
    ("token of appreciation", "My token of appreciation was a thank-you card"),
    ("password manager", "I keep my passwords in 1Password"),
    ("secret ingredient", "The secret ingredient is cardamom"),
    ("env var advice", "Set the OPENAI_API_KEY environment variable before running"),
    ("env lookup code", "api_key = os.environ['OPENAI_API_KEY']"),
    ("env reference", "password: ${DB_PASSWORD}"),
    ("angle placeholder", "token=<YOUR_TOKEN>"),
    ("your-key-here", "api_key: your-api-key-here"),
    ("masked", "password: ********"),
    ("token budget", "Token budget is 4000 tokens"),
    ("min length", "Password must be at least 8 characters long"),
    ("key card", "The access key card is at the front desk"),
    ("revoked", "The API key was revoked last week"),
    ("authorization prose", "Authorization: pending manager approval"),
    ("password manager choice", "My favourite password manager is Bitwarden"),
    ("scikit-learn", "I use scikit-learn and pandas for the models"),
    ("docs url", "Docs at https://docs.python.org/3/library/secrets.html"),
    ("redis without creds", "Cache at redis://localhost:6379/0"),
    ("version", "Version v1.2.3-beta.4 shipped on 2024-05-17"),
    ("network", "IP 192.168.1.10 and MAC 00:1A:2B:3C:4D:5E"),
    ("secret to bread", "The secret to good bread is patience"),
]
