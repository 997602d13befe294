"""gsqlc in notebooks (issue 17, part 3): a compiled query set displays its
plan (SVG through Graphviz where it is installed, the explain text
otherwise); a run's results convert to pandas, Polars and DuckDB (Polars and
DuckDB over the same Arrow buffers) and stream through the Arrow PyCapsule
interface; the example notebook runs in a Jupyter kernel and shows them."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import gsqlc
from conftest import REPO, require

EX = REPO / "examples"
SOURCES = {"eth0": f"pcap:{EX / 'trace.pcap'}"}


@pytest.fixture(scope="module")
def qs():
    return gsqlc.compile([EX / "flows.gsql"], schema=EX / "packet_schema.txt")


@pytest.fixture(scope="module")
def flows(qs):
    return qs.table(SOURCES)


def test_plan_display_is_svg_with_graphviz(qs):
    if shutil.which("dot") is None:
        pytest.skip("no Graphviz (run.sh installs it)")
    bundle = qs._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "flows" in svg and "_fta_flows" in svg          # the HFTA and its LFTA
    assert qs.explain() in bundle["text/plain"]
    assert "text/html" not in bundle


def test_plan_display_without_graphviz_is_the_explain_text(qs, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))           # no dot on it
    assert qs.plan_svg() is None
    bundle = qs._repr_mimebundle_()
    assert "image/svg+xml" not in bundle
    html = bundle["text/html"]
    assert html.startswith("<pre>") and "[LFTA] _fta_flows" in html
    assert "&lt;" in html or "<" not in html[5:-6]      # escaped


def test_results_to_pandas_polars_duckdb(qs, flows):
    pl = pytest.importorskip("polars")
    duckdb = require("duckdb")
    assert flows.num_rows > 0 and flows.schema.field("srcIP").type == pa.string()
    df = qs.run(SOURCES).to_pandas()
    assert df.to_dict("list") == flows.to_pydict()
    assert df["srcIP"].iloc[0] == "127.0.0.1"
    p = qs.run(SOURCES).to_polars()
    assert isinstance(p, pl.DataFrame) and p.to_dict(as_series=False) == flows.to_pydict()
    rel = qs.run(SOURCES).to_duckdb()
    got = rel.aggregate("sum(cnt) AS n, count(*) AS groups").fetchall()
    assert got == [(sum(flows.column("cnt").to_pylist()), flows.num_rows)]
    con = duckdb.connect()
    rel = qs.run(SOURCES).to_duckdb(con)
    assert con.sql("SELECT count(*) FROM rel").fetchall() == [(flows.num_rows,)]


def test_polars_reads_the_arrow_buffers_in_place(qs):
    pl = pytest.importorskip("polars")
    run = qs.run(SOURCES)
    t = run.to_arrow()
    col = t.column("cnt").chunk(0)
    p = pl.from_arrow(t, rechunk=False)
    back = p.to_arrow().column("cnt").chunk(0)
    assert back.buffers()[1].address == col.buffers()[1].address


def test_a_run_is_an_arrow_stream(qs, flows):
    reader = pa.RecordBatchReader.from_stream(qs.run(SOURCES))
    assert reader.schema == qs.output_schema("flows")
    assert reader.read_all().equals(flows)
    pl = pytest.importorskip("polars")
    assert pl.DataFrame(qs.run(SOURCES)).shape == (flows.num_rows, flows.num_columns)
    duckdb = require("duckdb")
    run = qs.run(SOURCES)   # noqa: F841 - read by DuckDB's replacement scan
    assert duckdb.sql("SELECT count(*) FROM run").fetchall() == [(flows.num_rows,)]


def test_several_outputs_convert_one_at_a_time(tmp_path):
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'a'; }\nSELECT time, srcIP FROM IPV4;\n"
        "DEFINE { query_name 'b'; }\nSELECT time, destIP FROM IPV4;\n")
    qs = gsqlc.compile([tmp_path / "q.gsql"])
    with pytest.raises(gsqlc.UsageError, match="one output query"):
        qs.run(SOURCES, ["a", "b"]).to_pandas()
    assert qs.run(SOURCES, "b").to_arrow().column_names == ["time", "destIP"]


def test_example_notebook_runs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    path = EX / "notebooks" / "tour.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    cells = [c.outputs for c in nb.cells if c.cell_type == "code"]
    assert not any(o.get("output_type") == "error" for cell in cells for o in cell)
    # each cell's result (a progress bar may also have written to stderr)
    outs = [[o for o in cell if o.get("output_type") == "execute_result"] for cell in cells]
    plan = outs[0][0]["data"]
    assert ("image/svg+xml" in plan) == (shutil.which("dot") is not None)
    assert "127.0.0.1" in outs[1][0]["data"]["text/html"]        # pandas, addresses as text
    assert "shape: (3, 2)" in outs[2][0]["data"]["text/plain"]   # Polars
    assert "bytes" in outs[3][0]["data"]["text/html"]            # DuckDB
    assert outs[4][0]["data"]["text/plain"].isdigit()            # rows streamed
    assert "packets" in outs[5][0]["data"]["text/html"]          # gsqlc.sql over pandas


def test_progress_bar_is_a_widget_in_a_notebook(tmp_path):
    """run(progress=True) in a Jupyter kernel shows tqdm's notebook widget
    (ipywidgets), and no warning."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipywidgets")
    (tmp_path / "s.txt").write_text("PROTOCOL R { uint t get_csv_uint_pos1 (increasing); "
                                    "uint a get_csv_uint_pos2; }\n")
    (tmp_path / "q.gsql").write_text("DEFINE { query_name 'q'; }\nselect t, a from [csv].R\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import time, gsqlc, pyarrow as pa\n"
        "qs = gsqlc.compile(['q.gsql'], schema='s.txt')\n"
        "def feed():   # a live feed: a batch every 0.2 s\n"
        "    for i in range(6):\n"
        "        time.sleep(0.2)\n"
        "        yield pa.record_batch({'t': pa.array([i] * 10, pa.uint32()),\n"
        "                               'a': pa.array(range(10), pa.uint32())})\n"
        "qs.run({'csv': feed()}, progress=True).to_arrow().num_rows")]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outs = nb.cells[0].outputs
    assert [o["output_type"] for o in outs if o["output_type"] == "stream"] == [], outs
    widgets = [o for o in outs if o["output_type"] == "display_data"
               and "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert widgets, outs
    assert outs[-1]["output_type"] == "execute_result" and outs[-1]["data"]["text/plain"] == "60"
