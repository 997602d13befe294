import gsqlc

qs = gsqlc.compile(["examples/src_counts.gsql"])         # parse, plan, generate C/C++, build (cached)
table = qs.table({"eth0": "pcap:examples/trace.pcap"})  # run it: a pyarrow.Table
for row in table.to_pylist():
    print(row)
