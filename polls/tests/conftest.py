from spaces.tests.conftest import superuser_client  # noqa: F401 (a fixture shared with the spaces back office)
