"""A corpus of realistic credential shapes and near-miss benign facts for the secret filter.

Every credential is assembled here from a fixed seed and its documented prefix, so no
literal that a secret scanner would flag sits in the repository; the values are fake but
have the length, alphabet and framing of the real thing.
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib

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
    ("stripe restricted live", f"payouts job uses rk_live_{tok(24)}"),
    ("stripe restricted", f"rk_test_{tok(24)} for the webhook"),
    ("stripe publishable live", f"frontend uses pk_live_{tok(24)}"),
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


# Issue 30: shapes the filter missed, weak credential assignments, and benign look-alikes it
# refused. Labels are "family/variant"; each family appears alone, in a sentence, in
# JSON/YAML/env-file form and in a URL or command where the shape occurs there.


def hexs(n: int) -> str:
    return tok(n, HEX)


def _twilio_sid(prefix: str) -> str:
    return prefix + hexs(32)


def _pypi(host: bytes = b"pypi.org") -> str:
    macaroon = bytes((2, 1, len(host))) + host + bytes(_rng.randrange(256) for _ in range(120))
    return "pypi-" + base64.urlsafe_b64encode(macaroon).rstrip(b"=").decode()


def _do(kind: str = "p") -> str:
    return f"do{kind}_v1_{hexs(64)}"


def _telegram() -> str:
    return f"{_rng.randrange(10**8, 10**10)}:AA{tok(33, URLSAFE)}"


def _discord() -> str:
    snowflake = str(_rng.randrange(10**17, 2 * 10**18)).encode()
    first = base64.urlsafe_b64encode(snowflake).rstrip(b"=").decode()
    return f"{first}.{tok(6, URLSAFE)}.{tok(_rng.choice((27, 38)), URLSAFE)}"


def _terraform() -> str:
    return f"{tok(14)}.atlasv1.{tok(_rng.randrange(60, 80), URLSAFE)}"


def _square() -> str:
    return "EAAA" + tok(60, URLSAFE)


def _firebase() -> str:
    return f"AAAA{tok(7, URLSAFE)}:APA91b{tok(134, URLSAFE)}"


def _service_account(indent: int | None = 2) -> str:
    fields = {
        "type": "service_account",
        "project_id": "acme-analytics-prod",
        "private_key_id": hexs(40),
        "client_email": "etl-runner@acme-analytics-prod.iam.gserviceaccount.com",
        "client_id": str(_rng.randrange(10**20, 10**21)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
    }
    return json.dumps(fields, indent=indent)


NEW_SECRETS: list[tuple[str, str]] = [
    ("twilio/env pair", f"TWILIO_ACCOUNT_SID={_twilio_sid('AC')}\nTWILIO_AUTH_TOKEN={hexs(32)}"),
    ("twilio/sentence", f"Twilio account {_twilio_sid('AC')} with auth token {hexs(32)}"),
    (
        "twilio/json api key",
        f'{{"account_sid": "{_twilio_sid("AC")}", "api_key": "{_twilio_sid("SK")}"}}',
    ),
    ("twilio/url", f"https://api.twilio.com/2010-04-01/Accounts/{_twilio_sid('AC')}/Messages.json"),
    ("twilio/api key sid alone", _twilio_sid("SK")),
    ("twilio/api key sid sentence", f"the SMS sender uses API key {_twilio_sid('SK')} now"),
    ("pypi/alone", _pypi()),
    ("pypi/pypirc", f"[pypi]\nusername = __token__\npassword = {_pypi()}"),
    ("pypi/env", f"TWINE_PASSWORD={_pypi()}"),
    ("pypi/sentence test index", f"upload to test.pypi.org with {_pypi(b'test.pypi.org')} please"),
    ("pypi/command", f"twine upload -u __token__ -p {_pypi()} dist/*"),
    ("digitalocean/alone", _do()),
    ("digitalocean/env", f"export DIGITALOCEAN_TOKEN={_do()}"),
    ("digitalocean/command", f"doctl auth init --access-token {_do()}"),
    ("digitalocean/yaml oauth", f"digitalocean:\n  oauth_token: {_do('o')}"),
    ("shopify/sentence", f"The Admin API access token is shpat_{hexs(32)} for the store"),
    ("shopify/env custom app", f"SHOPIFY_ACCESS_TOKEN=shpca_{hexs(32)}"),
    ("shopify/json header", f'{{"X-Shopify-Access-Token": "shppa_{hexs(32)}"}}'),
    ("shopify/shared secret", f"webhook shared secret shpss_{hexs(32)}"),
    ("databricks/alone", f"dapi{hexs(32)}"),
    ("databricks/env", f"DATABRICKS_TOKEN=dapi{hexs(32)}-2"),
    (
        "databricks/cfg",
        f"[DEFAULT]\nhost = https://adb-4242.azuredatabricks.net\ntoken = dapi{hexs(32)}",
    ),
    ("databricks/sentence", f"use the workspace PAT dapi{hexs(32)} for the nightly job"),
    ("mailgun/sentence", f"Mailgun private API key key-{hexs(32)}"),
    ("mailgun/env", f"MAILGUN_API_KEY=key-{hexs(32)}"),
    (
        "mailgun/curl",
        f"curl -s --user 'api:key-{hexs(32)}' https://api.mailgun.net/v3/mg.acme.io/messages",
    ),
    ("mailgun/json", f'{{"mailgun": {{"domain": "mg.acme.io", "key": "key-{hexs(32)}"}}}}'),
    ("telegram/alone", _telegram()),
    ("telegram/url", f"https://api.telegram.org/bot{_telegram()}/sendMessage?chat_id=42"),
    ("telegram/env", f"TELEGRAM_BOT_TOKEN={_telegram()}"),
    ("telegram/sentence", f"BotFather gave me {_telegram()} for the alerts bot"),
    ("discord/alone", _discord()),
    ("discord/env", f"DISCORD_TOKEN={_discord()}"),
    ("discord/python", f"client.run('{_discord()}')"),
    ("discord/json", f'{{"bot": {{"token": "{_discord()}", "prefix": "!"}}}}'),
    ("terraform/alone", _terraform()),
    (
        "terraform/credentials json",
        f'{{"credentials": {{"app.terraform.io": {{"token": "{_terraform()}"}}}}}}',
    ),
    ("terraform/env", f"TF_TOKEN_app_terraform_io={_terraform()}"),
    ("terraform/sentence", f"our team token {_terraform()} expires in March"),
    ("square/alone", _square()),
    ("square/sentence sandbox", f"the sandbox token sq0atp-{tok(22, URLSAFE)} works"),
    ("square/env app secret", f"SQUARE_APPLICATION_SECRET=sq0csp-{tok(43, URLSAFE)}"),
    ("square/json", f'{{"environment": "production", "access_token": "{_square()}"}}'),
    (
        "square/header",
        f"curl -H 'Square-Version: 2024-10-17' -H 'Authorization: Bearer {_square()}'",
    ),
    ("firebase/alone", _firebase()),
    ("firebase/legacy header", f"Authorization: key={_firebase()}"),
    ("firebase/json", f'{{"fcm": {{"server_key": "{_firebase()}"}}}}'),
    ("firebase/env", f"FCM_SERVER_KEY={_firebase()}"),
    ("gcp service account/pretty json", _service_account()),
    ("gcp service account/one line json", _service_account(None)),
    ("gcp service account/key id only", f'"private_key_id": "{hexs(40)}",'),
    (
        "gcp service account/yaml",
        f"type: service_account\nproject_id: acme-prod\nprivate_key_id: {hexs(40)}",
    ),
    ("weak assignment/password spaced", "password = letmein"),
    ("weak assignment/pwd", "pwd=qwerty"),
    ("weak assignment/api_key quoted", 'api_key="abcdef"'),
    ("weak assignment/token", "token=abc"),
    ("weak assignment/yaml nested", "db:\n  user: app\n  password: letmein"),
    ("weak assignment/json", '{"username": "ada", "password": "sunshine"}'),
    ("weak assignment/client_secret yaml", "client_secret: hunter"),
    ("weak assignment/export", "export API_KEY=abc"),
    ("weak assignment/secret_key python", "SECRET_KEY = 'dev'"),
    ("weak assignment/access_token yaml", "access_token: tok"),
    ("weak assignment/refresh_token arrow", 'refresh_token => "r1"'),
    ("weak assignment/go walrus", "authToken := guest"),
    ("weak assignment/private_key", "private_key = mykey"),
    ("weak assignment/apikey", "apikey: foo"),
    ("weak assignment/credentials", "credentials=admin:admin"),
    ("weak assignment/bearer", '"bearer": "qwerty"'),
    ("weak assignment/MYSQL_PWD", "MYSQL_PWD=root"),
    ("weak assignment/pass", "pass=dragon"),
    ("weak assignment/passwd yaml", "passwd: monkey"),
    ("weak assignment/PASSWORD quoted", "PASSWORD='password'"),
    ("weak assignment/mid-sentence", "Wifi name: Home5G, password: letmein"),
    ("weak assignment/url query", "https://example.com/login?user=ada&password=letmein"),
    ("weak assignment/url token", "https://example.com/api/v1/export?token=abc&format=csv"),
    ("weak assignment/camel case", "clientSecret: 'test'"),
    ("weak assignment/access_key", "access_key=dev"),
    ("weak assignment/passphrase", "passphrase = opensesame"),
    ("weak assignment/toml", '[database]\nhost = "db.internal"\npassword = "changeit"'),
    ("weak assignment/cli flag", "mysql -u root --password=toor shop"),
    ("weak assignment/user memory", "The user's wifi password: sunflower"),
    ("weak assignment/docker env", "-e POSTGRES_PASSWORD=postgres"),
]

NEW_BENIGN: list[tuple[str, str]] = [
    ("stripe publishable/sentence", f"frontend uses pk_test_{tok(24)}"),
    ("stripe publishable/env", f"STRIPE_PUBLISHABLE_KEY=pk_test_{tok(24)}"),
    ("stripe publishable/json", f'{{"publishableKey": "pk_test_{tok(99)}"}}'),
    ("stripe publishable/js", f"const stripe = Stripe('pk_test_{tok(24)}');"),
    ("module path/alone", "memstack.storage._postgres_query.vector_search_sql"),
    ("module path/sentence", "See memstack._tokenness.passes for the levels"),
    (
        "module path/import",
        "from memstack.adapters.langgraph._search import keyword_search_results_for_namespace",
    ),
    (
        "module path/long",
        "memstack.service.long_term_memory_service.remember_conversation_with_reconciliation",
    ),
    ("module path/entry point", "uvicorn memstack.transports.app:create_app --factory"),
    (
        "module path/camel",
        "MemoryServiceHandlerAbc.update.ConfigurationLoaderFactoryX handles reloads",
    ),
    ("non-credential key/s3", "S3 key: reports/2024/q3/summary.csv"),
    ("non-credential key/cache", "Cache key: user:42:profile"),
    ("non-credential key/idempotency", "idempotency key: order-2024-11-27-0042"),
    ("non-credential key/partition", "partition_key=tenant_42"),
    ("non-credential key/primary", "The primary key is (tenant_id, created_at)"),
    ("non-credential key/sort", "sort key: created_at#2024-11-27T10:00:00Z"),
    ("non-credential key/foreign", "foreign key: orders.customer_id -> customers.id"),
    ("non-credential key/object", "object key: uploads/avatars/ada-2024-11-27.png"),
    ("non-credential key/map", "map key: session-7f3a9c2e4b1d"),
    ("non-credential key/dict", "dict key: 'user_id' maps to the profile row"),
    ("non-credential key/keyboard", "Press the Escape key: it closes the dialog"),
    ("non-credential key/key-value talk", "key: value pairs are stored in the metadata column"),
    ("non-credential key/dynamodb", "DynamoDB sort_key=ts#2024-11-27T10:00 and hash key userId"),
    (
        "non-credential key/idempotency header",
        "send idempotency_key=req-2024-11-27-0001 on retries",
    ),
    ("non-credential key/redis", "Redis cache_key=user:42:profile:v2 expires in 300 s"),
    ("non-credential key/s3 object", "S3 object key: backups/2024-11-27/db-dump-0042.sql.gz"),
    ("non-credential key/public ssh", f"public_key=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{tok(43)}"),
    ("credential word/page token", "Pagination: next_page_token=CAoQAA for page two"),
    ("credential word/max tokens", "max_tokens=4000 for the summary call"),
    ("credential word/password policy", "password_policy: min 12 chars, one digit"),
    ("credential word/boarding pass", "Boarding pass: gate B12, seat 14C"),
    ("credential word/test counts", "CI run: pass=120 fail=3 skip=2"),
    ("credential word/pwd env", "PWD=/home/ada/projects/memstack"),
    ("credential word/secret prose", "The secret: keep batches under 100 items"),
    ("credential word/auth required", "auth: required for all /admin routes"),
    ("credential word/password prose", "The user's password was reset yesterday by IT"),
    ("credential word/token count", "token count: 4,096 for the prompt"),
    ("placeholder/function call", "token = get_token()"),
    ("placeholder/settings", "api_key = settings.OPENAI_API_KEY"),
    ("placeholder/environ", "password = os.environ['DB_PASSWORD']"),
    ("placeholder/null", "password: null"),
    ("placeholder/none", "api_key=None"),
    ("placeholder/redacted", "secret: <redacted>"),
    ("placeholder/env var", "token=${GITHUB_TOKEN}"),
    ("placeholder/template", "password: '{{ db_password }}'"),
    ("placeholder/mask", "token: ***"),
    ("placeholder/empty", "password="),
    ("placeholder/empty quoted", 'PASSWORD=""'),
    ("placeholder/process env", "apiKey: process.env.MAPBOX_TOKEN"),
    ("placeholder/shell var", "export API_TOKEN=$VAULT_TOKEN"),
    ("look-alike/git sha", f"Revert ac{hexs(38)} from yesterday"),
    ("look-alike/key-value", "a key-value store (Redis) holds the sessions"),
    ("look-alike/telegram-ish time", "Logged at 20241127:1042 in the audit trail"),
    ("look-alike/service account prose", "The service account type is workload identity"),
    ("look-alike/uuid pair", f"Trace {_uuid()}.{_uuid()} was slow"),
]


ALL_SECRETS: list[tuple[str, str]] = SECRETS + NEW_SECRETS
ALL_BENIGN: list[tuple[str, str]] = BENIGN + NEW_BENIGN


def family(label: str) -> str:
    """A case's shape family: the part of its label before ``/`` (issue 11's cases have no
    family of their own)."""
    return label.split("/")[0] if "/" in label else "issue 11 corpus"


def halves(cases: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """The cases split in two: each family's cases alternately into ``tune`` and ``held``
    (which comes first depends on the family). The filter was tuned looking at ``tune``
    only; ``held`` measures it on cases it was not tuned on."""
    seen: dict[str, int] = {}
    out: dict[str, list[tuple[str, str]]] = {"tune": [], "held": []}
    for label, text in cases:
        name = family(label)
        n = seen[name] = seen.get(name, -1) + 1
        out["held" if (n + zlib.crc32(name.encode())) % 2 else "tune"].append((label, text))
    return out
