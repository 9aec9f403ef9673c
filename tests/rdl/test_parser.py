"""The RDL text parser: every construct of the language (spec: Expressions, Reservations, Values)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import rdl
from rdl import All, Any, Atom, Order, Relative, Resources, Window
from rdl.errors import Span
from tests.rdl.support import body, one

BUNDLE = "b={memory: 1GiB, vcores: 1}"


def atom(args: str = "w=1h") -> Atom:
    node = body(f"atom({BUNDLE}, {args})")
    assert isinstance(node, Atom)
    return node


# -- atom ---------------------------------------------------------------------------------


def test_atom_reads_every_argument() -> None:
    node = body("atom(b={memory: 8GiB, vcores: 4}, g=10, h=20, l=1h, w=10h)")
    assert node == Atom(bundle=Resources.of({"memory": 8192, "vcores": 4}), work=36000.0, gang=10,
                        parallelism=20, lease=3600.0)


def test_atom_defaults_gang_1_parallelism_unbounded_lease_one_step() -> None:
    node = atom("w=50h")
    assert (node.gang, node.parallelism, node.lease, node.work) == (1, None, None, 180000.0)


def test_atom_arguments_may_come_in_any_order() -> None:
    assert body("atom(w=2h, l=5m, h=3, g=1, b={vcores: 1})") == body("atom(b={vcores: 1}, g=1, h=3, l=5m, w=2h)")


def test_explicit_default_gang_equals_omitted_gang() -> None:
    assert atom("g=1, w=1h") == atom("w=1h")


def test_trailing_comma_is_accepted() -> None:
    assert body("atom(b={vcores: 1,}, w=1h,)") == body("atom(b={vcores: 1}, w=1h)")


def test_mpi_gang_is_one_lease_of_h_bundles() -> None:
    node = atom("g=64, h=64, l=2h, w=128h")
    assert node.gang == node.parallelism == 64
    assert node.work / (node.gang * node.lease) == 1


# -- window -------------------------------------------------------------------------------


def test_window_with_start_and_end() -> None:
    node = body(f"window(s=2026-11-23T06:00:00Z, e=+6h, atom({BUNDLE}, w=1h))")
    assert isinstance(node, Window)
    assert node.start == rdl.Absolute(datetime(2026, 11, 23, 6, tzinfo=UTC))
    assert node.end == Relative(21600.0)
    assert node.child == atom("w=1h")


def test_window_without_start_starts_at_arrival() -> None:
    node = body(f"window(e=+90m, atom({BUNDLE}, w=1h))")
    assert isinstance(node, Window)
    assert node.start is None
    assert node.end == Relative(5400.0)


def test_window_arguments_may_follow_the_expression() -> None:
    assert body(f"window(atom({BUNDLE}, w=1h), e=+2h, s=+1h)") == body(f"window(s=+1h, e=+2h, atom({BUNDLE}, w=1h))")


def test_windows_nest() -> None:
    node = body(f"window(e=+6h, window(s=+1h, e=+2h, atom({BUNDLE}, w=1h)))")
    assert isinstance(node, Window) and isinstance(node.child, Window)
    assert node.child.start == Relative(3600.0)


# -- order, all, any ------------------------------------------------------------------------


def test_order_without_gap() -> None:
    node = body(f"order(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=2h))")
    assert isinstance(node, Order)
    assert node.gap is None
    assert [child.work for child in node.children] == [3600.0, 7200.0]  # type: ignore[union-attr]


def test_order_with_gap() -> None:
    node = body(f"order(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=2h), gap=30m)")
    assert isinstance(node, Order)
    assert node.gap == 1800.0
    assert len(node.children) == 2


def test_order_with_gap_zero_means_no_gap() -> None:
    node = body(f"order(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=1h), gap=0s)")
    assert isinstance(node, Order)
    assert node.gap == 0.0


def test_gap_may_come_first() -> None:
    assert body(f"order(gap=5m, atom({BUNDLE}, w=1h))") == body(f"order(atom({BUNDLE}, w=1h), gap=5m)")


def test_all_keeps_children_in_order() -> None:
    node = body(f"all(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=2h), atom({BUNDLE}, w=3h))")
    assert isinstance(node, All)
    assert [child.work for child in node.children] == [3600.0, 7200.0, 10800.0]  # type: ignore[union-attr]


def test_any_holds_alternatives() -> None:
    node = body(f"any(atom({BUNDLE}, g=4, h=4, w=4h), atom({BUNDLE}, w=4h))")
    assert isinstance(node, Any)
    assert [child.gang for child in node.children] == [4, 1]  # type: ignore[union-attr]


def test_combinators_nest_in_any_shape() -> None:
    node = body(f"order(all(atom({BUNDLE}, w=1h), any(atom({BUNDLE}, w=1h), order(atom({BUNDLE}, w=1h)))),"
                f" window(e=+1d, atom({BUNDLE}, w=1h)))")
    assert [rdl.tree.kind(n) for _, n in rdl.tree.walk(node)] == [
        "order", "all", "atom", "any", "atom", "order", "atom", "window", "atom"]


# -- names ----------------------------------------------------------------------------------


def test_children_may_be_named() -> None:
    node = body(f"steps: order(first: atom({BUNDLE}, w=1h), atom({BUNDLE}, w=1h), last: window(e=+1d,"
                f" inner: atom({BUNDLE}, w=1h)))")
    assert isinstance(node, Order)
    assert node.name == "steps"
    assert [child.name for child in node.children] == ["first", None, "last"]
    assert node.children[2].children[0].name == "inner"


def test_unnamed_atoms_are_labelled_by_path() -> None:
    node = body(f"order(a: atom({BUNDLE}, w=1h), all(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=1h)))")
    assert [label for label, _ in rdl.tree.atoms(node)] == ["a", "0.1.0", "0.1.1"]


@pytest.mark.parametrize("name", ["x", "_x", "load-2", "stage.one", "A_1", "atom", "order", "reservation", "e"])
def test_names_may_use_letters_digits_dot_dash_and_keywords(name: str) -> None:
    assert body(f"{name}: atom({BUNDLE}, w=1h)").name == name


def test_names_do_not_take_part_in_spans_but_spans_point_at_the_name() -> None:
    reservation = one(f"reservation r {{\n  all(\n    load: atom({BUNDLE}, w=1h)\n  )\n}}")
    child = reservation.body.children[0]
    assert child.span == Span("ok.rdl", 3, 5)
    assert reservation.body.span == Span("ok.rdl", 2, 3)
    assert reservation.span == Span("ok.rdl", 1, 1)


# -- comments and layout ----------------------------------------------------------------------


def test_comments_run_to_the_end_of_the_line() -> None:
    text = f"""# leading comment
reservation r   # after the name
  user=alice    # after an attribute
{{              # after the brace
  order(        # inside
    atom({BUNDLE}, w=1h),  # after a child
    # a whole line
    atom(b={{memory: 1GiB, # inside a vector
            vcores: 1}}, w=1h)
  )
}}  # after the end
# trailing comment"""
    reservation = one(text)
    assert reservation.user == "alice"
    assert reservation.body == body(f"order(atom({BUNDLE}, w=1h), atom({BUNDLE}, w=1h))")


def test_hash_inside_a_quoted_string_is_not_a_comment() -> None:
    assert one(f'reservation r user="a#b" {{ atom({BUNDLE}, w=1h) }}').user == "a#b"


def test_whitespace_and_line_breaks_do_not_matter() -> None:
    dense = one(f"reservation r user=alice{{order(atom({BUNDLE},w=1h),atom({BUNDLE},w=1h),gap=0s)}}")
    airy = one(f"reservation r\n\tuser = alice\n{{\n order (\n atom ( {BUNDLE} , w = 1h ) ,\r\n"
               f" atom({BUNDLE}, w=1h),\n gap = 0s )\n}}\n")
    assert dense == airy


def test_empty_file_and_comment_only_file_hold_no_reservations() -> None:
    assert rdl.parse_text("") == []
    assert rdl.parse_text("# nothing here\n\n   # still nothing\n") == []


# -- times ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-23T06:00:00Z", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T06:00Z", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T07:00:00+01:00", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T07:00+01:00", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T00:30-05:30", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T06:00:00+0000", datetime(2026, 11, 23, 6, tzinfo=UTC)),
    ("2026-11-23T06:00:00.25Z", datetime(2026, 11, 23, 6, 0, 0, 250000, tzinfo=UTC)),
    ("2026-11-24T00:30:00+01:00", datetime(2026, 11, 23, 23, 30, tzinfo=UTC)),
])
def test_absolute_times_with_a_zone_are_kept_in_utc(text: str, expected: datetime) -> None:
    arrival = one(f"reservation r arrival={text} {{ atom({BUNDLE}, w=1h) }}").arrival
    assert isinstance(arrival, rdl.Absolute)
    assert arrival.instant == expected
    assert arrival.instant.utcoffset() == timedelta(0)


@pytest.mark.parametrize(("text", "seconds"), [
    ("+6h", 21600.0), ("+90m", 5400.0), ("+1.5h", 5400.0), ("+30s", 30.0), ("+2d", 172800.0),
    ("+1w", 604800.0), ("+0s", 0.0), ("+0.5m", 30.0),
])
def test_relative_times_count_from_arrival(text: str, seconds: float) -> None:
    reservation = one(f"reservation r deadline={text} {{ atom({BUNDLE}, w=1h) }}")
    assert reservation.deadline == Relative(seconds)
    submitted = datetime(2026, 11, 23, tzinfo=UTC)
    assert reservation.deadline.resolve(submitted) == submitted + timedelta(seconds=seconds)


def test_relative_and_absolute_times_mix_in_one_window() -> None:
    node = body(f"window(s=+1h, e=2026-11-23T06:00:00Z, atom({BUNDLE}, w=1h))")
    assert isinstance(node, Window)
    assert isinstance(node.start, Relative) and isinstance(node.end, rdl.Absolute)


# -- durations -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [
    ("45s", 45), ("90m", 5400), ("1h", 3600), ("2d", 172800), ("1w", 604800),
    ("1.5h", 5400), ("0.5d", 43200), ("2.5m", 150), ("0.25w", 151200), ("1.5s", 1.5), ("100h", 360000),
    ("1e3s", 1000),
])
def test_durations_take_every_unit_and_decimals(text: str, seconds: float) -> None:
    node = atom(f"l={text}, w={text}")
    assert node.work == node.lease == seconds


def test_equal_durations_in_different_units_are_equal() -> None:
    assert atom("l=90m, w=1.5h") == atom("l=5400s, w=90m")


def test_gap_and_every_are_durations_too() -> None:
    reservation = one(f"reservation r every=1.5d {{ order(atom({BUNDLE}, w=1h), gap=2.5h) }}")
    assert reservation.every == 129600.0
    assert reservation.body.gap == 9000.0  # type: ignore[union-attr]


# -- resource vectors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "mib"), [
    ("1024KiB", 1.0), ("512MiB", 512.0), ("2GiB", 2048.0), ("1TiB", 1048576.0),
    ("1024KB", 1.0), ("512MB", 512.0), ("2GB", 2048.0), ("1TB", 1048576.0),
    ("1536", 1536.0), ("1.5GiB", 1536.0), ("0.5TiB", 524288.0), ("1KiB", 1 / 1024), ("0", 0.0),
])
def test_memory_units_are_binary_and_bare_memory_is_mib(text: str, mib: float) -> None:
    assert atom_bundle(f"{{memory: {text}, vcores: 1}}")["memory"] == mib


@pytest.mark.parametrize(("decimal", "binary"), [("KB", "KiB"), ("MB", "MiB"), ("GB", "GiB"), ("TB", "TiB")])
def test_decimal_memory_units_mean_the_binary_ones_as_in_yarn(decimal: str, binary: str) -> None:
    assert atom_bundle(f"{{memory: 3{decimal}}}") == atom_bundle(f"{{memory: 3{binary}}}")


def test_other_resources_are_counts() -> None:
    bundle = atom_bundle("{vcores: 4, gpu: 0.5, fpga: 2}")
    assert dict(bundle) == {"fpga": 2.0, "gpu": 0.5, "vcores": 4.0}


def test_resource_vectors_are_sorted_so_order_does_not_matter() -> None:
    assert atom_bundle("{vcores: 1, memory: 2GiB}") == atom_bundle("{memory: 2GiB, vcores: 1}")
    assert list(atom_bundle("{vcores: 1, memory: 2GiB, gpu: 1}")) == ["gpu", "memory", "vcores"]


def atom_bundle(vector: str) -> Resources:
    node = body(f"atom(b={vector}, w=1h)")
    assert isinstance(node, Atom)
    return node.bundle


# -- reservations and headers ------------------------------------------------------------------------


def test_every_header_attribute() -> None:
    reservation = one(
        "reservation etl user=alice queue=prod arrival=2026-11-23T07:00+01:00 deadline=+6h value=10 "
        f"priority=5 every=1d {{ atom({BUNDLE}, w=1h) }}"
    )
    assert reservation.name == "etl"
    assert reservation.user == "alice"
    assert reservation.queue == "prod"
    assert reservation.arrival == rdl.Absolute(datetime(2026, 11, 23, 6, tzinfo=UTC))
    assert reservation.deadline == Relative(21600.0)
    assert reservation.value == 10.0
    assert reservation.priority == 5
    assert reservation.every == 86400.0


def test_header_defaults() -> None:
    reservation = one(f"reservation r {{ atom({BUNDLE}, w=1h) }}")
    assert (reservation.user, reservation.queue, reservation.arrival, reservation.deadline) == (None,) * 4
    assert (reservation.value, reservation.priority, reservation.every) == (1.0, 0, None)


def test_header_attributes_may_come_in_any_order() -> None:
    a = one(f"reservation r value=2.5 priority=-3 user=u queue=q {{ atom({BUNDLE}, w=1h) }}")
    b = one(f"reservation r queue=q user=u priority=-3 value=2.5 {{ atom({BUNDLE}, w=1h) }}")
    assert a == b
    assert (a.value, a.priority) == (2.5, -3)


def test_absolute_deadline_and_arrival() -> None:
    reservation = one("reservation r arrival=2026-11-23T00:00:00Z deadline=2026-11-23T06:00:00Z "
                      f"{{ atom({BUNDLE}, w=1h) }}")
    assert reservation.deadline == rdl.Absolute(datetime(2026, 11, 23, 6, tzinfo=UTC))


def test_deadline_is_sugar_for_a_window_from_arrival() -> None:
    reservation = one(f"reservation r deadline=+6h {{ atom({BUNDLE}, w=1h) }}")
    assert reservation.expr == Window(reservation.body, end=Relative(21600.0), start=Relative(0.0))
    assert one(f"reservation r {{ atom({BUNDLE}, w=1h) }}").expr == atom("w=1h")


def test_relative_arrival_counts_from_submission() -> None:
    reservation = one(f"reservation r arrival=+1h {{ atom({BUNDLE}, w=1h) }}")
    submitted = datetime(2026, 11, 23, tzinfo=UTC)
    assert reservation.arrival_at(submitted) == submitted + timedelta(hours=1)
    assert one(f"reservation r {{ atom({BUNDLE}, w=1h) }}").arrival_at(submitted) == submitted


def test_several_reservations_per_file_in_order() -> None:
    text = "\n".join(f"reservation r{i} priority={i} {{ atom({BUNDLE}, w={i + 1}h) }}" for i in range(5))
    reservations = rdl.parse_text(text, "many.rdl")
    assert [r.name for r in reservations] == ["r0", "r1", "r2", "r3", "r4"]
    assert [r.priority for r in reservations] == [0, 1, 2, 3, 4]
    assert [r.span.line for r in reservations] == [1, 2, 3, 4, 5]
    assert all(r.span.file == "many.rdl" for r in reservations)


@pytest.mark.parametrize(("quoted", "value"), [
    ('"alice"', "alice"),
    ('"Ana María"', "Ana María"),
    ('"team: data (prod)"', "team: data (prod)"),
    (r'"say \"hi\""', 'say "hi"'),
    (r'"back\\slash"', "back\\slash"),
    (r'"two\nlines"', "two\nlines"),
    ('"123"', "123"),
    ('""', ""),
    ('"José Ñúñez 数据"', "José Ñúñez 数据"),
])
def test_quoted_strings_for_user_and_queue(quoted: str, value: str) -> None:
    reservation = one(f"reservation r user={quoted} queue={quoted} {{ atom({BUNDLE}, w=1h) }}")
    assert reservation.user == reservation.queue == value


def test_user_and_queue_may_be_bare_names() -> None:
    reservation = one(f"reservation r user=svc-etl.prod queue=root.batch {{ atom({BUNDLE}, w=1h) }}")
    assert (reservation.user, reservation.queue) == ("svc-etl.prod", "root.batch")


def test_the_spec_example_parses() -> None:
    text = """
# comments run to the end of the line
reservation etl_nightly user=alice queue=prod deadline=+6h value=10 {
  order(
    extract: atom(b={memory: 2GiB, vcores: 1}, h=100, l=5m, w=50h),
    load:    atom(b={memory: 8GiB, vcores: 4}, g=10, h=10, l=1h, w=10h)
  )
}
"""
    reservation = one(text)
    extract, load = reservation.body.children
    assert extract == Atom(Resources.of({"memory": 2048, "vcores": 1}), work=180000.0, parallelism=100,
                           lease=300.0, name="extract")
    assert load == Atom(Resources.of({"memory": 8192, "vcores": 4}), work=36000.0, gang=10, parallelism=10,
                        lease=3600.0, name="load")


def test_spans_are_not_part_of_equality() -> None:
    assert one(f"reservation r {{ atom({BUNDLE}, w=1h) }}") == one(f"\n\n  reservation r {{\n atom({BUNDLE}, w=1h) }}")
