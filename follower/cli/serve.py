"""`rayon serve` with the plan follower inside: planner/cli/serve.py's command and options, plus `--follow-to`.

The follower sits above the planner (imports point one way), so the service's command that serves its queues
is put together here: `GET /v1/queues` always, and the YuniKorn `queues.yaml` kept current with `--follow-to`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any as AnyType

import click

from follower.follow import configmap
from follower.follow.allocated import YuniKornAllocated
from follower.follow.follower import ON_EXPIRY, Follower
from follower.follow.service import KEEP_ENDED, FollowTo, QueuePublisher, check_target
from planner.cli import serve as planner_serve
from planner.store.facade import Store
from planner.store.queuelog import DEFAULT_KEEP, QueueLog
from rdl import units
from rdl.cli import Choice, ParsedParam, RayonCommand

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

FOLLOW_ALLOCATED = click.Option(["--follow-allocated", "follow_allocated"], metavar="URL",
                                type=ParsedParam("address", YuniKornAllocated, YuniKornAllocated),
                                help="YuniKorn's REST API (http://HOST:9080): at every step, record what it reports "
                                "each queue holds (partition `default`) beside the follower's round; the dashboard "
                                "draws both (GET /v1/queues/history).")
ON_EXPIRY_OPTION = click.Option(["--on-expiry", "on_expiry"], type=Choice(ON_EXPIRY), default="move",
                                show_default=True,
                                help="What becomes of a reservation's pods still running when its window closes, "
                                "with --follow-to: `move`, its queue leaves the document and YuniKorn drains it "
                                "(they run on); `kill`, its queue stays closed in the document for "
                                f"{KEEP_ENDED} s and YuniKorn's quota preemption (1.9) ends them within seconds "
                                "(docs/kubernetes.md).")


def _keep(text: str) -> str:
    """`off`, or a duration (checked here, read again by `publishers`)."""
    if text.strip() != "off":
        units.parse_duration(text, "d")
    return text.strip()


QUEUE_LOG = click.Option(["--queue-log", "queue_log"], metavar="DURATION|off", default=units.format_duration(
    DEFAULT_KEEP.total_seconds()), show_default=True, type=ParsedParam("duration", _keep, ()),
                         help="How much plan time of the queues' history to keep (the follower's round at each "
                         "step, and what schedulers report they allocated); `off` records none.")


@click.pass_context
def _serve(ctx: click.Context, config_path: str | None, **_: AnyType) -> None:
    given = planner_serve.options(ctx, config_path)
    target = given.extra.get("follow_to")
    assert target is None or isinstance(target, FollowTo)
    if target is not None and given.extra.get("follow_replace"):
        target = replace(target, replace=True)
    if target is not None:
        check_target(target)  # another file given by mistake is refused before anything starts
    on_expiry = str(given.extra.get("on_expiry") or "move")
    if on_expiry == "kill" and target is None:
        raise click.UsageError("--on-expiry kill needs --follow-to: without a YuniKorn document nothing would end "
                               "a reservation's pods", ctx)
    if target is not None and target.configmap:
        # credentials are looked for now: a server that could never write its ConfigMap does not start
        configmap.connect(target.configmap)
    keep = str(given.extra.get("queue_log") or "off")
    allocated = given.extra.get("follow_allocated")
    assert allocated is None or isinstance(allocated, YuniKornAllocated)
    planner_serve.run(given, partial(publishers, target, keep=keep, allocated=allocated, on_expiry=on_expiry))


def publishers(target: FollowTo | None, store: Store, keep: str = "off",
               allocated: YuniKornAllocated | None = None, on_expiry: str = "move") -> list[QueuePublisher]:
    """The follower's queues over the store, published to `target` (each worker process connects its own), and
    recorded in the store's queue log for `keep` of plan time (`off`: not recorded), with what `allocated` says;
    `on_expiry`: the follower's (`kill` keeps an ended queue closed in the document, service.py)."""
    applier = configmap.connect(target.configmap) if target is not None and target.configmap else None
    history = None if keep == "off" else QueueLog(store.engine, timedelta(seconds=units.parse_duration(keep, "d")))
    return [QueuePublisher(store, target, Follower(on_expiry=on_expiry), applier=applier, history=history,
                           allocated=allocated if history is not None else None)]


serve = RayonCommand("serve", params=[*planner_serve.serve.params, FOLLOW_TO, FOLLOW_REPLACE, ON_EXPIRY_OPTION,
                                                     FOLLOW_ALLOCATED, QUEUE_LOG], callback=_serve,
                     help=planner_serve.serve.help, short_help=planner_serve.serve.short_help)

COMMANDS = [serve]
