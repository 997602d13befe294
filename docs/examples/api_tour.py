"""The Python API on the bundled CSV example (docs/python.md shows this file
and its output; tests/test_docs.py runs it)."""
import pyarrow as pa

import gsqlc

# parse, plan, generate and build (cached by content: the second time is quick)
qs = gsqlc.compile(["examples/csv/per_minute.gsql"], schema="examples/csv/schema.txt")
print(qs.queries, qs.interfaces())
print(qs.output_schema("per_minute"))

# a run over a file: pyarrow.RecordBatches, as the query produces them
run = qs.run(sources={"default": "csv:examples/csv/sales.csv"})
for batch in run:
    print(batch.num_rows, "rows;", batch.column("sales").to_pylist())
print("tuples written:", run.stats["tuples_written"])

# the same query over Arrow data held in memory, gathered into one Table
sales = pa.table({
    "ts": pa.array([60, 61, 75, 130], pa.uint32()),
    "store": ["north", "north", "south", "north"],
    "item": ["tea", "jam", "tea", "tea"],
    "qty": pa.array([2, 1, 4, 3], pa.uint32()),
    "price": [1.5, 3.0, 1.5, 1.5],
    "client": ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3"],
})
table = qs.table({"default": sales})
for row in table.to_pylist():
    print(row)
