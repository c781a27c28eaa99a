"""A minimal Kubernetes API reader for the Kueue and pod-log connectors: list
calls paged with `limit`/`continue`, text (pod logs), a bearer token from a
file, the errors of `Status` objects as ConnectorError.  Reads only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rulekit.blueprint.connectors.http import get_bytes, get_json
from rulekit.blueprint.model import ConnectorError


class KubeClient:
    def __init__(self, url: str, token_file: str | Path | None = None, timeout: float = 30.0, retries: int = 3,
                 page: int = 500, backoff: float = 0.5):
        self.url, self.timeout, self.retries, self.page, self.backoff = url.rstrip("/"), timeout, retries, page, backoff
        self.headers: dict[str, str] = {}
        if token_file:
            try:
                self.headers["Authorization"] = "Bearer " + Path(token_file).read_text().strip()
            except OSError as e:
                raise ConnectorError(f"cannot read token file {token_file}: {e.strerror}") from None

    def list(self, path: str, params: dict[str, str] | None = None, max_pages: int = 1000) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cont = ""
        for _ in range(max_pages):
            q = {**(params or {}), "limit": str(self.page)}
            if cont:
                q["continue"] = cont
            data = get_json(self.url + path, q, self.headers, self.timeout, self.retries, self.backoff)
            if not isinstance(data, dict) or not isinstance(data.get("items"), list):
                raise ConnectorError(f"{path}: not a Kubernetes list (no `items`)")
            items += data["items"]
            cont = (data.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items
        raise ConnectorError(f"{path}: more than {max_pages} pages")

    def text(self, path: str, params: dict[str, str] | None = None) -> str:
        return get_bytes(self.url + path, params, self.headers, self.timeout, self.retries,
                         self.backoff).decode("utf-8", "replace")
