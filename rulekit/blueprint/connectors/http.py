"""A small HTTP GET client for connectors: timeouts, retries with exponential
backoff on 429 and 5xx (honouring Retry-After), JSON decoding; every failure
becomes a `ConnectorError` with a one-line reason.  stdlib only; no state."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from rulekit.blueprint.model import ConnectorError

RETRY_STATUS = {429, 500, 502, 503, 504}


def get_json(url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
             timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
             sleep: Callable[[float], None] = time.sleep) -> Any:
    body = get_bytes(url, params, headers, timeout, retries, backoff, sleep)
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        raise ConnectorError(f"{url} answered something that is not JSON ({e.msg})") from None


def get_bytes(url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
              timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
              sleep: Callable[[float], None] = time.sleep) -> bytes:
    full = url + ("?" + urllib.parse.urlencode(params) if params else "")
    last = ""
    for attempt in range(retries + 1):
        req = urllib.request.Request(full, headers={"Accept": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            try:
                j = json.loads(detail)
                detail = j.get("error") or j.get("message") or detail  # Prometheus / Kubernetes Status
            except (json.JSONDecodeError, AttributeError):
                pass
            last = f"HTTP {e.code} from {url}: {detail.strip()}"
            if e.code in RETRY_STATUS and attempt < retries:
                ra = e.headers.get("Retry-After") if e.headers else None
                wait = float(ra) if ra and ra.replace(".", "", 1).isdigit() else backoff * (2 ** attempt)
                sleep(min(wait, 30.0))
                continue
            raise ConnectorError(last) from None
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            last = f"{url} unreachable: {reason}"
            if attempt < retries:
                sleep(backoff * (2 ** attempt))
                continue
            raise ConnectorError(last) from None
        return body
    raise ConnectorError(last + f" (after {retries + 1} tries)")
