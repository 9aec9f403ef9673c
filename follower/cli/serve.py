"""`rayon serve` with the plan follower inside: planner/cli/serve.py's command and options, plus `--follow-to`.

The follower sits above the planner (imports point one way), so the service's command that serves its queues
is put together here: `GET /v1/queues` always, and the YuniKorn `queues.yaml` kept current with `--follow-to`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any as AnyType

import click

from follower.follow import configmap
from follower.follow.service import FollowTo, QueuePublisher, check_target
from planner.cli import serve as planner_serve
from planner.store.facade import Store
from rdl.cli import ParsedParam, RayonCommand

FOLLOW_TO = click.Option(["--follow-to", "follow_to"], type=ParsedParam("target", FollowTo.parse, FollowTo),
                         metavar="yunikorn:FILE|yunikorn-configmap[:NS/NAME]",
                         help="Keep FILE the YuniKorn queues.yaml of the plan's queues now, replaced atomically "
                         "whenever the plan follower's round changes; or keep it in YuniKorn's ConfigMap (key "
                         "queues.yaml; default yunikorn/yunikorn-configs) through the Kubernetes API, with the "
                         "kubeconfig ($KUBECONFIG, ~/.kube/config) or the pod's service account. GET /v1/queues "
                         "answers it either way.")
FOLLOW_REPLACE = click.Option(["--follow-replace", "follow_replace"], is_flag=True, default=False,
                              help="With --follow-to yunikorn:FILE: replace FILE even if it is not a queues.yaml "
                              "that rayon serve wrote (by default such a file is refused: exit 2).")


@click.pass_context
def _serve(ctx: click.Context, config_path: str | None, **_: AnyType) -> None:
    given = planner_serve.options(ctx, config_path)
    target = given.extra.get("follow_to")
    assert target is None or isinstance(target, FollowTo)
    if target is not None and given.extra.get("follow_replace"):
        target = replace(target, replace=True)
    if target is not None:
        check_target(target)  # another file given by mistake is refused before anything starts
    if target is not None and target.configmap:
        configmap.connect(target.configmap)  # credentials are looked for now: a server that could never write
    planner_serve.run(given, partial(publishers, target))  # its ConfigMap does not start


def publishers(target: FollowTo | None, store: Store) -> list[QueuePublisher]:
    """The follower's queues over the store, published to `target` (each worker process connects its own)."""
    applier = configmap.connect(target.configmap) if target is not None and target.configmap else None
    return [QueuePublisher(store, target, applier=applier)]


serve = RayonCommand("serve", params=[*planner_serve.serve.params, FOLLOW_TO, FOLLOW_REPLACE], callback=_serve,
                     help=planner_serve.serve.help, short_help=planner_serve.serve.short_help)

COMMANDS = [serve]
