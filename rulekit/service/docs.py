"""The Service's interactive API page, offline: `/docs` (Swagger UI) loads its script
and style from `/docs/assets/` (the files the `fastapi-offline` package ships),
never from a CDN, so it renders on a network with no way out.  Only those files
are served, by name.  (No `/redoc`: ReDoc's page fetches its logo from a CDN.)
Pure wiring: no route of the API itself.
"""
from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon.png": "image/png"}
PREFIX = "/docs/assets"


def _static() -> Any:
    return resources.files("fastapi_offline").joinpath("static")


def install(app: Any) -> None:
    """Add /docs, /docs/oauth2-redirect and the assets to a FastAPI app made with
    `docs_url=None, redoc_url=None`."""
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - API",
                                   oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
                                   swagger_js_url=f"{root}{PREFIX}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{PREFIX}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{PREFIX}/favicon.png")

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(PREFIX + "/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in ASSETS:  # by name from a fixed list: never a path from the request
            return Response("not found", status_code=404)
        with resources.as_file(_static().joinpath(name)) as path:
            return FileResponse(path, media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"})
