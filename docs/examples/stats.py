"""Pick fields out of `gsqlc run --stats` for the documentation's examples.

    gsqlc run ... --stats 2>&1 >/dev/null | python docs/examples/stats.py SECTION FIELD...

Reads what gsqlc wrote on stderr: the report's lines (warnings, drops,
stalls) are printed as they are, then, from the statistics (the JSON object
after them), one line per entry of SECTION (sources, streams, nodes, sinks)
holding the FIELDs asked for (a dotted FIELD such as
time.dropped_below_heartbeat reaches into an object).  SECTION alone, for a
top-level value (tuples_written, heartbeat_ticks, ...), prints that value.
"""
import json
import sys


def _get(entry: dict, name: str):
    for part in name.split("."):
        entry = entry.get(part) if isinstance(entry, dict) else None
    return entry


def _text(value) -> str:
    """A value as the statistics' JSON writes it (objects and lists compact)."""
    if isinstance(value, (dict, list, bool)) or value is None:
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def main(argv: list[str]) -> int:
    text = sys.stdin.read()
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    report, stats = text[:start], json.loads(text[start:])
    sys.stdout.write(report)
    section, fields = argv[0], argv[1:]
    value = stats[section]
    if not fields:
        print(_text(value))
        return 0
    rows = [[_text(_get(entry, f)) for f in fields] for entry in value]
    widths = [max(len(r[i]) for r in [fields, *rows]) for i in range(len(fields))]
    for r in [fields, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
