"""Where the settings come from: the environment, or a `.env` file beside `manage.py` (read
once, never overriding what the environment sets)."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
