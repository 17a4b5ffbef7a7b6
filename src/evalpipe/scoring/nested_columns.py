"""Nested columns (lists of records, such as the outputs' ``perturbations``) kept in Arrow through
the score stage.

Read into pandas, a list of records becomes a Python list of dicts per row, and writing the scored
view infers its Arrow type back from those objects: at millions of rows that round trip costs more
than every other column together. :func:`carried` gives the column as the round trip would have
typed it (what the scored view's bytes hold: integers as int64, text as string, a field without
any value as null), straight from the Arrow data.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def has_records(data_type: pa.DataType) -> bool:
    """Whether a column's type holds records (a struct, at any depth of lists).

    >>> has_records(pa.list_(pa.struct([("op", pa.string())]))), has_records(pa.list_(pa.string()))
    (True, False)
    """
    if pa.types.is_struct(data_type):
        return True
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return has_records(data_type.value_type)
    return False


def inferred_type(array: pa.Array) -> pa.DataType:
    """The type ``pyarrow.array`` infers from ``array.to_pylist()``'s Python objects.

    Raises
    ------
    NotImplementedError
        For a type whose inference this does not reproduce (the caller converts through pandas).
    """
    data_type = array.type
    if array.null_count == len(array):
        return pa.null()
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return pa.list_(inferred_type(array.flatten()))
    if pa.types.is_struct(data_type):
        children = array.flatten()  # the struct's own nulls applied to its fields
        return pa.struct(
            [pa.field(data_type.field(i).name, inferred_type(c)) for i, c in enumerate(children)]
        )
    if pa.types.is_integer(data_type):
        return pa.int64()
    if pa.types.is_floating(data_type):
        return pa.float64()
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return pa.string()
    if pa.types.is_boolean(data_type):
        return pa.bool_()
    raise NotImplementedError(f"no inference rule for {data_type}")


def _as_type(array: pa.Array, data_type: pa.DataType) -> pa.Array:
    if pa.types.is_null(data_type):
        return pa.nulls(len(array))
    mask = array.is_null() if array.null_count else None
    if pa.types.is_list(data_type):
        offsets = array.offsets  # of the array's own slice
        values = array.values.slice(offsets[0].as_py(), offsets[-1].as_py() - offsets[0].as_py())
        rebased = pc.subtract(offsets, offsets[0]).cast(pa.int32())
        return pa.ListArray.from_arrays(
            rebased, _as_type(values, data_type.value_type), type=data_type, mask=mask
        )
    if pa.types.is_struct(data_type):
        children = [
            _as_type(array.field(i), data_type.field(i).type) for i in range(array.type.num_fields)
        ]
        return pa.StructArray.from_arrays(children, fields=list(data_type), mask=mask)
    return array.cast(data_type)


def carried(column: pa.ChunkedArray) -> pa.Array:
    """``column`` typed as the pandas round trip would type it (:func:`inferred_type`)."""
    array = column.combine_chunks()
    return _as_type(array, inferred_type(array))


Records = dict[str, tuple[int, pa.Array]]


def split_records(schema: pa.Schema, table: pa.Table) -> Records:
    """The record columns of ``table`` (read with :func:`record_columns` of ``schema``), each with
    its position in ``schema`` and typed by :func:`carried`."""
    return {
        name: (schema.get_field_index(name), carried(table.column(name)))
        for name in table.column_names
    }


def record_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` that hold records and whose round-trip type :func:`carried` can
    give without converting (the others go through pandas as usual)."""
    return [f.name for f in schema if has_records(f.type) and _supported(f.type)]


def _supported(data_type: pa.DataType) -> bool:
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return _supported(data_type.value_type)
    if pa.types.is_struct(data_type):
        return all(_supported(f.type) for f in data_type)
    return any(
        check(data_type)
        for check in (
            pa.types.is_integer, pa.types.is_floating, pa.types.is_string,
            pa.types.is_large_string, pa.types.is_boolean, pa.types.is_null,
        )
    )  # fmt: skip


def with_records(table: pa.Table, records: Records) -> pa.Table:
    """``table`` (a scored view converted from pandas) with the record columns put back at their
    positions: the columns of the view the pandas round trip would have given."""
    for name, (position, array) in sorted(records.items(), key=lambda kv: kv[1][0]):
        table = table.add_column(position, name, array)
    return table
