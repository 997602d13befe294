"""gsqlc: a code-generating stream query compiler for GSQL (Gigascope / Tigon SQL).

    import gsqlc
    qs = gsqlc.compile(["q.gsql"], schema="schema.txt")
    for batch in qs.run(sources={"csv": "csv:data.csv"}, output="per_src"):
        ...                                   # pyarrow.RecordBatch

Spark: gsqlc.spark.run_query.  Packets as Arrow: gsqlc.read_pcap.
"""
__version__ = "0.1.0"

from .api import CompiledQuerySet, Run, compile  # noqa: E402
from .diagnostics import GsqlError as QueryError  # noqa: E402
from .diagnostics import UsageError  # noqa: E402
from .packets import PACKET_TABLE_SCHEMA, read_pcap  # noqa: E402
from .runner import RunError  # noqa: E402

__all__ = ["compile", "CompiledQuerySet", "Run", "QueryError", "UsageError", "RunError",
           "read_pcap", "PACKET_TABLE_SCHEMA", "__version__"]
