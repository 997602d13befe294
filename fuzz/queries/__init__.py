"""A grammar-aware fuzzer of gsqlc's query compiler (strategies, oracle, long run).

    python -m fuzz.queries.run --minutes 10

Every query set it makes must end in a compiled result or a located
QueryError (file, line, column, rule); anything else is a bug.
"""
