"""gsqlc on a real Spark cluster (issue 14, part 5): a standalone master and
two workers started on loopback as separate processes (pyspark's own
spark-class), one single-core executor each; the main queries run there
equal to Spark SQL and the Python API, the library loading in separate
executor processes that fetched it through Spark's file distribution."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gsqlc
from conftest import REPO

pyspark = pytest.importorskip("pyspark")   # installed by ./run.sh (the test extra)

pytestmark = pytest.mark.slow  # a master, two workers and their executors
from gsqlc.spark import direct_scan, read_parquet, run_query  # noqa: E402
from test_spark import JOIN_Q, SCHEMA_TEXT, _remove_old_copy, packets, rows  # noqa: E402

EX = REPO / "examples" / "csv"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc, log, what: str, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}): {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {port} in {seconds} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """spark://127.0.0.1:PORT with two registered workers; stopped after."""
    d = tmp_path_factory.mktemp("cluster")
    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(d), "SPARK_WORKER_DIR": str(d / "work")}
    procs = []
    try:
        port = _free_port()
        log = d / "master.log"
        master = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(_free_port())],
            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        procs.append(master)
        _wait_listening(port, master, log, "the master")
        url = f"spark://127.0.0.1:{port}"
        workers = []
        for i in range(2):
            wport = _free_port()
            wlog = d / f"worker{i}.log"
            w = subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url,
                 "--host", "127.0.0.1", "--port", str(wport), "--webui-port", str(_free_port()),
                 "--cores", "1", "--memory", "1g", "--work-dir", str(d / f"work{i}")],
                env=env, stdout=wlog.open("w"), stderr=subprocess.STDOUT)
            procs.append(w)
            workers.append((wport, w, wlog))
        for wport, w, wlog in workers:
            _wait_listening(wport, w, wlog, "a worker")
        yield url, d
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def spark(cluster):
    url, d = cluster
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master(url).appName("gsqlc-cluster-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.executor.cores", "1")
         .config("spark.executor.memory", "512m")
         .config("spark.cores.max", "2")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    # both executors registered before any job (else one may run every task)
    end = time.monotonic() + 60
    while s.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3:   # + the driver
        if time.monotonic() > end:
            raise RuntimeError("the executors did not register in 60 s")
        time.sleep(0.2)
    yield s
    s.stop()


def _task_processes(spark, digest: str):
    """Per task: (its Python daemon's pid, the library of `digest` is in its
    SparkFiles directory, a copy is in its temp dir -- where gsqlc once wrote
    one that nothing removed)."""
    from gsqlc.spark.task import library_name as _library_name

    def probe(_):
        import tempfile

        from pyspark import SparkFiles
        root = SparkFiles.getRootDirectory()
        old = os.path.join(tempfile.gettempdir(), f"gsqlc-{os.getuid()}", f"{digest}.so")
        yield (os.getppid(), os.path.exists(os.path.join(root, _library_name(digest))),
               os.path.exists(old))
    return spark.sparkContext.parallelize(range(8), 8).mapPartitions(probe).collect()


def test_aggregation_join_and_parquet_on_a_standalone_cluster(spark, tmp_path):
    import hashlib

    from pyspark.sql import functions as F

    # an aggregation, against Spark SQL and the Python API
    sales = spark.read.csv(str(EX / "sales.csv"),
                           schema="ts long, store string, item string, qty long, "
                                  "price double, client string").repartition(3)
    q, sch = [str(EX / "per_minute.gsql")], str(EX / "schema.txt")
    digest = hashlib.sha256(gsqlc.compile(q, schema=sch).library.read_bytes()).hexdigest()[:24]
    _remove_old_copy(digest)
    got = run_query(spark, q, schema=sch, sources={"sales": sales})
    sql = sales.groupBy((F.floor(F.col("ts") / 60) * 60).alias("minute"), "store") \
               .agg(F.count(F.lit(1)).alias("sales"), F.sum("qty").alias("units"))
    cols = ["minute", "store", "sales", "units"]
    assert rows(got.select(*cols)) == rows(sql.select(*cols))
    want = rows(gsqlc.compile(q, schema=sch).table({"sales": f"csv:{EX / 'sales.csv'}"}))
    assert rows(got) == want and len(want) > 5
    # the library came to each executor process by Spark's file distribution
    seen = _task_processes(spark, digest)
    assert len({pid for pid, _, _ in seen}) == 2          # two executor processes
    assert all(shipped and not in_temp for _, shipped, in_temp in seen), seen

    # a full outer join of two aggregations over Parquet read by the tasks
    (tmp_path / "schema.txt").write_text(SCHEMA_TEXT)
    (tmp_path / "join.gsql").write_text(JOIN_Q)
    a, b = packets(40_000, 11), packets(30_000, 12)
    for name, t in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        for i in range(2):
            half = t.num_rows // 2
            pq.write_table(t.slice(i * half, half if i == 0 else t.num_rows - half),
                           tmp_path / name / f"part{i}.parquet", row_group_size=5_000)
    jq, jsch = [str(tmp_path / "join.gsql")], str(tmp_path / "schema.txt")
    da, db = read_parquet(spark, tmp_path / "a"), read_parquet(spark, tmp_path / "b")
    got = run_query(spark, jq, schema=jsch, sources={"eth0": da, "eth1": db}, output="j")
    want = rows(gsqlc.compile(jq, schema=jsch).table({"eth0": a, "eth1": b}, output="j"))
    assert rows(got) == want and len(want) > 500

    # a source Spark computes from a Parquet scan (a filter): computed by the tasks
    dc = spark.read.parquet(str(tmp_path / "a")).where((F.col("len") > 700) & (F.col("destIP") % 2 == 0))
    assert direct_scan(dc) is None       # % has no pyarrow entry: Spark's rows
    dc = spark.read.parquet(str(tmp_path / "a")).where(F.col("len") > 700)
    assert direct_scan(dc) is not None
    got = run_query(spark, jq, schema=jsch, sources={"eth0": dc, "eth1": db}, output="q1")
    kept = a.filter(pa.array(a["len"].to_numpy() > 700))
    want = rows(gsqlc.compile(jq, schema=jsch).table({"eth0": kept, "eth1": b}, output="q1"))
    assert rows(got) == want and len(want) > 100


def _executor_pids(app_id: str) -> list[int]:
    """The executor processes (JVMs) of the application app_id."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if (b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args
                and app_id.encode() in args):
            pids.append(int(d))
    return pids


def test_an_executor_killed_mid_job(spark, tmp_path):
    """An executor process killed while gsqlc's tasks run: Spark runs its
    tasks again elsewhere (and the stages whose output it held); the answer
    is the one a run without the fault gives, and the malformed rows are
    counted once, not once per attempt."""
    import signal
    import threading

    from gsqlc.spark import read_csv
    lines = [f"{60 * (i // 500)},s{i % 7},item{i % 13},{i % 5},1.5,c{i % 11}"
             for i in range(200_000)]
    for k in (1_000, 90_000, 150_000):
        lines[k] = "this,row,is,short"
    data = tmp_path / "sales.csv"
    data.write_text("\n".join(lines) + "\n")
    q, sch = [str(EX / "per_minute.gsql")], str(EX / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"sales": f"csv:{data}"}))

    src = read_csv(spark, data, "ts long, store string, item string, qty long, "
                                "price double, client string")

    def slow(batches):           # tasks long enough to be caught running
        import time as t
        for b in batches:
            t.sleep(0.4)
            yield b
    slowed = src.repartition(8).mapInArrow(slow, src.schema)
    result: dict = {}

    def job():
        try:
            result["rows"] = rows(run_query(spark, q, schema=sch, sources={"sales": slowed}))
        except BaseException as e:   # noqa: BLE001 - asserted below
            result["error"] = e
    app = spark.sparkContext.applicationId
    before = _executor_pids(app)
    assert len(before) == 2, before
    t = threading.Thread(target=job)
    t.start()
    time.sleep(4)                # the slow stage's tasks are running
    assert t.is_alive(), "the job ended before an executor could be killed"
    os.kill(before[0], signal.SIGKILL)
    t.join(300)
    assert not t.is_alive(), "the job did not end after an executor was killed"
    assert "error" not in result, result.get("error")
    assert result["rows"] == want and len(want) > 100
    assert src.gsqlc.rows_rejected == 3, src.gsqlc.report
    assert src.gsqlc.report.count("has 4 fields, not 6") >= 1
    # the worker started another executor in place of the killed one
    end = time.monotonic() + 60
    while len(_executor_pids(app)) < 2 and time.monotonic() < end:
        time.sleep(0.5)
    assert before[0] not in _executor_pids(app)
