"""A minimal Kubernetes API reader for the Kueue and pod-log connectors: list
calls paged with `limit`/`continue` (at most `max_pages` pages; a server that
answers more than `limit` items and still a `continue` token ignores `limit`:
paging stops there), text (pod logs: the last `max_response_bytes` of a longer
one), a bearer token from a file, the errors of `Status` objects as
ConnectorError.  Path segments from data (namespaces, pod names) are
percent-encoded (`rulekit.blueprint.names.url_segment`).  Partial answers are
`faults` the caller records.  Reads only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rulekit.blueprint.connectors.http import get_bytes, get_json
from rulekit.blueprint.limits import MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, RETRIES
from rulekit.blueprint.model import ConnectorError

LIST_PAGES = 200  # pages of `page` objects one list may take


class KubeClient:
    def __init__(self, url: str, token_file: str | Path | None = None, timeout: float = REQUEST_TIMEOUT_S,
                 retries: int = RETRIES, page: int = 500, backoff: float = 0.5,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, max_pages: int = LIST_PAGES):
        self.url, self.timeout, self.retries, self.page, self.backoff = url.rstrip("/"), timeout, retries, page, backoff
        self.max_response_bytes, self.max_pages = max_response_bytes, max_pages
        self.faults: list[str] = []
        self.headers: dict[str, str] = {}
        if token_file:
            try:
                self.headers["Authorization"] = "Bearer " + Path(token_file).read_text().strip()
            except OSError as e:
                raise ConnectorError(f"cannot read token file {token_file}: {e.strerror}") from None

    def list(self, path: str, params: dict[str, str] | None = None, max_pages: int | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cont = ""
        pages = max_pages or self.max_pages
        for _ in range(pages):
            q = {**(params or {}), "limit": str(self.page)}
            if cont:
                q["continue"] = cont
            data = get_json(self.url + path, q, self.headers, self.timeout, self.retries, self.backoff,
                            max_bytes=self.max_response_bytes)
            if not isinstance(data, dict) or not isinstance(data.get("items"), list):
                raise ConnectorError(f"{path}: not a Kubernetes list (no `items`)")
            items += data["items"]
            cont = (data.get("metadata") or {}).get("continue") or ""
            if not isinstance(cont, str) or not cont:
                return items
            if len(data["items"]) > self.page:
                self.faults.append(f"{path}: the server answered {len(data['items'])} items for `limit` {self.page} "
                                   "and a `continue` token (it ignores `limit`); paging stopped")
                return items
        self.faults.append(f"{path}: more than {pages} pages of {self.page}; later items not read")
        return items

    def text(self, path: str, params: dict[str, str] | None = None) -> str:
        """A text answer (a pod log): its last `max_response_bytes` when it is longer
        (the end of a log matters most; the cut is a fault)."""
        cap = self.max_response_bytes

        def cut(n: int) -> None:
            self.faults.append(f"{path}: the log is {n} bytes longer than `max_response_bytes` ({cap}); "
                               "only its last bytes were kept")

        body = get_bytes(self.url + path, params, self.headers, self.timeout, self.retries, self.backoff,
                         max_bytes=cap, tail=cut)
        if self.faults and self.faults[-1].startswith(f"{path}: the log is"):
            body = body[body.find(b"\n") + 1:]  # the first line kept is cut: left out
        return body.decode("utf-8", "replace")
