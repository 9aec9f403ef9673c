"""The follower's YuniKorn `queues.yaml` kept in YuniKorn's ConfigMap through the Kubernetes API.

YuniKorn (1.x) reads its queues from two ConfigMaps in its namespace: `yunikorn-defaults`, which Helm writes, and
`yunikorn-configs`, which Helm leaves alone for tools to change at run time; the shim watches it and the core
reloads the queues without a restart. We write one key of the second, `queues.yaml`:

- read the ConfigMap; the `queues.yaml` already in it is the base the plan queue is put into (its other queues,
  placement rules and partitions are kept), unless the caller gives a base of its own;
- write only when the document differs from what the ConfigMap holds, as a JSON merge patch of that one key (every
  other key, label and annotation is left as it was) carrying the resourceVersion read, so an edit made in between
  is never overwritten blind: the API server refuses the patch, and we read again and retry;
- create the ConfigMap when it is missing (Helm does not create `yunikorn-configs`: a fresh install has none), but
  never its namespace: a missing namespace means YuniKorn is not where we were told, which is an error.

Credentials are chosen as the official client chooses them: a kubeconfig (`--kubeconfig`, else `$KUBECONFIG`, else
`~/.kube/config`, with its current context unless one is named), else the pod's service account when running in
a cluster. Every failure (no credentials, refused, forbidden, no such namespace, unreachable) is a
`KubernetesError` that names it, raised before anything was changed.

The `kubernetes` package is an optional extra (`pip install 'rayon-planner[kubernetes]'`), imported only here and
only when a ConfigMap is written.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any as AnyType

from follower.follow import yunikorn
from follower.follow.follower import FollowerError
from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL

TARGET = "yunikorn-configmap"  # `--apply` and `--follow-to` name the ConfigMap as TARGET[:NAMESPACE/NAME]
DEFAULT_NAMESPACE = "yunikorn"
DEFAULT_NAME = "yunikorn-configs"
KEY = "queues.yaml"
FIELD_MANAGER = "rayon"  # who the API server records as the writer of the key (managedFields)
TIMEOUT = (5.0, 30.0)  # seconds to connect, to read an answer
ATTEMPTS = 3  # reads and patches when someone else keeps changing the ConfigMap in between
DEFAULT_KUBECONFIG = "~/.kube/config"
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a namespace: an RFC 1123 label
SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
ROLE_HINT = "the account needs get, create and patch on configmaps in namespace `{namespace}`; docs/follower.md"


class KubernetesError(FollowerError):
    """The ConfigMap could not be read or written; it was left as it was."""

    code = "kubernetes"

    def __init__(self, message: str, hint: str | None = None, exit_code: int = EXIT_BAD_INPUT):
        super().__init__(message, hint)
        self.exit_code = exit_code


@dataclass(frozen=True)
class ConfigMapRef:
    """Which ConfigMap holds YuniKorn's `queues.yaml`: `yunikorn/yunikorn-configs` unless told otherwise."""

    namespace: str = DEFAULT_NAMESPACE
    name: str = DEFAULT_NAME

    @classmethod
    def parse(cls, text: str) -> ConfigMapRef:
        """`NAMESPACE/NAME` (or empty, for the default); a ValueError saying what is expected otherwise."""
        if not text:
            return cls()
        namespace, sep, name = text.partition("/")
        if not sep or not LABEL.match(namespace) or not SUBDOMAIN.match(name):
            raise ValueError(f"`{text}` is not NAMESPACE/NAME: give a ConfigMap such as "
                             f"{DEFAULT_NAMESPACE}/{DEFAULT_NAME} (lower-case letters, digits and `-`)")
        return cls(namespace, name)

    @classmethod
    def target(cls, text: str) -> ConfigMapRef:
        """`yunikorn-configmap` or `yunikorn-configmap:NAMESPACE/NAME`; a ValueError saying what is expected."""
        kind, sep, rest = text.partition(":")
        if kind != TARGET or (sep and not rest):
            raise ValueError(f"`{text}` is not a ConfigMap target: give `{TARGET}` (the ConfigMap "
                             f"{DEFAULT_NAMESPACE}/{DEFAULT_NAME}) or `{TARGET}:NAMESPACE/NAME`")
        return cls.parse(rest)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Applied:
    """What one apply did: `created`, `updated` or `unchanged` (`would create`, ... on a dry run), and the text."""

    outcome: str
    ref: ConfigMapRef
    text: str
    resource_version: str | None

    def __str__(self) -> str:
        version = f" (resourceVersion {self.resource_version})" if self.resource_version else ""
        return f"ConfigMap {self.ref} {KEY} {self.outcome}{version}"


class ConfigMapApplier:
    """Writes `queues.yaml` into one ConfigMap through a connected `CoreV1Api` (`connect` makes one)."""

    def __init__(self, api: AnyType, ref: ConfigMapRef, server: str,
                 failures: tuple[type[BaseException], ...] = (Exception,)):
        self.api, self.ref, self.server = api, ref, server
        self.failures = failures  # what the client raises: its ApiException, urllib3's and the socket's errors

    def apply(self, render: Callable[[Mapping[str, AnyType] | None], str], dry_run: bool = False) -> Applied:
        """Read the ConfigMap, render the document over the `queues.yaml` it holds (None: none), and write it if
        it differs; a KubernetesError, with nothing changed, when that cannot be done."""
        for _ in range(ATTEMPTS):
            found = self._read()
            current = None if found is None else (found.data or {}).get(KEY)
            base = yunikorn.load_base(current, f"ConfigMap {self.ref} {KEY}") if current and current.strip() else None
            text = render(base)
            version = None if found is None else found.metadata.resource_version
            if text == current:
                return Applied("unchanged", self.ref, text, version)
            if dry_run:
                return Applied("would create" if found is None else "would update", self.ref, text, version)
            written = self._create(text) if found is None else self._patch(text, version)
            if written is not None:
                return written
        raise KubernetesError(f"ConfigMap {self.ref} changed under us {ATTEMPTS} times while {KEY} was written; "
                              "nothing was changed", "something else keeps writing it: try again", EXIT_INTERNAL)

    def _read(self) -> AnyType:
        try:
            return self.api.read_namespaced_config_map(self.ref.name, self.ref.namespace, _request_timeout=TIMEOUT)
        except self.failures as exc:
            if _status(exc) == 404:
                return None
            raise self._error(exc, "read") from None

    def _create(self, text: str) -> Applied | None:
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.ref.name, "namespace": self.ref.namespace}, "data": {KEY: text}}
        try:
            made = self.api.create_namespaced_config_map(self.ref.namespace, body, field_manager=FIELD_MANAGER,
                                                         _request_timeout=TIMEOUT)
        except self.failures as exc:
            if _status(exc) == 409:  # created by someone else since we read: read it again
                return None
            if _status(exc) == 404:
                raise KubernetesError(f"namespace `{self.ref.namespace}` not found on {self.server}: the ConfigMap "
                                      f"{self.ref} cannot be created there; nothing was changed",
                                      "is YuniKorn installed in that namespace? name its ConfigMap as "
                                      "yunikorn-configmap:NAMESPACE/NAME") from None
            raise self._error(exc, "create") from None
        return Applied("created", self.ref, text, made.metadata.resource_version)

    def _patch(self, text: str, version: str | None) -> Applied | None:
        patch = {"metadata": {"resourceVersion": version}, "data": {KEY: text}}
        try:
            made = self.api.patch_namespaced_config_map(self.ref.name, self.ref.namespace, patch,
                                                        field_manager=FIELD_MANAGER, _request_timeout=TIMEOUT,
                                                        _content_type="application/merge-patch+json")
        except self.failures as exc:
            if _status(exc) in (404, 409):  # deleted or changed since we read: read it again
                return None
            raise self._error(exc, "patch") from None
        return Applied("updated", self.ref, text, made.metadata.resource_version)

    def _error(self, exc: BaseException, verb: str) -> KubernetesError:
        """The client's exception as one that says what went wrong and what to do about it."""
        status = _status(exc)
        said = _message(exc)
        if status is None:
            return KubernetesError(f"cannot reach the Kubernetes API server at {self.server}: {_reason(exc)}; "
                                   "nothing was changed", "is the cluster up, and the kubeconfig's server right?",
                                   EXIT_INTERNAL)
        if status == 401:
            return KubernetesError(f"the Kubernetes API server at {self.server} refused the credentials (401 "
                                   f"Unauthorized: {said}); nothing was changed",
                                   "renew the token or log in again for this kubeconfig context")
        if status == 403:
            return KubernetesError(f"forbidden to {verb} ConfigMap {self.ref}: {said}; nothing was changed",
                                   ROLE_HINT.format(namespace=self.ref.namespace))
        return KubernetesError(f"the Kubernetes API server at {self.server} answered {status} to the {verb} of "
                               f"ConfigMap {self.ref}: {said}; nothing was changed",
                               exit_code=EXIT_BAD_INPUT if 400 <= status < 500 else EXIT_INTERNAL)


def connect(ref: ConfigMapRef, kubeconfig: str | None = None, context: str | None = None,
            environ: Mapping[str, str] | None = None) -> ConfigMapApplier:
    """An applier for `ref`, with credentials chosen as the client does: a kubeconfig (`kubeconfig`, else
    $KUBECONFIG, else ~/.kube/config) with `context` (default: its current one), else the pod's service account."""
    environ = os.environ if environ is None else environ
    kubernetes = _library()
    configuration = kubernetes.client.Configuration()
    configuration.retries = 0  # one answer is enough: a failure is reported, and the next round tries again
    paths = _kubeconfigs(kubeconfig, environ)
    try:
        if paths:
            kubernetes.config.load_kube_config(config_file=os.pathsep.join(paths), context=context,
                                               client_configuration=configuration, persist_config=False)
        elif environ.get("KUBERNETES_SERVICE_HOST"):
            from kubernetes.config import incluster_config

            incluster_config.InClusterConfigLoader(incluster_config.SERVICE_TOKEN_FILENAME,
                                                   incluster_config.SERVICE_CERT_FILENAME,
                                                   environ=environ).load_and_set(configuration)
        else:
            where = environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
            raise KubernetesError(f"no Kubernetes credentials: no kubeconfig at {where}, and not running in a "
                                  "pod; nothing was changed",
                                  "give --kubeconfig FILE or set $KUBECONFIG, or run inside the cluster with a "
                                  "service account")
    except kubernetes.config.ConfigException as exc:
        source = os.pathsep.join(paths) if paths else "the pod's service account"
        raise KubernetesError(f"cannot use the Kubernetes credentials of {source}: {exc}; nothing was changed",
                              "check the file, or name a context of it with --context") from None
    api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))
    import urllib3

    return ConfigMapApplier(api, ref, configuration.host,
                            (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError))


def _kubeconfigs(given: str | None, environ: Mapping[str, str]) -> list[str]:
    """The kubeconfig files to read, those that exist; a file given by name must exist."""
    if given is not None:
        if not Path(given).expanduser().is_file():
            raise KubernetesError(f"--kubeconfig {given}: no such file; nothing was changed")
        return [str(Path(given).expanduser())]
    listed = environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    return [str(Path(p).expanduser()) for p in listed.split(os.pathsep) if p and Path(p).expanduser().is_file()]


def _library() -> AnyType:
    try:
        import kubernetes
    except ImportError:
        raise KubernetesError("writing a ConfigMap needs the Kubernetes client, which is not installed",
                              "pip install 'rayon-planner[kubernetes]'") from None
    return kubernetes


def _status(exc: BaseException) -> int | None:
    """The HTTP status of the client's ApiException (None: no answer came, or not an API error)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def _message(exc: BaseException) -> str:
    """The API server's own message (its Status object's), else the HTTP reason."""
    try:
        return str(json.loads(getattr(exc, "body", None) or "{}")["message"])
    except (ValueError, KeyError, TypeError):
        return str(getattr(exc, "reason", None) or exc)


def _reason(exc: BaseException) -> str:
    """Why no answer came: the innermost reason urllib3 gives (connection refused, a timeout, a TLS failure)."""
    reason: AnyType = getattr(exc, "reason", None)
    while getattr(reason, "reason", None) is not None:
        reason = reason.reason
    return str(reason or exc)
