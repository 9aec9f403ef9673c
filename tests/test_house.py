"""The house stays readable: no product module grows past what one concept needs (issue #31's rule, after
`planner/store/facade.py` had grown from 401 to 713 lines and `rdl/cluster.py` to 482)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("rdl", "planner", "follower")
MOST_LINES = 450


def test_no_product_module_is_over_450_lines() -> None:
    long = {str(path.relative_to(ROOT)): count for package in PRODUCT for path in sorted((ROOT / package).rglob("*.py"))
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES}
    assert long == {}, f"split these by concept (at most {MOST_LINES} lines each): {long}"
