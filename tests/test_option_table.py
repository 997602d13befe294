"""The run options' one table (runtime_c/run/option_table.h) and what derives
from it: the Python validation (gsqlc.runtime.option_table, used by
bindings.run_options), the options reference (docs/hooks/gsqlc_reference.py)
and the C runtime's gsqlc_set_option.  Fails when they drift apart: an entry
Python does not know, a run_options keyword or flag with no entry, an entry
missing from the reference, or a value one side takes and the other refuses."""
import importlib.util
import inspect
from pathlib import Path

import pytest

import gsqlc
from gsqlc.cli import make_parser
from gsqlc.errors import SettingError, SetupError
from gsqlc.runtime import option_table as ot
from gsqlc.runtime import runner
from gsqlc.runtime.bindings import run_options

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"BOOL", "WORDS", "UINT", "SECONDS", "REAL", "CHAR", "TEXT", "FORM"}

# values tried on every option (and each option's own words)
SAMPLES = ["", "0", "1", "-1", "2", "+3", " 1", "0x10", "0.5", "-0", "1e-3", "1e-7", "1e10", "1e9",
           "1.5", "-0.5", "abc", "1s", "inf", "nan", "true", "TRUE", "yes", "4294967295",
           "4294967296", "18446744073709551615", "18446744073709551616", "1048576", "1048577",
           "1000000", "1000001", "off", "auto", "AUTO", "tab", "\\t", "\t", '"', "\n", ",", ";",
           "ab", "fixed:5", "fixed:", "fixed:x", "fixed:4294967296", "fixed:SECONDS", "ms", "min",
           "/tmp/trace.jsonl"]


def _reference():
    spec = importlib.util.spec_from_file_location("gsqlc_reference",
                                                  ROOT / "docs" / "hooks" / "gsqlc_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_entry_is_known_to_python():
    opts = ot.options()
    assert len(opts) == len(ot.parse_table(ot.table_path().read_text())) >= 29
    for o in opts.values():
        assert o.kind in KINDS, o
        # each setter has its Python rule, or is one of the forms only the runtime checks
        assert (o.setter in ot.RULES) != (o.setter in ot.FORMS), o.setter
        assert o.expects and o.doc, o
        if o.words:
            assert o.kind == "WORDS"
            assert o.expects == (", ".join(o.words[:-1]) + " or " + o.words[-1]), o
        if o.low is not None:
            assert o.kind in ("UINT", "SECONDS", "REAL") and o.low <= o.high, o
    # no per-interface prefix starts another name: one entry matches a key
    for o in opts.values():
        if ":" in o.name:
            assert [p.name for p in opts.values() if p.name.startswith(o.prefix)] == [o.name]
    assert ot.find("max_skew:eth0").name == "max_skew:NAME"
    assert ot.find("skew:a:b").name == "skew:FROM:TO"
    assert ot.find("clock:x") is None and ot.find("max_skew") is None


def test_run_options_keywords_and_flags_are_table_entries():
    keywords = set(inspect.signature(run_options).parameters)
    assert keywords <= set(ot.FACES) <= set(ot.options())
    run = next(a for a in make_parser()._subparsers._group_actions[0].choices.items()
               if a[0] == "run")[1]
    flags = {s for a in run._actions for s in a.option_strings}
    for name, face in ot.FACES.items():
        assert face.flag in flags, (name, face.flag)
        assert ot.INVALID in face.messages


def test_reference_lists_every_entry():
    html = _reference().render_run_options()
    for o in ot.options().values():
        assert f"<code>{o.name}</code>" in html, o.name
    assert "<!-- gsqlc:run-options -->" in (ROOT / "docs" / "cli.md").read_text()


def test_python_refusals_keep_their_words():
    cases = [({"heartbeat_interval": "0"},
              "the heartbeat interval must be positive seconds or off, got 0",
              "--heartbeat-interval must be positive seconds or off, got 0"),
             ({"clock": "x"}, "clock x: expected auto, wall, data or fixed:SECONDS",
              "--clock x: expected auto, wall, data or fixed:SECONDS"),
             ({"batch": 0}, "the read batch must be an integer from 1 to 1048576 records, got 0",
              "--batch must be an integer from 1 to 1048576 records, got 0"),
             ({"csv_separator": "ab"}, "the CSV separator must be one character, got 'ab'",
              "--csv-separator must be one character, got 'ab'"),
             ({"columnar": "on"}, "columnar must be auto or off, got 'on'",
              "--columnar must be auto or off, got 'on'"),
             ({"stall_intervals": 0}, "the stall intervals must be an integer of at least 1, got 0",
              "--stall-intervals must be an integer of at least 1, got 0"),
             ({"stall_intervals": 2000000},
              "the stall intervals must be an integer from 1 to 1000000, got 2000000",
              "--stall-intervals must be an integer from 1 to 1000000, got 2000000"),
             ({"max_groups": True}, "max_groups must be a positive integer, got True",
              "--max-groups must be a positive integer, got True"),
             ({"pcap_reader": "x"}, "the pcap reader must be mmap or libpcap, got x",
              "--pcap-reader must be mmap or libpcap, got x")]
    for kw, message, in_flags in cases:
        with pytest.raises(SettingError) as e:
            run_options(**kw)
        assert (str(e.value), e.value.in_flags()) == (message, in_flags)
    assert run_options() == {"csv_separator": ",", "heartbeat_interval": "1",
                             "stall_intervals": "3"}
    # run_options passes its defaults on unchecked: each is one the table takes
    for name, default in run_options.__kwdefaults__.items():
        if default not in (None, False):
            assert ot.check(name, default) == str(default)
    assert run_options(clock="fixed:5", batch=10, columnar="auto", trace="t", csv_strict=True) == {
        "csv_separator": ",", "heartbeat_interval": "1", "stall_intervals": "3",
        "clock": "fixed:5", "trace": "t", "csv_strict": "1", "batch": "10"}


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    d = tmp_path_factory.mktemp("options")
    (d / "s.txt").write_text("PROTOCOL S { uint t get_csv_uint_pos1 (increasing); }\n")
    (d / "q.gsql").write_text("DEFINE { query_name 'q'; }\nSELECT t FROM S\n")
    return gsqlc.compile([d / "q.gsql"], schema=d / "s.txt").library


def _c_accepts(lib, key: str, value: str):
    """None if gsqlc_set_option takes key=value, else its error."""
    r = lib.gsqlc_create()
    try:
        if lib.gsqlc_set_option(r, key.encode(), value.encode()) == 0:
            return None
        return runner._ffi.string(lib.gsqlc_error(r)).decode()
    finally:
        lib.gsqlc_destroy(r)


def test_c_and_python_take_the_same_values(library):
    lib = runner.load_library(library)
    compared = 0
    for o in ot.options().values():
        if o.setter in ot.FORMS:
            continue
        key = o.prefix + "a" if ":" in o.name else o.name
        for value in SAMPLES + list(o.words):
            python = ot.refusal(o, value)
            c = _c_accepts(lib, key, value)
            assert (python is None) == (c is None), (key, value, python, c)
            if c is not None and o.setter in ("set_bool", "set_words", "set_uint", "set_seconds",
                                              "set_real"):
                assert c == f"{key} must be {o.expects}, got '{value}'"
            compared += 1
    assert compared > 500


def test_run_options_takes_what_the_runtime_takes(library):
    """What run_options passes on the runtime takes; what it refuses, the
    runtime refuses too, but for its Python-only checks (a bool or text
    for an integer, a heartbeat interval of 0, a separator spelt 'tab')."""
    lib = runner.load_library(library)
    python_only = {("heartbeat_interval", "0"), ("heartbeat_interval", "-0"),
                   ("csv_separator", "tab"), ("csv_separator", "\\t")}
    for name in ("heartbeat_interval", "csv_separator", "clock", "columnar", "pcap_reader"):
        for value in SAMPLES:
            try:
                text = run_options(**{name: value})[name] if name in (
                    "heartbeat_interval", "csv_separator") else run_options(**{name: value}).get(
                    name, value)
            except SettingError:
                if (name, value) not in python_only:
                    assert _c_accepts(lib, name, value) is not None, (name, value)
            else:
                assert _c_accepts(lib, name, text) is None, (name, value)
    for name in ("batch", "stall_intervals", "max_groups"):
        for value in (0, 1, 2, 1000000, 1000001, 1048576, 1048577, 1 << 32, (1 << 64) - 1, 1 << 64):
            try:
                text = run_options(**{name: value})[name]
            except SettingError:
                assert _c_accepts(lib, name, str(value)) is not None, (name, value)
            else:
                assert _c_accepts(lib, name, text) is None, (name, value)
        with pytest.raises(SettingError):
            run_options(**{name: True})


def test_a_refusal_reaches_a_run_as_a_setup_error(library, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("1\n2\n")
    with pytest.raises(SetupError, match="option hb_window=0: hb_window must be an integer >= 1 "
                                         r"\(records\), got '0'"):
        runner.run_library(library, [("default", f"csv:{csv}")], [("q", "csv", None)],
                           {"hb_window": "0"})
    res = runner.run_library(library, [("default", f"csv:{csv}")],
                             [("q", "csv", str(tmp_path / "out.csv"))], {"hb_window": "10"})
    assert res.status == 0 and (tmp_path / "out.csv").read_text().split() == ["t", "1", "2"]
