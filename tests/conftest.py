"""Fixtures of the browser tests (tests/browser.py has their helpers)."""

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium, headless, driven by Playwright; one per test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_page(chromium, tmp_path_factory, request):
    """`open_page(width=1280, **options)`: a page in a browser context of its own (its own
    cookies: another person's browser), in Berlin's time zone unless `options` (Playwright's
    `new_context` arguments) say otherwise. Each page is screenshot when the test ends."""
    contexts = []

    def make(width: int = 1280, **options):
        context = chromium.new_context(viewport={"width": width, "height": 900},
                                       **{"timezone_id": "Europe/Berlin", **options})
        context.set_default_timeout(20_000)
        contexts.append(context)
        return context.new_page()

    yield make
    folder = tmp_path_factory.getbasetemp()
    for index, context in enumerate(contexts):
        for page in context.pages:
            page.screenshot(path=str(folder / f"{request.node.name}-{index}.png"), full_page=True)
        context.close()
