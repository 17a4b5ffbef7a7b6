"""The column-wise typo facts of a flush are the per-row ``typo_facts`` of each row."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.perturb.attribution import NO_TYPOS, typo_facts, typo_facts_columns
from evalpipe.perturb.ops import Operation

_TEXT = st.one_of(st.none(), st.text(st.sampled_from("aZ9あア漢、😀 "), max_size=3))
_OPERATION = st.builds(
    Operation,
    st.sampled_from(["replace", "insert", "delete", "transpose", "conversion"]),
    st.integers(0, 3),
    _TEXT,
    _TEXT,
    st.just("x"),
)


@given(rows=st.lists(st.lists(_OPERATION, max_size=4), max_size=12))
@settings(max_examples=200, deadline=None)
def test_the_facts_of_a_flush_are_each_rows_typo_facts(rows):
    edits = list(itertools.chain.from_iterable(rows))
    for kinds, originals, news in (
        ([o.op for o in edits], [o.original_char for o in edits], [o.new_char for o in edits]),
        (  # as the builder hands them over: its struct's child arrays
            pa.array([o.op for o in edits], pa.string()),
            pa.array([o.original_char for o in edits], pa.string()),
            pa.array([o.new_char for o in edits], pa.string()),
        ),
    ):
        facts = typo_facts_columns(kinds, originals, news, [len(r) for r in rows])
        got = list(zip(*(facts[name].to_pylist() for name in NO_TYPOS._fields), strict=True))
        assert got == [tuple(typo_facts(r)) for r in rows]
        assert facts["n_typos"].type == facts["n_edited_chars"].type == pa.int32()
