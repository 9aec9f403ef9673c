"""A real browser for the dashboard's tests and its benchmark: the system's Chromium, headless, driven by Selenium
through the system's chromedriver (Debian: `apt-get install chromium chromium-driver`). Selenium's own manager is
never asked to download a browser or a driver: this machine has no internet beyond the package registries."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any as AnyType

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)
ENV_BROWSER = "RAYON_TEST_CHROMIUM"  # a browser elsewhere than on the PATH
ENV_DRIVER = "RAYON_TEST_CHROMEDRIVER"


def _find(env: str, names: tuple[str, ...]) -> str | None:
    given = os.environ.get(env)
    if given:
        return given if os.access(given, os.X_OK) else None
    return next((found for name in names if (found := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser test can run here (None: it can): what is missing, and how to install it."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if _find(ENV_BROWSER, BROWSERS) is None:
        return f"no Chromium here (apt-get install chromium chromium-driver, or ${ENV_BROWSER}=PATH)"
    if _find(ENV_DRIVER, DRIVERS) is None:
        return f"no chromedriver here (apt-get install chromium-driver, or ${ENV_DRIVER}=PATH)"
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 900) -> Iterator[AnyType]:
    """A headless Chromium under Selenium's WebDriver, quit at the end of the block (call `missing()` first)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = _find(ENV_BROWSER, BROWSERS) or ""
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--hide-scrollbars", "--no-first-run",
                     "--disable-background-networking", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(_find(ENV_DRIVER, DRIVERS)))
    try:
        yield driver
    finally:
        driver.quit()


def errors(driver: AnyType) -> list[str]:
    """The page's console errors since the last call (uncaught exceptions, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
