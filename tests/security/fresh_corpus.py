"""Issue 43's corpus: credentials of kinds and phrasings the filter's earlier corpus
(``tests/longterm/secret_corpus.py``) did not hold, and look-alikes that are not secrets.

Written before the filter was tuned on it and split before tuning: within each kind, the
items at even places are the half the filter was tuned on (``"tuned"``), the odd ones the
half it was not (``"held_out"``). ``memstack bench secrets --corpus
tests/security/fresh_corpus.py`` prints both halves per kind. Every value is assembled here
from a fixed seed and its documented shape (no live credential sits in the repository);
the prose is how people write.
"""

from __future__ import annotations

import base64
import random
import string
import urllib.parse
from collections.abc import Callable

_rng = random.Random(43)

LOWER_DIGITS = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def tok(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _luhn(prefix: str, length: int) -> str:
    body = prefix + tok(length - len(prefix) - 1, string.digits)
    total = 0
    for i, d in enumerate(reversed(body)):
        n = int(d) * (2 if i % 2 == 0 else 1)
        total += n - 9 if n > 9 else n
    return body + str((10 - total % 10) % 10)


def _iban(country: str, bban: str) -> str:
    moved = bban + country + "00"
    digits = "".join(str(int(c, 36)) for c in moved)
    check = 98 - int(digits) % 97
    return f"{country}{check:02d}{bban}"


def _grouped(number: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(number[i : i + size] for i in range(0, len(number), size))


_VENDORS: list[tuple[str, Callable[[], str]]] = [
    ("age", lambda: "AGE-SECRET-KEY-1" + tok(58, BECH32)),
    ("linear", lambda: "lin_api_" + tok(40)),
    ("doppler", lambda: "dp.pt." + tok(43)),
    ("planetscale", lambda: "pscale_tkn_" + tok(43)),
    ("postman", lambda: f"PMAK-{tok(24, HEX)}-{tok(34, HEX)}"),
    ("pulumi", lambda: "pul-" + tok(40, HEX)),
    ("rubygems", lambda: "rubygems_" + tok(48, HEX)),
    ("grafana", lambda: f"glsa_{tok(32)}_{tok(8, HEX)}"),
    ("flyio", lambda: "fo1_" + tok(43)),
    ("dynatrace", lambda: f"dt0c01.{tok(24, LOWER_DIGITS.upper())}.{tok(64, LOWER_DIGITS)}"),
    ("vault", lambda: "hvs." + tok(95)),
    ("heroku", lambda: "HRKU-AA" + tok(58)),
    ("notion", lambda: "ntn_" + tok(11, string.digits) + tok(35)),
    ("prefect", lambda: "pnu_" + tok(36)),
    ("perplexity", lambda: "pplx-" + tok(48)),
    ("sendinblue", lambda: f"xkeysib-{tok(64, HEX)}-{tok(16)}"),
    ("octopus", lambda: "API-" + tok(26, string.ascii_uppercase + string.digits)),
    ("clojars", lambda: "CLOJARS_" + tok(60, LOWER_DIGITS)),
    ("easypost", lambda: "EZAK" + tok(54)),
    ("duffel", lambda: "duffel_live_" + tok(43)),
]
_VENDOR_FRAMES = [
    "here's the {name} token for the build box: {value}",
    "{value}",
]

VENDOR = [
    frame.format(name=name, value=make()) for name, make in _VENDORS for frame in _VENDOR_FRAMES
]
VENDOR += [
    f"curl -H 'Authorization: SSWS 00{tok(40)}' https://acme.okta.com/api/v1/users",
    f"Okta admin API: Authorization: SSWS 00{tok(40)}",
]


def _pem() -> str:
    begin, end, tail = "-----BEGIN ", "-----END ", "PRIVATE KEY-----"
    body = base64.b64encode(bytes(_rng.randrange(256) for _ in range(48))).decode()
    return f"{begin}EC {tail}\n{body}\n{end}EC {tail}"


def _jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":"k1"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"42","exp":1790000000}').rstrip(b"=").decode()
    return f"{head}.{body}.{tok(43, ALNUM + '-_')}"


SPEC_001 = {
    "sk-": [f"OPENAI_API_KEY={'sk-proj-' + tok(48, ALNUM + '-_')}", f"use sk-{tok(48)} for it"],
    "sk-ant-": [
        f"the claude key is sk-ant-api03-{tok(93, ALNUM + '-_')}AA",
        f"anthropic: sk-ant-admin01-{tok(60, ALNUM + '-_')}",
    ],
    "ghp_/gho_": [f"git push with ghp_{tok(36)}", f"oauth token gho_{tok(36)} from the app"],
    "sk_live_/pk_live_": [
        f"stripe secret sk_live_{tok(24)}",
        f"STRIPE_KEY=pk_live_{tok(24)}",
        f"the checkout page uses pk_live_{tok(99)[:34]}",
        f"restricted key rk_live_{tok(24)} for reports",
    ],
    "AKIA/aws_secret_access_key": [
        f"aws_access_key_id = AKIA{tok(16, string.ascii_uppercase + '234567')}",
        f"aws_secret_access_key: {tok(40, ALNUM + '+/')}",
    ],
    "Authorization/Bearer": [
        f"Authorization: Bearer {tok(40, ALNUM + '-_.')}",
        f"send it with bearer {tok(32)} in the header",
    ],
    "PEM": [_pem(), f"key file:\n{_pem()}"],
    "JWT": [_jwt(), f"session cookie was {_jwt()}"],
    "generic assignment": [f"client_secret = '{tok(28)}'", f"API_TOKEN: {tok(32)}"],
    "database URL": [
        f"postgres://app:{tok(14)}@db.internal:5432/prod",
        f"mysql://root:Summer{tok(4, string.digits)}!@10.0.3.7/shop",
    ],
}

PASSWORD_IN_PROSE = [
    "the wifi password at the office is purple-elephant-42",
    f"ssh root@10.0.0.5 with password Tr0ub4dor{tok(3, string.digits)}",
    "my gmail password is now correct-horse-battery-9",
    "Dad's laptop login password: Maple#2019",
    "the password for the shared drive is Kx7!mq2Lp",
    "I set the router admin password to bluefinch88",
    "door code for the server room is 5521#",
    "remember: the vpn passphrase is 'seven lazy otters swim at dawn'",
    "use password Winter2025! for the staging db",
    "her netflix password is sunflower_1987",
    "the zip file password is q9Z-44-plmK",
    "the bank login is alice.smith and the password is N0vember!",
    "passcode for the alarm panel: 7403",
    "my old password was hunter2hunter2 and I reused it",
    "login as admin / pw: P@ssw0rd123",
    "the password to the wifi, in case you forget, is dolphin-sunset-7",
]

PIN_OR_CODE = [
    "my debit card PIN is 4921",
    "your verification code is 839201",
    "the OTP is 552 019, it expires in five minutes",
    "SIM PIN: 1234 and PUK: 88213456",
    "your one-time passcode is 472910",
    "the 2FA code was 019283",
    "garage door keypad code is 8841",
    "the safe combination is 32-17-45",
    "Use security code 6271 to confirm the transfer",
    "your login code: 740 213",
]

CONFIG_FILE = [
    f"DB_PASSWORD={tok(16)}\nDB_USER=app",
    f"database:\n  user: app\n  password: {tok(12)}",
    f'[database]\npassword = "{tok(14)}"',
    f'{{"db": {{"host": "db", "pwd": "{tok(12)}"}}}}',
    f"[smtp]\nuser=mailer\npass={tok(14)}",
    f"//registry.npmjs.org/:_authToken={tok(36)}",
    f"x-api-key: {tok(32)}",
    f'api-key = "{tok(40, HEX)}"',
    f"SECRET_KEY_BASE={tok(64, HEX)}",
    f'  "apiKey": "{tok(32)}",',
    f"spring.datasource.password={tok(12)}",
    f"REDIS_PASS={tok(20)}",
    f'<add key="ApiToken" value="{tok(32)}" />',
    f"export GITHUB_TOKEN={tok(40)}",
    f"ENCRYPTION_KEY: {tok(44, ALNUM + '+/')}",
    f"token = {tok(24)}  # rotate monthly",
]

URL_CREDENTIALS = [
    f"redis://:{tok(20)}@cache.internal:6379/0",
    f"amqp://guest:{tok(12)}@mq:5672/",
    f"ftp://uploader:{tok(10)}@files.example.org/in",
    f"clone https://deploy:{tok(20)}@git.acme.io/app.git",
    f"mongodb+srv://admin:{tok(16)}@cluster0.mongodb.net/test",
    f"smtp://postmaster:{tok(12)}@mail.acme.io:587",
    f"proxy is http://bob:{tok(10)}@10.1.1.1:3128",
    f"jdbc:postgresql://db/app?user=app&password={tok(14)}",
]

TOOL_ARGUMENTS = [
    '{"name": "login", "arguments": "{\\"username\\": \\"ops\\", '
    f'\\"password\\": \\"{tok(12)}\\"}}"}}',
    f'{{"tool": "http_get", "args": {{"headers": {{"X-Api-Key": "{tok(32)}"}}}}}}',
    f'call deploy(token="{tok(24)}", env="prod")',
    f'{{"function": {{"name": "db.connect", "arguments": "{{\\"pwd\\": \\"{tok(10)}\\"}}"}}}}',
    f'send_email(smtp_pass="{tok(14)}", to="a@b.c")',
    f'{{"input": {{"api_key": "{tok(40)}"}}}}',
    f'run_query(connection="Server=db;User Id=sa;Password={tok(12)};")',
    f'{{"auth": {{"type": "bearer", "bearer": "{tok(40)}"}}}}',
]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


ENCODED = [
    f"config blob: {_b64('api_key=' + tok(32))}",
    f"{_b64('password: ' + tok(14))}",
    f"the header value was {_b64('admin:' + tok(12))} (basic)",
    f"env dump {_b64('GITHUB_TOKEN=ghp_' + tok(36))}",
    f"{_b64('aws_secret_access_key=' + tok(40))}",
    f"redirect to /cb?state={urllib.parse.quote('token=' + tok(30))}",
    f"next={urllib.parse.quote('https://x.io/?password=' + tok(12), safe='')}",
    "payload " + urllib.parse.quote('{"secret": "' + tok(24) + '"}'),
    "saved as " + _b64('{"client_secret": "' + tok(28) + '"}'),
    f"{_b64('-----BEGIN RSA PRIVATE KEY-----' + chr(10) + tok(64))}",
]

TOKEN_BESIDE_WORD = [
    f"the deploy token {tok(32)} expires Friday",
    f"I rotated our API key yesterday, new one {tok(32)}",
    f"secret for the webhook -> {tok(28)}",
    f"here is the access token, keep it safe {tok(40)}",
    f"webhook signing secret {tok(32)} (do not share)",
    f"new credentials came through, {tok(36)}",
    f"the key they sent is {tok(32)} I think",
    f"api token for grafana {tok(40)}",
    f"my personal access token {tok(40)} works for both repos",
    f"session secret {tok(48)}",
]

PAYMENT_CARD = [
    f"my visa is {_grouped(_luhn('4', 16))} exp 08/28",
    f"card number {_luhn('51', 16)}",
    f"amex {_grouped(_luhn('37', 15), 5)}",
    f"pay with {_grouped(_luhn('6011', 16), 4, '-')}",
    f"the company card: {_grouped(_luhn('4', 16), 4, '-')}",
    f"mastercard {_grouped(_luhn('2221', 16))} cvv 123",
    f"{_luhn('4', 16)}",
    f"backup card ending ... full number {_grouped(_luhn('55', 16))}",
]

IBAN = [
    f"my IBAN is {_iban('DE', tok(18, string.digits))}",
    f"wire to {_grouped(_iban('GB', 'NWBK' + tok(14, string.digits)))}",
    f"IBAN: {_iban('FR', tok(23, string.digits))}",
    f"salary account {_iban('NL', 'ABNA' + tok(10, string.digits))}",
    f"send the deposit to {_grouped(_iban('ES', tok(20, string.digits)))}",
    f"{_iban('IT', 'X' + tok(22, string.digits))}",
]

CREDENTIALS: dict[str, list[str]] = {
    "vendor_token": VENDOR,
    **{f"spec_001 {item}": texts for item, texts in SPEC_001.items()},
    "password_in_prose": PASSWORD_IN_PROSE,
    "pin_or_code": PIN_OR_CODE,
    "config_file": CONFIG_FILE,
    "url_credentials": URL_CREDENTIALS,
    "tool_arguments": TOOL_ARGUMENTS,
    "encoded": ENCODED,
    "token_beside_word": TOKEN_BESIDE_WORD,
    "payment_card": PAYMENT_CARD,
    "iban": IBAN,
}

LOOKALIKES: dict[str, list[str]] = {
    "git_sha": [
        f"fixed in commit {tok(40, HEX)}",
        f"cherry-pick {tok(12, HEX)} onto release",
        f"git checkout {tok(40, HEX)}",
        f"the regression started at {tok(7, HEX)}",
        f"revert {tok(40, HEX)} (broke the build)",
        f"merge base is {tok(40, HEX)}",
        f"HEAD is now at {tok(7, HEX)} Fix typo",
        f'pinned to rev = "{tok(40, HEX)}"',
        f"see https://github.com/acme/app/commit/{tok(40, HEX)}",
        f"bisect says {tok(40, HEX)} is the first bad commit",
    ],
    "uuid": [
        f"request id {tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-a{tok(3, HEX)}-{tok(12, HEX)}",
        f"tenant_id: {tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-9{tok(3, HEX)}-{tok(12, HEX)}",
        f"order {tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-8{tok(3, HEX)}-{tok(12, HEX)} shipped",
        f'{{"user_id": "{tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-b{tok(3, HEX)}-'
        f'{tok(12, HEX)}"}}',
        f"trace {tok(32, HEX)} took 3 s",
        f"device UUID {tok(8, HEX).upper()}-{tok(4, HEX).upper()}-4{tok(3, HEX).upper()}",
        f"idempotency_key={tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-a{tok(3, HEX)}-{tok(12, HEX)}",
        f"session {tok(8, HEX)}-{tok(4, HEX)}-4{tok(3, HEX)}-9{tok(3, HEX)}-{tok(12, HEX)} ended",
    ],
    "digest": [
        f"sha256: {tok(64, HEX)}",
        f"md5 {tok(32, HEX)}  backup.tar.gz",
        f'ETag: "{tok(32, HEX)}"',
        f"checksum = {tok(64, HEX)}",
        f"the image digest is sha256:{tok(64, HEX)}",
        f"sha1sum {tok(40, HEX)}",
        f"integrity: sha512-{tok(86, ALNUM + '+/')}==",
        f"content hash {tok(16, HEX)}",
        f"blake2b {tok(64, HEX)}",
        f"file id {tok(24, HEX)} in the bucket",
    ],
    "public_key": [
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{tok(43, ALNUM + '+/')} alice@laptop",
        f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{tok(60, ALNUM + '+/')} bob@host",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"
        + tok(40, ALNUM + "+/")
        + "\n-----END PUBLIC KEY-----",
        f"publishable key pk_test_{tok(24)} for the test page",
        f"the host key fingerprint is SHA256:{tok(43, ALNUM + '+/')}",
        f"GPG key id {tok(16, HEX).upper()}",
        f"age recipient age1{tok(58, BECH32.lower())}",
        "use the publishable key from the dashboard",
    ],
    "placeholder": [
        "OPENAI_API_KEY=YOUR_API_KEY",
        "password: ${DB_PASSWORD}",
        "Authorization: Bearer <token>",
        "api_key = 'your-api-key-here'",
        "token: ********",
        "export GITHUB_TOKEN=<paste your token>",
        "sk-... (your key)",
        "password = changeme",
        "secret: {{ .Values.secret }}",
        "STRIPE_KEY=sk_live_xxxxxxxxxxxx",
        "postgres://USER:PASSWORD@HOST:5432/DB",
        'headers = {"Authorization": f"Bearer {token}"}',
    ],
    "doc_example": [
        "AKIAIOSFODNN7EXAMPLE is the key AWS uses in its docs",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "passwords must be at least 12 characters",
        "the token endpoint is https://auth.acme.io/oauth/token",
        "set the api key in settings before the first run",
        "rotate your secrets every 90 days",
        "the password reset link expires after an hour",
        "token limit is 4096 for this model",
        "Store the secret key in a vault, never in the repo.",
        "the session token is sent as a cookie",
    ],
    "order_number": [
        f"order #{tok(3, string.digits)}-{tok(7, string.digits)}-{tok(7, string.digits)}",
        f"Order {tok(9, string.digits)} has shipped",
        f"invoice INV-{tok(6, string.digits)}",
        f"tracking number 1Z{tok(16, string.ascii_uppercase + string.digits)}",
        f"booking reference {tok(6, string.ascii_uppercase)}",
        f"ticket number {tok(13, string.digits)}",
        f"PO {tok(10, string.digits)} approved",
        f"confirmation code {tok(8, string.ascii_uppercase + string.digits)}",
        f"receipt {tok(4, string.digits)}-{tok(4, string.digits)}-{tok(4, string.digits)}",
        f"case #{tok(8, string.digits)}",
    ],
    "phone_number": [
        "+1 415 555 0132",
        "call me at (212) 555-0187",
        "+44 20 7946 0958",
        "office: 030 901820",
        "my number is 06 12 34 56 78",
        "+49 1512 3456789",
        "fax 1-800-555-0199",
        "+33 1 23 45 67 89",
        "reach her at 555.867.5309",
        "+61 2 9374 4000",
    ],
    "credential_words": [
        "my password manager is 1Password",
        "reset your PIN at any branch",
        "the verification code expires in 10 minutes",
        "enter the code we sent to your phone",
        "I forgot my password again",
        "the API key was revoked yesterday",
        "we need a new secret for the webhook",
        "the token expired, log in again",
        "error code 500 from the gateway",
        "zip code 94107",
        "promo code SUMMER",
        "the key is under the mat",
    ],
    "near_miss_number": [
        "ISBN 978-0-306-40615-7",
        "the server is at 192.168.10.24:8080",
        "upgrade to version 3.12.4-rc1",
        "meeting on 2026-03-14 at 09:30",
        "test card 4111 1111 1111 1112 (fails the check digit)",
        f"account IBAN DE00 {tok(4, string.digits)} {tok(4, string.digits)} (check digits wrong)",
        "population 8 336 817 in 2020",
        "build 20260314.1734 passed",
        "serial number SN-4471-A-9023",
        "the lottery numbers were 4 8 15 16 23 42",
    ],
}


def halves(cases: dict[str, list[str]]) -> dict[str, list[tuple[str, str]]]:
    """``{"tuned": [(kind, text)...], "held_out": [...]}``: within each kind, even places
    tuned, odd places held out."""
    split: dict[str, list[tuple[str, str]]] = {"tuned": [], "held_out": []}
    for kind, texts in cases.items():
        for i, text in enumerate(texts):
            split["tuned" if i % 2 == 0 else "held_out"].append((kind, text))
    return split
