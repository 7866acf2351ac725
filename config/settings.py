"""Settings for the scheduling-poll service.

Every setting comes from the environment (or a `.env` file beside `manage.py`); see
docs/deploy.md for the full list. The defaults run the embedded mode: a SQLite file, an
in-process rate-limit store and an in-process webhook dispatcher.
"""

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from config.environment import BASE_DIR, env
from config.secret_key import installation_secret_key
from core.brokers import celery_broker_url

DEBUG = env.bool("DEBUG", default=False)
# Unset: a random key made once for this installation and kept in var/secret_key (one
# machine); several machines must share one, set in the environment.
SECRET_KEY = env.str("SECRET_KEY", default="") or installation_secret_key(BASE_DIR / "var" / "secret_key")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
# Behind a proxy that ends TLS and sets X-Forwarded-Proto (docs/deploy.md): requests count
# as https (else the back office's CSRF origin check refuses every login and form), and
# the session and CSRF cookies are sent over https only.
if env.bool("BEHIND_TLS_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True

# Unset, both point at this machine on the port the service listens on (PORT, as bin/serve
# and the Procfile use it), so that the demo's adminUrl and inviteUrl lead somewhere.
_LOCAL_URL = f"http://localhost:{env.int('PORT', default=8000)}"
APP_URL = env.str("APP_URL", default=_LOCAL_URL).rstrip("/")
CDN_URL = env.str("CDN_URL", default=f"{_LOCAL_URL}/cdn").rstrip("/")

INSTALLED_APPS = [
    # The back office's ModelAdmins are registered when the URLs load (config/urls.py), not
    # at start-up: a manage.py command does not import every admin module and its services.
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Redoc's assets for the /docs reference, served as static files
    "core",
    "spaces",
    "polls",
    "webhooks",
    "ratelimit",
    "idempotency",
    "pages",
    "privateapi",  # the frozen private API under /api/private
    "axes",  # back-office login throttling (core/login_guard.py)
]

MIDDLEWARE = [
    "core.api.middleware.RequestContextMiddleware",
    # gzip for API reads only (never an answer carrying a secret): core/api/compression.py.
    "core.api.compression.GzipApiReads",
    "django.middleware.security.SecurityMiddleware",
    # The back office's CSS and JavaScript (collected into STATIC_ROOT by collectstatic),
    # served by every web process: no separate file server is needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # The app's pages: their security headers, and HTML (not JSON) when one of them fails.
    "pages.middleware.PageMiddleware",
    # Last, as django-axes requires: answers a locked-out back-office login 429.
    "axes.middleware.AxesMiddleware",
]
# `/v1/` requests skip what only the pages and the back office use: static files, sessions,
# CSRF, logins, messages, the pages' headers and lockouts (config/wsgi.py). Their responses
# are unchanged (none of these adds anything to an API response), and cost them nothing.
PAGES_ONLY_MIDDLEWARE = {
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "pages.middleware.PageMiddleware",
    "axes.middleware.AxesMiddleware",
}
API_MIDDLEWARE = [path for path in MIDDLEWARE if path not in PAGES_ONLY_MIDDLEWARE]

# --- Back-office logins (core/login_guard.py) --------------------------------------------
# The 5th failed login locks the account, and the client address, for LOGIN_LOCKOUT_MINUTES;
# tries during a lockout do not extend it. Staff lift one in the back office or manage.py.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
LOGIN_LOCKOUT_MINUTES = env.int("LOGIN_LOCKOUT_MINUTES", default=15)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own: per account, per address
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "core.login_guard.client_ip"
AXES_ONLY_ADMIN_SITE = True

# Back-office messages live in the server-side session, not in a cookie: a new API key or
# webhook secret is shown once in a message, and a (signed, not encrypted) cookie would hand
# it to the browser's cookie jar.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database (config/settings_database.py) ----------------------------------------------
from config.settings_database import *  # noqa: E402,F401,F403 (the DB_* settings PostgreSQL's backend reads)
from config.settings_database import DATABASES  # noqa: E402

# A web request still in the database after this many seconds has its PostgreSQL
# connections cut (core.dbguard): a frozen server gives a 503, not a hang. 0: no deadline.
DB_REQUEST_TIMEOUT = env.float("DB_REQUEST_TIMEOUT", default=10.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery ------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
# Celery writes a Unix socket its own way (core.brokers).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=celery_broker_url(REDIS_URL) or "memory://")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes every database connection, and with Django's pool the pool
# itself, before and after each task of a prefork worker (celery/celery#10554): a new
# PostgreSQL connection per task, whose server process and set-up cost more than the task.
# With this set it does so once every this many tasks; config/celery.py returns the
# connections to the pool at each task's start and end instead, as a web request does.
CELERY_DB_REUSE_MAX = 1000
# Publishing a task must not hold up a request when the broker is down (the webhook sweeper
# catches up later): one quick retry, a bounded connect. Workers reconnect on their own terms.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2, "socket_connect_timeout": 2,
}
# Two installations whose brokers share one Redis database take each other's tasks: give each
# its own database, or its own prefix for every broker key. Workers and beat warn at start
# when another installation used the same broker (config/celery.py).
CELERY_BROKER_PREFIX = env.str("CELERY_BROKER_PREFIX", default="")
if CELERY_BROKER_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = CELERY_BROKER_PREFIX
# The Celery app (config/celery.py). Not imported with the settings: a process imports it
# where it first enqueues a task or asks the workers (core.tasks.celery_app), so that a
# command that does neither never imports Celery; the worker and beat get it from -A config.
CELERY_APP = "config.celery.app"

# --- Service rules ---------------------------------------------------------------------
MAINTENANCE_MODE = env.bool("MAINTENANCE_MODE", default=False)
MAINTENANCE_RETRY_AFTER = env.int("MAINTENANCE_RETRY_AFTER", default=300)
RATELIMIT_PER_MINUTE = env.int("RATELIMIT_PER_MINUTE", default=60)
RATELIMIT_PER_DAY = env.int("RATELIMIT_PER_DAY", default=5000)
RATELIMIT_UNAVAILABLE_RETRY_AFTER = env.int("RATELIMIT_UNAVAILABLE_RETRY_AFTER", default=60)
# Retry-After of the 503 answered when the database fails a request (down, frozen, timed out).
DATABASE_UNAVAILABLE_RETRY_AFTER = env.int("DATABASE_UNAVAILABLE_RETRY_AFTER", default=30)
# Seconds the limiter waits for Redis (connect, then answer) before failing closed (503).
RATELIMIT_STORE_TIMEOUT = env.float("RATELIMIT_STORE_TIMEOUT", default=0.25)
# Largest request body accepted, in bytes; a larger one is a VALIDATION_ERROR.
MAX_REQUEST_BODY_BYTES = env.int("MAX_REQUEST_BODY_BYTES", default=256 * 1024)
# Requests each web process runs through Django at once (config/wsgi.py); each may hold a
# database connection, so this times WEB_CONCURRENCY bounds the web processes' connections.
WEB_CONCURRENT_REQUESTS = env.int("WEB_CONCURRENT_REQUESTS", default=4)
if DATABASES["default"]["ENGINE"] == "core.sqlite":
    # One at a time per process with SQLite: each statement blocks the whole gevent worker
    # while it runs, so more slots would only queue behind it. (Waits for the write lock do
    # not block, core/sqlite/base.py.)
    WEB_CONCURRENT_REQUESTS = 1
# At most this many of a process's request slots serve one space at once (config/wsgi.py,
# core/bulkhead.py): a space that floods waits in its own queue, not in everyone's.
WEB_SPACE_CONCURRENT_REQUESTS = min(
    env.int("WEB_SPACE_CONCURRENT_REQUESTS", default=max(1, WEB_CONCURRENT_REQUESTS // 2)), WEB_CONCURRENT_REQUESTS
)
# Seconds a client has to send a request's whole body (read before the request takes a slot);
# later it is answered 400 VALIDATION_ERROR and the connection closed.
REQUEST_BODY_TIMEOUT = env.float("REQUEST_BODY_TIMEOUT", default=20.0)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES
MAX_POLL_OPTIONS = env.int("MAX_POLL_OPTIONS", default=100)
# Content moderation: a dotted path to a callable(texts: dict[str, str]) -> list[str]
# returning the names of flagged fields, and the word list of the default moderator.
MODERATION_BACKEND = env.str("MODERATION_BACKEND", default="polls.moderation.word_list_moderator")
MODERATION_WORDS = env.list(
    "MODERATION_WORDS", default=["fuck", "shit", "cunt", "nigger", "faggot", "kill yourself"]
)
# Development only: allow webhook URLs with plain http and private or loopback addresses.
WEBHOOKS_ALLOW_PRIVATE_URLS = env.bool("WEBHOOKS_ALLOW_PRIVATE_URLS", default=False)
# Webhook delivery (docs/webhooks.md): "celery" (workers and beat, the default when a
# broker is configured) or "embedded" (the loop of `manage.py runjobs`, the default
# otherwise). The timeout bounds a whole attempt; the lease must exceed it comfortably.
WEBHOOKS_DISPATCH = env.str(
    "WEBHOOKS_DISPATCH", default="embedded" if CELERY_BROKER_URL in ("", "memory://") else "celery"
)
if WEBHOOKS_DISPATCH not in ("embedded", "celery"):  # a typo would leave webhooks to the sweeper alone
    raise ImproperlyConfigured(f"WEBHOOKS_DISPATCH must be embedded or celery, not {WEBHOOKS_DISPATCH!r}")
WEBHOOKS_TIMEOUT_SECONDS = env.float("WEBHOOKS_TIMEOUT_SECONDS", default=10.0)
WEBHOOKS_LEASE_SECONDS = env.int("WEBHOOKS_LEASE_SECONDS", default=60)
WEBHOOKS_EMBEDDED_THREADS = env.int("WEBHOOKS_EMBEDDED_THREADS", default=4)
WEBHOOKS_POLL_SECONDS = env.float("WEBHOOKS_POLL_SECONDS", default=0.25)
WEBHOOKS_SWEEP_TASKS = env.int("WEBHOOKS_SWEEP_TASKS", default=4)
# Each space's and each endpoint's share of the senders: the batches one holds at once, over
# every process (webhooks.services.shares), so that receivers that never answer cannot hold
# every sender (the embedded dispatcher has WEBHOOKS_EMBEDDED_THREADS).
WEBHOOKS_SPACE_SENDERS = env.int("WEBHOOKS_SPACE_SENDERS", default=2)
WEBHOOKS_ENDPOINT_SENDERS = env.int("WEBHOOKS_ENDPOINT_SENDERS", default=1)
WEBHOOKS_RETENTION_DAYS = env.int("WEBHOOKS_RETENTION_DAYS", default=30)

# --- The app's pages (pages/, docs/app.md) ---------------------------------------------
# The pages' throttle (pages/throttle.py, docs/app.md): requests let through per client
# address and per poll, each as (per minute, per day), counted by the rate-limit store under
# keys of their own (never a space's window); past them a 429 page. Each kind has its own
# windows: sign-in requests never use up answers', nor page reads either.
# Answers and comments: sized for a team answering from one office address.
PAGES_LIMIT_PER_ADDRESS = (env.int("PAGES_LIMIT_PER_ADDRESS_PER_MINUTE", default=100),
                           env.int("PAGES_LIMIT_PER_ADDRESS_PER_DAY", default=2000))
PAGES_LIMIT_PER_POLL = (env.int("PAGES_LIMIT_PER_POLL_PER_MINUTE", default=300),
                        env.int("PAGES_LIMIT_PER_POLL_PER_DAY", default=10000))
# Organizers' requests for a sign-in link.
PAGES_SIGN_IN_LIMIT_PER_ADDRESS = (env.int("PAGES_SIGN_IN_LIMIT_PER_ADDRESS_PER_MINUTE", default=10),
                                   env.int("PAGES_SIGN_IN_LIMIT_PER_ADDRESS_PER_DAY", default=100))
PAGES_SIGN_IN_LIMIT_PER_POLL = (env.int("PAGES_SIGN_IN_LIMIT_PER_POLL_PER_MINUTE", default=20),
                                env.int("PAGES_SIGN_IN_LIMIT_PER_POLL_PER_DAY", default=500))
# Page reads (GET and HEAD under /invite/ and /poll/).
PAGES_READ_LIMIT_PER_ADDRESS = (env.int("PAGES_READ_LIMIT_PER_ADDRESS_PER_MINUTE", default=300),
                                env.int("PAGES_READ_LIMIT_PER_ADDRESS_PER_DAY", default=50000))
# Participants' answers shown per page of the invite page's grid.
PAGES_GRID_PAGE_SIZE = env.int("PAGES_GRID_PAGE_SIZE", default=15)
# Where the pages live: a request there that fails before any view (a refused body, Django's
# own 400) gets an HTML page of theirs, not the API's JSON envelope.
PAGE_PATH_PREFIXES = ("/invite/", "/poll/")
CSRF_FAILURE_VIEW = "pages.views.csrf_failure"  # the pages' own 403; the back office keeps Django's
# E-mail (organizers' sign-in links): EMAIL_URL as django-environ reads it, e.g.
# smtp+tls://user:password@smtp.example.com:587. Unset, e-mails would go to the console, the
# log's own output, sign-in links and addresses included: a web process with DEBUG off then
# refuses to start (config/wsgi.py), runjobs and the worker say so (core/mailconfig.py).
# bin/serve sets consolemail:// (it prints them).
EMAIL_URL_SET = bool(env.str("EMAIL_URL", default=""))
globals().update(env.email_url("EMAIL_URL", default="consolemail://"))
# Seconds the SMTP backend waits on the mail server (the sending runs after the page answered).
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Scheduling Poll <no-reply@localhost>")

# --- Django REST framework and the OpenAPI document (config/settings_api.py) ------------
from config.settings_api import REST_FRAMEWORK, SPECTACULAR_SETTINGS  # noqa: E402,F401

# --- Static files, time, logging -------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# Compressed copies next to the files; names stay unhashed, so a page rendered before
# collectstatic (tests) still works. Browsers revalidate them (WhiteNoise's short max-age).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# The app's pages speak these languages (pages/locale/, docs/app.md#languages): each page
# request picks one (pages.middleware: the `django_language` cookie, else Accept-Language).
# Nothing else activates a language: the API, the back office and e-mail outside a page
# stay in LANGUAGE_CODE.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("fr", "Français"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "pages" / "locale"]  # first, over the catalogues of the apps before it (the admin's)
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
# --- Metrics (GET /metrics, core/metrics.py) ---------------------------------------------
# Set: a scrape needs `Authorization: Bearer <METRICS_TOKEN>`. Unset: /metrics answers only
# loopback and private addresses (docs/operations.md).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# Gauges read from the database when scraped.
METRICS_COLLECTORS = ["webhooks.metrics.outbox"]

# One access line per request for /static/ files (the back office's and /docs' assets) too;
# off by default, they would drown the API's lines.
LOG_STATIC_REQUESTS = env.bool("LOG_STATIC_REQUESTS", default=False)
# Paths whose next segment is a secret (pages/urls.py: an answer's edit link, an organizer's
# sign-in and unsubscribe links): every log line writes it `[redacted]`, as it does e-mail
# addresses.
LOG_SECRET_PATHS = [r'/invite/[^/\s"]+/edit/', r'/poll/[^/\s"]+/(?:sign-in|unsubscribe)/']
# What follows an API key's prefix (spaces.models.ApiKey: sk_<prefix>_<secret>) or a webhook
# secret's (webhooks.signing): redacted the same way wherever it appears (a key pasted in a path).
LOG_SECRET_PREFIXES = [r"\bsk_[A-Za-z0-9_-]{8}_", r"\bwhsec_"]
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "core.logging.JsonFormatter", "secret_paths": LOG_SECRET_PATHS,
                            "secret_prefixes": LOG_SECRET_PREFIXES}},
    # The request's (or task's) request_id and trace_id on every line (core.logging.bind).
    "filters": {"context": {"()": "core.logging.ContextFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Requests are logged once by our middleware; silence Django's duplicate lines.
        "django.request": {"level": "CRITICAL", "propagate": True},
        "django.server": {"level": "WARNING", "propagate": True},
        # django-axes: its lockout warnings, not its start-up and per-failure lines.
        "axes": {"level": "WARNING", "propagate": True},
        # gunicorn's own lines in a web worker (a refused request line, the path included) through
        # this handler, which redacts (config/gunicorn.py's, used before this applies, does not).
        "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# --- Periodic jobs ---------------------------------------------------------------------
# name -> (dotted path of a function in an app's jobs.py, interval in seconds). Celery beat
# runs them at scale (the task core.tasks.run_job); `manage.py runjobs` runs them otherwise.
PERIODIC_JOBS = {
    "polls.close-past": ("polls.jobs.close_past_polls", 60),
    "polls.purge-deleted": ("polls.jobs.purge_deleted_polls", 3600),
    "webhooks.sweep": ("webhooks.jobs.sweep", 15),
    "webhooks.purge": ("webhooks.jobs.purge", 3600),
    "idempotency.purge": ("idempotency.jobs.purge_expired", 3600),
    "ratelimit.purge-keys": ("ratelimit.jobs.purge_key_counters", 3600),
    "pages.purge-sign-in-links": ("pages.jobs.purge_sign_in_links", 3600),
    "pages.send-mail": ("pages.jobs.send_mail", 15),
    "pages.purge-mail": ("pages.jobs.purge_mail", 3600),
}
# What `manage.py runjobs` runs beside the periodic jobs (core/management/commands/runjobs.py).
EMBEDDED_WORKERS = ["webhooks.dispatch.embedded_worker", "core.sqlite.checkpoints.embedded_worker"]
CELERY_BEAT_SCHEDULE = {
    name: {"task": "core.tasks.run_job", "schedule": interval, "args": (name,)}
    for name, (_path, interval) in PERIODIC_JOBS.items()
}
