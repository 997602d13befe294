"""Query text over data at hand: the schema comes from the data."""
import pyarrow as pa

import gsqlc

events = pa.table({
    "ts": [1_700_000_000, 1_700_000_030, 1_700_000_075, 1_700_000_090, 1_700_000_130],
    "user": ["ann", "bob", "ann", "ann", "bob"],
    "ms": [120.0, 80.5, 99.0, 101.0, 42.0],
})
per_minute = gsqlc.sql(
    "select tb, user, count(*) as n, avg(ms) as mean_ms from events group by ts/60 as tb, user",
    events=events, temporal={"ts": "increasing"})
for row in per_minute.to_pylist():
    print(row)
try:
    gsqlc.sql("select tb, usr from events group by ts/60 as tb, usr", events=events,
              temporal={"ts": "increasing"})
except gsqlc.QueryError as e:
    print(e)
