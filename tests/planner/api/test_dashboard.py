"""The dashboard at `/` and the docs at `/docs` (planner/api/dashboard): served from the package, nothing from the
internet. What the pages do in a browser: tests/planner/api/test_dashboard_browser.py (-m browser)."""

from __future__ import annotations

import re

import pytest

from planner.api.dashboard import STATIC
from tests.planner.api.support import Server

LOADED = re.compile(r"""(?:src|href)=["']([^"'#]+)["']""")
IMPORTED = re.compile(r"""from\s+["']([^"']+)["']""")


def test_the_dashboard_is_served_at_the_root_and_loads_only_what_the_server_serves(api: Server) -> None:
    with api.client() as anyone:
        page = anyone.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        loaded = [url for url in LOADED.findall(page.text) if not url.startswith("data:")]
        assert loaded and all(url.startswith("/") for url in loaded), loaded  # no CDN, no other host
        for url in [*loaded, "/dashboard/static/js/main.js"]:
            assert anyone.get(url).status_code == 200, url
        assert anyone.get("/dashboard/static/nothing.js").status_code == 404
        assert "default-src 'self'" in page.headers["content-security-policy"]  # the browser enforces it too


def test_the_icon_a_browser_asks_every_page_for_is_no_content_not_an_error(api: Server) -> None:
    with api.client() as anyone:
        icon = anyone.get("/favicon.ico")
        assert icon.status_code == 204 and icon.content == b""
        assert "/favicon.ico" not in anyone.get("/openapi.json").json()["paths"]


def test_the_scripts_import_only_their_neighbours() -> None:
    for script in (STATIC / "js").glob("*.js"):
        for name in IMPORTED.findall(script.read_text()):
            assert name.startswith("./") and (script.parent / name).exists(), (script.name, name)


@pytest.mark.parametrize("folder", ["uplot", "swagger-ui"])
def test_each_vendored_library_ships_with_its_licence(folder: str) -> None:
    assert (STATIC / "vendor" / folder / "LICENSE").stat().st_size > 500
    assert folder in (STATIC / "vendor" / "README.md").read_text()


def test_the_docs_load_swagger_ui_from_the_server_not_a_cdn(api: Server) -> None:
    with api.client() as anyone:
        page = anyone.get("/docs")
        assert page.status_code == 200
        loaded = LOADED.findall(page.text)
        assert {url.rsplit("/", 1)[-1] for url in loaded} >= {"swagger-ui-bundle.js", "swagger-ui.css"}
        assert all(url.startswith("/") for url in loaded), loaded
        assert "cdn" not in page.text and '"validatorUrl": null' in page.text
        for url in loaded:
            assert anyone.get(url).status_code == 200, url
        assert anyone.get("/redoc").status_code == 404  # ReDoc loads from a CDN: not offered
        assert "/" not in anyone.get("/openapi.json").json()["paths"]  # the pages are not part of the API
