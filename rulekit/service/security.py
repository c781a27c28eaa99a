"""Response headers every answer of the Service carries, and the bearer token on its
interactive documents (an ASGI middleware, outermost).

- `X-Content-Type-Options: nosniff` and a Content-Security-Policy: the JSON
  answers may load nothing (`default-src 'none'`); the interactive API pages
  (`/docs`, `/redoc`, FastAPI's Swagger UI and ReDoc) may run their own scripts
  and styles and load them from where FastAPI serves them; no page may be
  framed (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), no referrer leaves.
- With a token configured, `/docs`, `/redoc` and `/openapi.json` need it too
  (`Authorization: Bearer <token>`; 401 JSON otherwise): they describe the API to
  whoever asks.  `/v1/health` stays open for health checks.
No routing of the API itself.
"""
from __future__ import annotations

import json
import secrets
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DOC_PATHS = ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect")
API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
# Swagger UI and ReDoc pages: their inline bootstrap script, and their bundles from where FastAPI points them
DOCS_CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
            "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
            "font-src 'self' https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com "
            "https://cdn.redoc.ly; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'")
COMMON = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
          (b"referrer-policy", b"no-referrer"), (b"cross-origin-resource-policy", b"same-origin")]


def authorized(headers: list[tuple[bytes, bytes]], token: str) -> bool:
    got = dict(headers).get(b"authorization", b"").decode("latin-1")
    scheme, _, value = got.partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(value.strip().encode(), token.encode())


class SecurityHeaders:
    def __init__(self, app: Callable, token: str | None = None):
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        docs = path in DOC_PATHS
        csp = (DOCS_CSP if path in ("/docs", "/redoc") else API_CSP).encode()

        async def send_with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                names = {k.lower() for k, _ in msg.get("headers", [])}
                extra = [(k, v) for k, v in COMMON if k not in names]
                if b"content-security-policy" not in names:
                    extra.append((b"content-security-policy", csp))
                msg = {**msg, "headers": [*msg.get("headers", []), *extra]}
            await send(msg)

        if docs and self.token is not None and not authorized(scope.get("headers", []), self.token):
            body = json.dumps({"detail": [{"loc": ["header", "authorization"],
                                           "msg": "a valid `Authorization: Bearer <token>` is required",
                                           "type": "unauthorized"}]}).encode()
            await send_with_headers({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="rulekit"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send_with_headers)
