"""A fake Kubernetes API server for ConfigMaps, on loopback: it answers as kube-apiserver does and records requests.

Only what writing a ConfigMap needs: GET, POST (create) and PATCH (JSON merge patch, RFC 7386, honouring a
`metadata.resourceVersion` precondition) of `/api/v1/namespaces/NS/configmaps[/NAME]`. Answers are shaped as the
real server's: the object with its metadata (uid, resourceVersion, creationTimestamp, managedFields) on success,
and a `Status` object (`kind: Status`, `reason`, `message`, `details`, `code`) on failure, with the real messages'
wording (`configmaps "x" not found`, `... is forbidden: User "..." cannot patch resource "configmaps" in API group
"" in the namespace "..."`, `the object has been modified; ...`). A bearer token is required (401 otherwise).

The official client library talks to it through a kubeconfig that points at it (`kubeconfig()`), so the tests
exercise the real request path: credentials, URL, verb, content type, body and error handling.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOKEN = "fake-token"
USER = "system:serviceaccount:rayon:follower"
PATH = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps(?:/(?P<name>[^/?]+))?(?:\?(?P<query>.*))?$")
VERBS = {"GET": "get", "POST": "create", "PATCH": "patch"}


@dataclass
class Request:
    """One request the fake received."""

    method: str
    path: str
    content_type: str | None
    body: Any
    authorization: str | None


@dataclass
class FakeAPIServer:
    """The cluster's state (namespaces, ConfigMaps) and what was asked of it."""

    namespaces: set[str] = field(default_factory=lambda: {"default", "kube-system", "yunikorn"})
    configmaps: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    forbidden: set[str] = field(default_factory=set)  # verbs refused with 403
    requests: list[Request] = field(default_factory=list)
    before_patch: Any = None  # called before a PATCH is answered: a writer racing us
    _versions: itertools.count = field(default_factory=lambda: itertools.count(1000))

    def put(self, namespace: str, name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> None:
        """A ConfigMap as someone else made it."""
        self.configmaps[namespace, name] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "resourceVersion": str(next(self._versions)),
                         "creationTimestamp": "2026-11-23T00:00:00Z", **({"labels": labels} if labels else {})},
            "data": dict(data)}

    def data(self, namespace: str = "yunikorn", name: str = "yunikorn-configs") -> dict[str, str]:
        return self.configmaps[namespace, name].get("data", {})

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method != "GET"]

    def handle(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        body = json.loads(raw) if raw else None
        auth = headers.get("Authorization")
        self.requests.append(Request(method, path, headers.get("Content-Type"), body, auth))
        if auth != f"Bearer {TOKEN}":
            return 401, status(401, "Unauthorized", "Unauthorized")
        match = PATH.match(path)
        if match is None or method not in VERBS:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        namespace, name = match["ns"], match["name"]
        verb = VERBS[method]
        if verb in self.forbidden:
            target = f'configmaps "{name}" is' if name else "configmaps is"
            return 403, status(403, "Forbidden", f'{target} forbidden: User "{USER}" cannot {verb} resource '
                               f'"configmaps" in API group "" in the namespace "{namespace}"', name)
        if method == "POST":
            return self._create(namespace, body)
        if (namespace, name) not in self.configmaps:
            return 404, status(404, "NotFound", f'configmaps "{name}" not found', name)
        if method == "GET":
            return 200, self.configmaps[namespace, name]
        assert headers.get("Content-Type") == "application/merge-patch+json", headers.get("Content-Type")
        if self.before_patch is not None:
            self.before_patch()
        return self._patch(namespace, name, body)

    def _create(self, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = body["metadata"]["name"]
        if namespace not in self.namespaces:
            return 404, status(404, "NotFound", f'namespaces "{namespace}" not found', namespace, "namespaces")
        if (namespace, name) in self.configmaps:
            return 409, status(409, "AlreadyExists", f'configmaps "{name}" already exists', name)
        self.put(namespace, name, body.get("data", {}), body["metadata"].get("labels"))
        return 201, self.configmaps[namespace, name]

    def _patch(self, namespace: str, name: str, patch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        current = self.configmaps[namespace, name]
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            return 409, status(409, "Conflict", f'Operation cannot be fulfilled on configmaps "{name}": the object '
                               "has been modified; please apply your changes to the latest version and try again",
                               name)
        merged = merge(copy.deepcopy(current), patch)
        merged["metadata"]["resourceVersion"] = str(next(self._versions))
        self.configmaps[namespace, name] = merged
        return 200, merged


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    target = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge(target.get(key), value)
    return target


def status(code: int, reason: str, message: str, name: str | None = None, kind: str = "configmaps") -> dict[str, Any]:
    """A `Status` as kube-apiserver answers a failed request."""
    answer: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code}
    if name is not None:
        answer["details"] = {"name": name, "kind": kind}
    return answer


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAPIServer

    def _answer(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        code, body = self.server.fake.handle(self.command, self.path, self.headers, raw)  # type: ignore[attr-defined]
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args: Any) -> None:
        pass


class Serving:
    """The fake listening on 127.0.0.1 in a thread; `kubeconfig(dir)` writes a kubeconfig that points at it."""

    def __init__(self, fake: FakeAPIServer):
        self.fake = fake
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = fake  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def kubeconfig(self, folder: Path, token: str = TOKEN, url: str | None = None) -> Path:
        path = folder / "kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": url or self.url}}],
            "users": [{"name": "follower", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "follower"}},
                         {"name": "other", "context": {"cluster": "fake", "user": "follower",
                                                       "namespace": "other"}}]}))
        return path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
