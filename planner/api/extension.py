"""What a part of the product above the API adds to `rayon serve` (the plan follower's queues): its routes, and work
at every tick of the service's clock. The API knows only this protocol, so that imports keep pointing one way."""

from __future__ import annotations

from typing import Protocol

from fastapi import FastAPI

from planner.api.context import Service


class Extension(Protocol):
    """Installed once when the app is made; `tick` runs in the clock's thread after each tick, moved or not."""

    def install(self, app: FastAPI, service: Service) -> None: ...

    def tick(self) -> None: ...
