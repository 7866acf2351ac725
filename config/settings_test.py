"""Test settings: the normal settings, made deterministic. DATABASE_URL and REDIS_URL still
come from the environment so that CI runs the suite against PostgreSQL and Redis too."""

import os

# The console, as before EMAIL_URL became required of a web process with DEBUG off: the tests'
# own servers (subprocesses, which inherit it) send no e-mail anyone reads; pytest-django
# keeps the in-process ones in its outbox.
os.environ.setdefault("EMAIL_URL", "consolemail://")

from config.settings import *  # noqa: E402,F401,F403

MODERATION_WORDS = ["badword", "rude phrase"]
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # admin logins in tests
# A loaded CI machine can take longer than the production 0.25 s to answer a Redis round trip:
# a test that is not about the store timeout must not see a 503 from it. The fault tests set
# their own short timeout.
RATELIMIT_STORE_TIMEOUT = env.float("RATELIMIT_STORE_TIMEOUT", default=5.0)  # noqa: F405
# Counters in Redis outlive a test (the embedded store's are emptied after each): a run's page
# reads and sign-in requests, all from 127.0.0.1, would add up past the service's limits.
# The tests of those limits set their own.
PAGES_READ_LIMIT_PER_ADDRESS = (10**6, 10**7)
PAGES_SIGN_IN_LIMIT_PER_ADDRESS = (10**6, 10**7)
