"""The database settings (part of config.settings): DATABASE_URL, SQLite's backend whose
processes keep their connections, or PostgreSQL's pooled backend with every wait bounded."""

from django.core.exceptions import ImproperlyConfigured

from config.environment import BASE_DIR, env

(BASE_DIR / "var").mkdir(exist_ok=True)
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend whose processes keep their connections open and lend them to each
    # request (core/sqlite/base.py): opening one cost more than the rest of a small read.
    DATABASES["default"]["ENGINE"] = "core.sqlite"
    # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at the
    # start of a transaction so that concurrent writers queue instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
else:
    # PostgreSQL. Every wait is bounded, so that a database that is down, frozen or holding
    # a lock gives a 503 in seconds instead of a hang: connecting (libpq connect_timeout),
    # each statement and each lock wait (server side), and taking a connection from the
    # pool. Connections come from a pool per process (psycopg_pool), returned after each
    # request: under gevent a connection per client connection would exhaust the server.
    DB_CONNECT_TIMEOUT = env.int("DB_CONNECT_TIMEOUT", default=3)
    DB_STATEMENT_TIMEOUT_MS = env.int("DB_STATEMENT_TIMEOUT_MS", default=15000)
    DB_LOCK_TIMEOUT_MS = env.int("DB_LOCK_TIMEOUT_MS", default=3000)
    # PostgreSQL's synchronous_commit for this process's connections. The Procfile's Celery
    # worker runs with "off": its writes (webhook fan-out, claims, outcomes; periodic jobs)
    # are all redone if a server crash forgets their last moments, and waiting for each
    # commit's WAL flush cost a fifth of its webhook throughput. Web processes keep "on".
    DB_SYNCHRONOUS_COMMIT = env.str("DB_SYNCHRONOUS_COMMIT", default="on")
    if DB_SYNCHRONOUS_COMMIT not in ("on", "off", "local", "remote_write", "remote_apply"):
        raise ImproperlyConfigured(f"DB_SYNCHRONOUS_COMMIT must be on or off, not {DB_SYNCHRONOUS_COMMIT!r}")
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the connections
    # Django's backend with a pool that reconnects every 0.25 s while the server is down,
    # looks at each connection before lending it (without a query: on a frozen server it
    # would hang) and never waits past a request's deadline (core/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "core.postgresql"
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    # A pooled connection idle this long must answer an empty query (within 1 s) to be lent.
    DB_POOL_CHECK_IDLE_SECONDS = env.float("DB_POOL_CHECK_IDLE_SECONDS", default=30.0)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "connect_timeout": DB_CONNECT_TIMEOUT,
            # JIT off: the service's statements are short, and compiling one costs more than it
            # saves (a long participant list spent more time compiled than running).
            "options": (f"-c statement_timeout={DB_STATEMENT_TIMEOUT_MS} -c lock_timeout={DB_LOCK_TIMEOUT_MS} -c jit=off "
                        f"-c synchronous_commit={DB_SYNCHRONOUS_COMMIT}"),
            # Parameters sent apart from the SQL (server-side binding), so that a statement a
            # connection has run DB_PREPARE_THRESHOLD times is prepared and its plan reused:
            # planning is most of a short lookup's time, and a request runs three or four
            # such statements. A pooler in transaction mode (PgBouncer before 1.21)
            # needs DB_PREPARE_THRESHOLD=0 (off).
            "server_side_binding": True,
            "prepare_threshold": env.int("DB_PREPARE_THRESHOLD", default=5) or None,
            "pool": {
                "min_size": 0,
                "max_size": env.int("DB_POOL_SIZE", default=10),
                "timeout": DB_CONNECT_TIMEOUT + 2,  # waiting for a free connection
                "max_idle": 300,
            },
        }
    )
