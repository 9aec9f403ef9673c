"""The compiled kernels against their numpy formulations: the same room, the same leases, the same decisions.

Windows shorter than `pack.COMPILED_FROM` run in numpy until the kernels are loaded, and longer ones compiled; here
each kernel runs both ways on the same input, and whole random plans run with every window compiled and with none.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.agents.greedy import compiled, pack
from planner.core.laying import lay
from tests.planner.agents.test_properties import Scenario, _plan_and_check, scenarios
from tests.planner.support import numpy_kernels

GREEDY = ["gree", "gree-l"]  # the MILP's own search runs no greedy kernel
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _numpy_only(function, *args):  # type: ignore[no-untyped-def]
    """The kernel with every window below the compiled size: the numpy path."""
    with pytest.MonkeyPatch.context() as patch:
        numpy_kernels(patch)
        return function(*args)


def _compiled_only(function, *args):  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pack, "COMPILED_FROM", 0)
        return function(*args)


@FAST
@given(data=st.data(), resources=st.integers(1, 3), steps=st.integers(0, 80), gang=st.integers(1, 4),
       parallelism=st.one_of(st.none(), st.integers(0, 12)))
def test_room_is_the_same_compiled(data: st.DataObject, resources: int, steps: int, gang: int,
                                   parallelism: int | None) -> None:
    halves = st.integers(-4, 40).map(lambda n: n / 2)  # whole and half units, some below zero (over capacity)
    free = data.draw(hnp.arrays(np.float64, (resources, steps), elements=halves))
    demand = data.draw(hnp.arrays(np.float64, resources, elements=st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0])))
    expected = _numpy_only(pack.gang_room, free, demand, gang, parallelism)
    assert np.array_equal(_compiled_only(pack.gang_room, free, demand, gang, parallelism), expected)
    if steps > 2:  # a strided window of a larger array, as the placer passes it
        view = free[:, 1:-1]
        assert np.array_equal(_compiled_only(pack.gang_room, view, demand, gang, parallelism),
                              _numpy_only(pack.gang_room, view, demand, gang, parallelism))


def _start_by_start(room: np.ndarray, length: int, leases: int) -> tuple[list[int], list[int]] | None:
    """The definition: every start from the last down, each taking what its whole lease has left."""
    left, starts, counts, remaining = room.astype(np.int64).copy(), [], [], leases
    for start in range(room.shape[0] - length, -1, -1):
        fit = int(left[start:start + length].min())
        if fit > 0:
            take = min(fit, remaining)
            left[start:start + length] -= take
            starts.append(start)
            counts.append(take)
            remaining -= take
            if remaining == 0:
                return starts, counts
    return None


@FAST
@given(room=hnp.arrays(np.int64, st.integers(0, 120), elements=st.integers(-1, 6)), length=st.integers(1, 12),
       leases=st.integers(1, 40))
def test_exact_latest_is_the_same_in_numpy_and_compiled(room: np.ndarray, length: int, leases: int) -> None:
    expected = _start_by_start(room, length, leases)
    for found in (_numpy_only(pack.exact_latest, room, length, leases),
                  _compiled_only(pack.exact_latest, room, length, leases)):
        if expected is None:
            assert found is None
            continue
        assert found is not None
        assert (found[0].tolist(), found[1].tolist()) == expected
        held = np.zeros_like(room)
        for start, count in zip(*found, strict=True):
            held[start:start + length] += count
        assert int(found[1].sum()) == leases and (held <= np.maximum(room, 0)).all()


@FAST
@given(room=hnp.arrays(np.int64, st.integers(0, 150), elements=st.integers(0, 9)), length=st.integers(1, 12),
       leases=st.integers(1, 300))
def test_flattest_is_the_same_in_numpy_and_compiled(room: np.ndarray, length: int, leases: int) -> None:
    """The flattest level over a window's tiles, and the blocks at it, bisected in numpy or in the kernel: the same
    blocks, the same trimmed tiles; a tile-room view reversed in memory, as tile_room gives it."""
    tiles = pack.tile_room(room, length)
    expected = _numpy_only(pack.flattest_of_tiles, tiles, room.shape[0], length, leases)
    found = _compiled_only(pack.flattest_of_tiles, tiles, room.shape[0], length, leases)
    if expected is None:
        assert found is None and int(tiles.sum()) < leases
        return
    assert found is not None
    assert (found[0].tolist(), found[1].tolist()) == (expected[0].tolist(), expected[1].tolist())
    assert int(found[1].sum()) == leases


@FAST
@given(data=st.data(), resources=st.integers(1, 3), length=st.integers(1, 9), gang=st.integers(1, 4),
       sign=st.sampled_from([1, -1]))
def test_laying_many_blocks_compiled_is_the_outer_product(data: st.DataObject, resources: int, length: int,
                                                          gang: int, sign: int) -> None:
    """The placer's lay of a placement of many blocks: what `free -= np.outer(demand * sign, held)` leaves, bit for
    bit, blocks overlapping or not, demands not whole (tenths) as well."""
    count = data.draw(st.integers(1, 8))
    starts = np.array(data.draw(st.lists(st.integers(0, 30), min_size=count, max_size=count)), dtype=np.int64)
    gangs = np.array(data.draw(st.lists(st.integers(1, 5), min_size=count, max_size=count)), dtype=np.int64)
    tenths = st.integers(-40, 400).map(lambda n: n / 10)
    free = data.draw(hnp.arrays(np.float64, (resources, 50), elements=tenths))
    demand = data.draw(hnp.arrays(np.float64, resources, elements=st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0, 4096.0])))
    base = int(starts.min())
    held = np.zeros(int(starts.max()) + length - base + 1, dtype=np.int64)
    np.add.at(held, starts - base, gangs)
    np.add.at(held, starts - base + length, -gangs)
    held = np.cumsum(held[:-1]) * gang
    expected = free.copy()
    expected[:, base:base + held.shape[0]] -= np.outer(demand * sign, held)
    lay(free, base, starts - base, starts - base + length, gangs * gang, demand * sign)
    assert free.tobytes() == expected.tobytes()


def test_the_kernels_load_from_the_disk_cache() -> None:
    """Compiled with `cache=True`: a second process loads the machine code instead of compiling it."""
    assert compiled.room_kernel._cache.__class__.__name__ == "FunctionCache"
    assert compiled.latest_kernel._cache.__class__.__name__ == "FunctionCache"
    assert lay._cache.__class__.__name__ == "FunctionCache"


@pytest.mark.parametrize("agent", GREEDY)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_random_plans_decide_the_same_compiled(agent: str, scenario: Scenario) -> None:
    _, expected = _numpy_only(_plan_and_check, scenario, agent)
    _, records = _compiled_only(_plan_and_check, scenario, agent)  # which also runs the checker on its plan
    assert records == expected
