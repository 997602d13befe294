"""A capture as an Arrow table, queried through PROTOCOL PACKETS
(docs/python.md shows this file and its output; tests/test_docs.py runs it)."""
import gsqlc

packets = gsqlc.read_pcap("examples/trace.pcap")      # one row per packet
print(packets.num_rows, "packets,", packets.num_columns, "columns")
print(packets.select(["time", "ipversion", "protocol", "len"]).slice(0, 2).to_pylist())

# the flow query over the table: PROTOCOL PACKETS matches read_pcap's columns
qs = gsqlc.compile(["examples/spark/flows_from_pcap.gsql"], schema=gsqlc.PACKET_TABLE_SCHEMA)
flows = qs.table({"default": packets})
print(flows.num_rows, "flows,", sum(flows.column("cnt").to_pylist()), "IPv4 packets")
