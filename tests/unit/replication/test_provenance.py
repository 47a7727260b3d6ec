"""The provenance header and the loop rule."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mongocdc.replication.provenance import HEADER, Hop, HopEncoder, decode, encode, has_provenance, hops, origin_on

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
hop_values = st.builds(
    Hop,
    cluster=names,
    topic=names,
    partition=st.integers(0, 10_000),
    offset=st.integers(0, 2**62),
    ts=st.integers(0, 2**45),
)


@given(hop_values)
def test_encode_decode_round_trip(hop: Hop) -> None:
    raw = encode(hop)
    assert decode(raw) == hop
    assert decode(raw.decode()) == hop
    assert json.loads(raw) == {
        "cluster": hop.cluster,
        "topic": hop.topic,
        "partition": hop.partition,
        "offset": hop.offset,
        "ts": hop.ts,
    }


def test_encoder_renders_the_constant_part_once() -> None:
    encoder = HopEncoder("A", "orders", 2)
    assert decode(encoder(41, 7)) == Hop("A", "orders", 2, 41, 7)


def test_foreign_or_broken_header_values_are_not_hops() -> None:
    for raw in (
        None,
        b"",
        b"not json",
        b"[1,2]",
        b'{"cluster":"A"}',
        b'{"cluster":1,"topic":"t","partition":0,"offset":1}',
        b'{"cluster":"A","topic":"t","partition":true,"offset":1}',
        b"\xff",
    ):
        assert decode(raw) is None


def test_one_header_per_hop_oldest_first_other_headers_ignored() -> None:
    first, second = Hop("A", "orders", 0, 5, 1), Hop("B", "orders", 0, 9, 2)
    headers = [("trace", b"x"), (HEADER, encode(first)), (HEADER, b"junk"), (HEADER, encode(second))]
    assert hops(headers) == [first, second]
    assert has_provenance(headers)
    assert not has_provenance([("trace", b"x")])
    assert not has_provenance(None)


def test_loop_rule_stops_records_that_came_from_the_target_topic_on_the_target_cluster() -> None:
    from_a = [(HEADER, encode(Hop("A", "orders", 1, 5, 1)))]
    assert origin_on(from_a, "A", "orders") == Hop("A", "orders", 1, 5, 1)  # B → A: not copied back
    assert origin_on(from_a, "A", "orders.replica") is None  # another topic on A: copied
    assert origin_on(from_a, "C", "orders") is None  # B → C: copied (a chain keeps one header per hop)
    assert origin_on(None, "A", "orders") is None
    chain = [(HEADER, encode(Hop("A", "orders", 1, 5, 1))), (HEADER, encode(Hop("B", "orders", 1, 7, 2)))]
    assert origin_on(chain, "A", "orders") == Hop("A", "orders", 1, 5, 1)  # C → A: not copied back either
