"""The input-keyed cache (gsqlc.input_cache): `gsqlc run` of a query set
built before skips parsing, planning and code generation, with the same
output; a changed query, schema, library query or option is compiled
again; a damaged entry or library is rebuilt, not trusted; an error in a
query is still reported where it is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gsqlc.resources import cache_root
from gsqlc.runtime.plan_summary import CsvField, LftaSummary, PlanSummary, ProtocolSummary

DATA = Path(__file__).resolve().parent / "data"
SALES = DATA / "sales.csv"
SCHEMA_TEXT = (DATA / "schema.txt").read_text()
QUERY = "DEFINE { query_name 'big'; }\nselect time, store, qty from SALES where qty > 2\n"
BIG_ROWS = ["10|north|3", "130|south|9", "30|north|7", "65|north|4"]

# modules a cached run's start-up has no use for (issue 13: dataclasses
# imports inspect, ~13 ms; the others are the compiler's)
START_UP_FREE = ("dataclasses", "inspect", "lark", "jinja2", "gsqlc.semantics", "gsqlc.backend.codegen",
                 "gsqlc.backend.build")
# Runs the CLI in a fresh process and says on its last stderr line whether
# it compiled (loaded the parser) or ran from the cache, then which of
# START_UP_FREE it loaded.
_RUN = ("import sys\n"
        "from gsqlc.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stdout.flush()\n"
        "print('compiled' if 'gsqlc.frontend.parser' in sys.modules else 'cached',"
        f" *(m for m in {START_UP_FREE!r} if m in sys.modules), file=sys.stderr)\n"
        "sys.exit(rc)\n")


class Run:
    def __init__(self, p: subprocess.CompletedProcess):
        self.returncode = p.returncode
        self.out = p.stdout
        *err, last = p.stderr.splitlines() or ["?"]
        self.how, *self.loaded = last.split()
        self.err = "\n".join(err)

    @property
    def rows(self) -> list[str]:
        return sorted(self.out.splitlines())


def run(*args, env=None) -> Run:
    e = dict(os.environ, **(env or {}))
    return Run(subprocess.run([sys.executable, "-c", _RUN, "run", *map(str, args)],
                              capture_output=True, text=True, timeout=600, env=e))


def entries() -> set[Path]:
    return set((cache_root() / "inputs").glob("*.json"))


@pytest.fixture
def qset(tmp_path):
    """A query file and a schema file of its own (so that its entry is new)."""
    (tmp_path / "schema.txt").write_text(SCHEMA_TEXT + f"// {tmp_path.name}\n")
    q = tmp_path / "q.gsql"
    q.write_text(QUERY)
    return q, tmp_path / "schema.txt"


def args_of(q: Path, schema: Path, *extra) -> list:
    return [q, "--schema", schema, "--source", f"csv:{SALES}", *extra]


def test_a_cached_run_skips_compiling_and_gives_the_same_output(qset):
    q, schema = qset
    before = entries()
    first = run(*args_of(q, schema))
    assert first.returncode == 0, first.err
    assert (first.how, first.rows) == ("compiled", BIG_ROWS)
    new = entries() - before
    assert len(new) == 1
    again = run(*args_of(q, schema))
    assert again.returncode == 0, again.err
    assert (again.how, again.out, again.err) == ("cached", first.out, first.err)
    assert again.loaded == [], f"a cached run imported {again.loaded}"
    # the run-time checks work from the cached plan summary too
    bad = run(*args_of(q, schema, "--output", "nope"))
    assert bad.how == "cached" and bad.returncode == 2
    assert "output nope: no query of that name (queries: big)" in bad.err


@pytest.mark.parametrize("change", ["query", "schema", "option", "werror"])
def test_a_changed_input_is_compiled_again(qset, change):
    q, schema = qset
    assert run(*args_of(q, schema)).how == "compiled"
    assert run(*args_of(q, schema)).how == "cached"
    extra: list = []
    env = None
    want = BIG_ROWS
    if change == "query":
        q.write_text(QUERY.replace("qty > 2", "qty > 5"))
        want = ["130|south|9", "30|north|7"]
    elif change == "schema":
        schema.write_text(schema.read_text() + "// changed\n")
    elif change == "option":
        extra = ["--max-hfta-disorder", "2"]
    else:
        env = {"GSQLC_WERROR": "0"}
    p = run(*args_of(q, schema, *extra), env=env)
    assert p.returncode == 0, p.err
    assert (p.how, p.rows) == ("compiled", want)
    assert run(*args_of(q, schema, *extra), env=env).how == "cached"


def test_a_changed_library_query_is_compiled_again(tmp_path):
    lib = tmp_path / "lib" / "mylib"
    lib.mkdir(parents=True)
    (lib / "online.gsql").write_text((DATA / "lib" / "mylib" / "online.gsql").read_text())
    q = tmp_path / "q.gsql"
    q.write_text((DATA / "online_per_minute.gsql").read_text())
    (tmp_path / "schema.txt").write_text(SCHEMA_TEXT + f"// {tmp_path.name}\n")
    args = args_of(q, tmp_path / "schema.txt", "-L", tmp_path / "lib")
    assert (run(*args).how, run(*args).how) == ("compiled", "cached")
    # a new file in a library folder looked in may change what FROM mylib/online reads
    (lib / "other.gsql").write_text("DEFINE { query_name 'other'; }\nselect time from SALES\n")
    p = run(*args)
    assert (p.how, p.rows) == ("compiled", ["0|10", "1|4", "2|9"])
    assert run(*args).how == "cached"
    (lib / "online.gsql").write_text((lib / "online.gsql").read_text().replace("TRUE", "FALSE"))
    p = run(*args)
    assert p.returncode == 0, p.err
    assert (p.how, p.rows) == ("compiled", ["0|1", "1|2"])


def test_a_damaged_entry_is_rebuilt_not_trusted(qset):
    q, schema = qset
    before = entries()
    first = run(*args_of(q, schema))
    (entry,) = entries() - before
    text = entry.read_text()
    body = json.loads(text.partition("\n")[2])
    # one that still parses but says something else (another query set's
    # outputs), one cut short, one that is no JSON
    forged = text.replace('"big"', '"forged"')
    for damaged in (forged, text[: len(text) // 2], "not an entry\n"):
        entry.write_text(damaged)
        p = run(*args_of(q, schema))
        assert p.returncode == 0, p.err
        assert (p.how, p.out) == ("compiled", first.out)
        assert entry.read_text() == text       # written again
    assert run(*args_of(q, schema)).how == "cached"
    assert body["summary"]["queries"] == [["big", []]]


def test_a_damaged_library_is_rebuilt_not_trusted(qset):
    q, schema = qset
    before = entries()
    first = run(*args_of(q, schema))
    assert first.returncode == 0, first.err
    (entry,) = entries() - before
    build = json.loads(entry.read_text().partition("\n")[2])["build"]
    lib = cache_root() / build / "build" / "libgsqlc_queryset.so"
    lib.write_bytes(lib.read_bytes()[:4096])   # truncated: no loadable library
    p = run(*args_of(q, schema))
    assert p.returncode == 0, p.err
    assert (p.how, p.out) == ("compiled", first.out)
    assert run(*args_of(q, schema)).how == "cached"


def test_errors_stay_located_and_are_never_cached(qset):
    q, schema = qset
    assert run(*args_of(q, schema)).returncode == 0
    q.write_text("DEFINE { query_name 'big'; }\nselect time, stor, qty from SALES\n")
    before = entries()
    for _ in range(2):
        p = run(*args_of(q, schema))
        assert p.returncode == 2
        assert f"{q}:2:14: error [unknown-field]" in p.err, p.err
    assert entries() == before


def test_concurrent_first_runs_share_one_build_and_entry(qset):
    q, schema = qset
    before = entries()
    procs = [subprocess.Popen([sys.executable, "-c", _RUN, "run", *map(str, args_of(q, schema))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert all(sorted(out.splitlines()) == BIG_ROWS for out, _ in outs)
    assert len(entries() - before) == 1
    assert run(*args_of(q, schema)).how == "cached"


def test_plan_summary_round_trips_and_refuses_damage():
    s = PlanSummary(
        queries=(("a", ("p",)), ("b", ())), leaves=("b",),
        lftas=(LftaSummary("a", "a", "eth0", True,
                           ProtocolSummary("SALES", "csv", (CsvField("qty", 4, "uint", True),))),))
    d = json.loads(json.dumps(s.to_json()))
    assert PlanSummary.from_json(d) == s
    for broken in ({**d, "leaves": [1]}, {**d, "lftas": [{"name": "a"}]}, {}, [],
                   {**d, "queries": [["a", "p"]]}, {**d, "lftas": "a"}):
        with pytest.raises((ValueError, TypeError, KeyError)):
            PlanSummary.from_json(broken)


def test_the_ffi_module_is_written_once_and_again_when_damaged(tmp_path, monkeypatch):
    from gsqlc.runtime.abi_ffi import abi_ffi
    from gsqlc.runtime.c_interface import abi_cdef
    ABI_CDEF = abi_cdef()
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path / "cache"))
    abi_ffi(ABI_CDEF)
    (module,) = (tmp_path / "cache" / "ffi").glob("*.py")
    text = module.read_text()
    module.write_text(text.replace("_types = b'", "_types = b'\\x00", 1))   # damaged
    ffi = abi_ffi(ABI_CDEF)
    assert module.read_text() == text
    assert ffi.sizeof("struct ArrowSchema") == 72
    # a cache that cannot be written costs the parse only
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path / "file" / "cache"))
    assert abi_ffi(ABI_CDEF).sizeof("struct ArrowArrayStream") == 40
