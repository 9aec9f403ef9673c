"""The dashboard at `/` and the API's docs at `/docs`, both served from files shipped in the package.

The dashboard is static pages and scripts (`static/`): a client of the public `/v1` endpoints, with the
same bearer tokens, so it sees exactly what the token's holder may see through the API and nothing is
worked out for it here. Its charting library (uPlot) and Swagger UI are vendored at pinned versions with
their licences (`static/vendor/`, see its README), so that neither page loads anything from the internet.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("static")
PREFIX = "/dashboard/static"
SWAGGER = f"{PREFIX}/vendor/swagger-ui"
# Swagger UI would otherwise show a badge fetched from validator.swagger.io
OFFLINE = {"validatorUrl": None}
# The browser itself refuses anything from another origin (a CDN, a tracker) and any inline script; uPlot sets
# style attributes, hence the inline styles.
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
          "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


def install(app: FastAPI) -> None:
    """Serve the dashboard at `/` (its files under PREFIX) and Swagger UI at `/docs` from the vendored files."""
    app.mount(PREFIX, StaticFiles(directory=STATIC), name="dashboard")

    @app.get("/", include_in_schema=False)
    def dashboard() -> FileResponse:
        return FileResponse(STATIC / "index.html",
                            headers={"Cache-Control": "no-cache", "Content-Security-Policy": POLICY})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        # A browser asks every page of the server for an icon, the dashboard's own (which names none: `data:,`)
        # aside; no content is an answer, where a 404 is an error in its console on every plain page it shows.
        return Response(status_code=204, headers={"Cache-Control": "max-age=86400"})

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} — API",
                                   swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{SWAGGER}/swagger-ui.css",
                                   swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
                                   swagger_ui_parameters=OFFLINE)
