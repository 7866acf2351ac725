"""The project's configuration: settings, URLs, the WSGI entry, gunicorn and Celery.

Nothing is imported here, so that every `manage.py` command does not pay for Celery: the
worker and beat find the Celery app in config/celery.py (`celery -A config`), and any other
process imports it where it enqueues a task or asks the workers (core.tasks.celery_app)."""
