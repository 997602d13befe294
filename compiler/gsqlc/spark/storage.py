"""Input files on any filesystem pyarrow supports: local paths and file:,
s3:// (s3a://, s3n://), gs://, hdfs:// URIs, or a pyarrow FileSystem given
with paths in it.

Parquet data is planned without reading its footers: files are listed with
their sizes and cut into *pieces* (path, k, n) -- the k-th of n contiguous
runs of a file's row groups, decided by whoever reads the piece once it has
opened the file -- so the planner (Spark's driver) opens at most one file,
for the schema, and each reader (a Spark task) only the files of its pieces.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence, Union
from urllib.parse import unquote, urlparse

from ..errors import UsageError
from ..record import record

# URI schemes pyarrow knows under another name (Hadoop's S3 connectors)
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
# schemes whose URI names a bucket in its host part
_BUCKET_SCHEMES = {"s3", "s3a", "s3n", "gs", "gcs"}

Piece = tuple[str, int, int]   # (path, k, n): the k-th of n runs of its row groups


def resolve(location: Union[str, "os.PathLike[str]"], filesystem: Any = None) -> tuple[Any, str]:
    """(pyarrow FileSystem, path in it) of a local path or a URI.  With
    `filesystem` given, a URI only names the path in it."""
    import pyarrow.fs as pafs
    loc = os.fspath(location)
    u = urlparse(loc) if "://" in loc or loc.startswith("file:") else None
    if filesystem is not None:
        if u is None:
            return filesystem, loc
        if u.scheme in _BUCKET_SCHEMES:
            return filesystem, f"{u.netloc}{unquote(u.path)}".rstrip("/")
        return filesystem, unquote(u.path)
    if u is None or u.scheme == "file":
        return pafs.LocalFileSystem(), os.path.abspath(unquote(u.path) if u else loc)
    scheme = _SCHEME_ALIASES.get(u.scheme, u.scheme)
    uri = scheme + loc[len(u.scheme):]
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        return fs, str(path)
    except (ValueError, OSError) as e:   # ArrowInvalid is a ValueError
        raise UsageError(f"{loc}: pyarrow cannot open this location: {e}") from None


def s3_from_hadoop(conf: Mapping[str, str]) -> Optional[Any]:
    """A pyarrow S3FileSystem set as Hadoop's S3A connector is (conf: its
    fs.s3a.* keys, a mapping), or None when conf sets none of endpoint,
    credentials or path style (pyarrow's own defaults -- AWS, credentials
    from the environment -- then hold)."""
    import pyarrow.fs as pafs
    endpoint = conf.get("fs.s3a.endpoint")
    key, secret = conf.get("fs.s3a.access.key"), conf.get("fs.s3a.secret.key")
    if not (endpoint or key or secret):
        return None
    kw: dict[str, Any] = {}
    if key and secret:
        kw.update(access_key=key, secret_key=secret)
        if conf.get("fs.s3a.session.token"):
            kw["session_token"] = conf.get("fs.s3a.session.token")
    if endpoint:
        u = urlparse(endpoint if "://" in endpoint else "//" + endpoint)
        ssl = str(conf.get("fs.s3a.connection.ssl.enabled", "true")).lower() != "false"
        kw["scheme"] = u.scheme or ("https" if ssl else "http")
        kw["endpoint_override"] = u.netloc
    if conf.get("fs.s3a.endpoint.region"):
        kw["region"] = conf.get("fs.s3a.endpoint.region")
    if str(conf.get("fs.s3a.path.style.access", "")).lower() == "true":
        kw["force_virtual_addressing"] = False
    return pafs.S3FileSystem(**kw)


def _hidden(name: str) -> bool:
    """Files Spark's readers skip too: _SUCCESS, _metadata, .crc, ..."""
    return name.startswith(("_", "."))


def _file_infos(filesystem: Any, paths: Sequence[str], missing_ok: bool) -> list[Any]:
    """The pyarrow FileInfo of every file the paths name (list_files)."""
    import pyarrow.fs as pafs
    out: list[Any] = []
    for p in paths:
        info = filesystem.get_file_info(p)
        if info.type == pafs.FileType.File:
            out.append(info)
        elif info.type == pafs.FileType.Directory:
            base = p.rstrip("/")
            found = filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
            out += sorted((f for f in found if f.type == pafs.FileType.File
                           and not any(_hidden(part) for part in
                                       f.path[len(base):].strip("/").split("/"))),
                          key=lambda f: f.path)
        elif not missing_ok:
            raise FileNotFoundError(p)
    return out


def list_files(filesystem: Any, paths: Sequence[str],
               missing_ok: bool = False) -> list[tuple[str, int]]:
    """(path, size) of every file the paths name: a file itself, a
    directory's files at any depth (hidden ones and those under hidden
    directories skipped), in path order within a directory."""
    return [(f.path, f.size or 0) for f in _file_infos(filesystem, paths, missing_ok)]


def list_in_arrival_order(filesystem: Any, paths: Sequence[str]) -> list[tuple[str, int]]:
    """list_files in order of modification time, then path (the order a
    directory's files arrived in, as Spark's file streams take them)."""
    infos = _file_infos(filesystem, paths, missing_ok=True)
    infos.sort(key=lambda f: (f.mtime_ns or 0, f.path))
    return [(f.path, f.size or 0) for f in infos]


def plan_pieces(files: Sequence[tuple[str, int]], target: int) -> list[list[Piece]]:
    """The files cut into about `target` units of about equal bytes, each a
    list of pieces: with at least `target` files, runs of whole files in
    order; with fewer, each file split by its share of the bytes (a piece
    may come out empty when a file has fewer row groups than pieces)."""
    target = max(1, target)
    if not files:
        return []
    total = sum(s for _, s in files) or len(files)
    if len(files) >= target:
        units: list[list[Piece]] = [[]]
        done, per = 0, total / target
        for path, size in files:
            if units[-1] and done >= per * len(units):
                units.append([])
            units[-1].append((path, 0, 1))
            done += size or 1
        return units
    units = []
    for path, size in files:
        n = max(1, round(target * (size or 1) / total))
        units += [[(path, k, n)] for k in range(n)]
    return units


def open_input(filesystem: Any, path: str) -> Any:
    """A file opened for random access (every read of a Parquet file or
    capture goes through here)."""
    return filesystem.open_input_file(path)


def parquet_schema(filesystem: Any, path: str, columns: Optional[Sequence[str]] = None) -> Any:
    """The Arrow schema of a Parquet file (its footer only), or of `columns` of it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    with open_input(filesystem, path) as f:
        schema = pq.ParquetFile(f).schema_arrow
    if columns is None:
        return schema
    return pa.schema([schema.field(c) for c in columns])


def _located(e: Exception, groups: Sequence[int], path: str) -> Exception:
    """A computed read's failure (e.g. a checked overflow) saying where."""
    import pyarrow as pa
    located: Exception = pa.ArrowInvalid(f"{e} in row groups {groups[0]}-{groups[-1]} of {path}")
    return located


def piece_row_groups(k: int, n: int, row_groups: int) -> range:
    """The row groups of piece (path, k, n) of a file of `row_groups`."""
    return range(k * row_groups // n, (k + 1) * row_groups // n)


class RowGroupReader:
    """One task's reads of Parquet files a row group at a time (epoch-owning
    reads, owned_epochs.py).  Footers are read once per file and kept; only
    the file being read is open (a task may look at thousands of footers).
    Rows come as read_pieces gives them: `columns` of the files, or with
    `expressions` computed and `filter` applied (a catalyst.ComputedScan's).
    statistics() gives a row group's footer statistics of a file column."""

    def __init__(self, filesystem: Any, columns: Sequence[str], *,
                 expressions: Optional[Sequence[tuple[str, Any]]] = None, filter: Any = None,
                 batch_rows: int = 65536) -> None:
        self.filesystem = filesystem
        self.columns = list(columns)
        self.expressions = dict(expressions) if expressions is not None else None
        self.filter = filter
        self.batch_rows = batch_rows
        self._footers: dict[str, Any] = {}   # path -> (FileMetaData, its flat column names)
        self._open: Any = None               # (path, open file, ParquetFile) being read
        self._fragment: Any = None           # (path, dataset fragment): computed reads

    def _footer(self, path: str) -> Any:
        if path not in self._footers:
            import pyarrow.parquet as pq
            with open_input(self.filesystem, path) as f:
                meta = pq.ParquetFile(f).metadata
            names = meta.schema.to_arrow_schema().names
            self._footers[path] = (meta, names if len(names) == meta.num_columns else None)
        return self._footers[path]

    def groups(self, piece: Piece) -> list[tuple[str, int]]:
        """The (path, row group) of a piece, in order."""
        path, k, n = piece
        return [(path, g) for g in piece_row_groups(k, n, self._footer(path)[0].num_row_groups)]

    def read(self, path: str, group: int, columns: Optional[Sequence[str]] = None) -> Iterator[Any]:
        """The row group's record batches (columns: a subset of the output
        columns, default all)."""
        import pyarrow as pa
        cols = list(columns) if columns is not None else self.columns
        if self.expressions is None:
            if self._open is None or self._open[0] != path:
                import pyarrow.parquet as pq
                self.close()
                f = open_input(self.filesystem, path)
                self._open = (path, f, pq.ParquetFile(f, metadata=self._footer(path)[0]))
            yield from self._open[2].iter_batches(batch_size=self.batch_rows, columns=cols,
                                                  row_groups=[group])
            return
        if self._fragment is None or self._fragment[0] != path:
            import pyarrow.dataset as ds
            self._fragment = (path, ds.ParquetFileFormat().make_fragment(
                path, filesystem=self.filesystem))
        fragment = self._fragment[1].subset(row_group_ids=[group])
        try:
            yield from fragment.to_batches(columns={c: self.expressions[c] for c in cols},
                                           filter=self.filter, batch_size=self.batch_rows,
                                           use_threads=False)
        except pa.ArrowInvalid as e:
            raise _located(e, [group], path) from None

    def rows(self, path: str, group: int) -> int:
        """The row group's row count (its footer's)."""
        return int(self._footer(path)[0].row_group(group).num_rows)

    def statistics(self, path: str, group: int, column: str) -> Optional[Any]:
        """The footer statistics (pyarrow's Statistics) of file column
        `column` in the row group, or None when the file has none for it."""
        meta, names = self._footer(path)
        if names is None or column not in names:   # nested columns: no flat index
            return None
        st = meta.row_group(group).column(names.index(column)).statistics
        return st if st is not None and st.has_null_count else None

    def close(self) -> None:
        """Close the file being read (footers stay)."""
        if self._open is not None:
            self._open[1].close()
            self._open = None
        self._fragment = None


def read_pieces(filesystem: Any, pieces: Sequence[Piece], columns: Optional[Sequence[str]] = None,
                batch_rows: int = 65536, *, expressions: Optional[Sequence[tuple[str, Any]]] = None,
                filter: Any = None, schema: Any = None) -> Any:
    """One RecordBatchReader over the pieces, in order (columns: all of the
    first file's when None).  With `expressions` ((name, pyarrow expression
    over the file's columns) per output column), the columns are computed
    while reading and only rows where `filter` is true are kept (row groups
    its statistics rule out are not read); `schema`, their computed_schema
    when the caller has it (else worked out from the first file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if expressions is not None:
        return _computed_pieces(filesystem, pieces, expressions, filter, batch_rows, schema)
    schema = parquet_schema(filesystem, pieces[0][0], columns)
    cols = list(columns) if columns is not None else schema.names

    def batches() -> Iterator[Any]:
        for path, k, n in pieces:
            with open_input(filesystem, path) as f:
                pf = pq.ParquetFile(f)
                groups = list(piece_row_groups(k, n, pf.num_row_groups))
                if groups:
                    yield from pf.iter_batches(batch_size=batch_rows, columns=cols,
                                               row_groups=groups)
    return pa.RecordBatchReader.from_batches(schema, batches())


def computed_schema(file_schema: Any, expressions: Sequence[tuple[str, Any]],
                    filter: Any = None) -> Optional[Any]:
    """The Arrow schema of `expressions` over a file of `file_schema`, or
    None when pyarrow cannot bind them to it."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    try:
        return ds.dataset(file_schema.empty_table()).to_table(
            columns=dict(expressions), filter=filter).schema
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return None


def _computed_pieces(filesystem: Any, pieces: Sequence[Piece], expressions: Sequence[tuple[str, Any]],
                     filter: Any, batch_rows: int, schema: Any) -> Any:
    import pyarrow as pa
    import pyarrow.dataset as ds
    fmt = ds.ParquetFileFormat()
    projection = dict(expressions)
    if schema is None:
        schema = computed_schema(parquet_schema(filesystem, pieces[0][0]), expressions, filter)

    def batches() -> Iterator[Any]:
        for path, k, n in pieces:
            whole = fmt.make_fragment(path, filesystem=filesystem)
            groups = list(piece_row_groups(k, n, whole.num_row_groups))
            if not groups:
                continue
            try:
                # one thread: batches in file order (the LFTA's time order)
                yield from whole.subset(row_group_ids=groups).to_batches(
                    columns=projection, filter=filter, batch_size=batch_rows, use_threads=False)
            except pa.ArrowInvalid as e:
                raise _located(e, groups, path) from None
    return pa.RecordBatchReader.from_batches(schema, batches())


@contextmanager
def local_path(filesystem: Any, path: str) -> Iterator[str]:
    """A local path of the file (a reader that needs one, e.g. the capture
    decoder): the file itself on a local filesystem, else a copy in the
    temp dir, removed when the block ends."""
    import pyarrow.fs as pafs
    if isinstance(filesystem, pafs.LocalFileSystem):
        yield path
        return
    fd, local = tempfile.mkstemp(prefix="gsqlc-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as out, filesystem.open_input_stream(path) as src:
            while True:
                chunk = src.read(1 << 22)
                if not chunk:
                    break
                out.write(chunk)
        yield local
    finally:
        os.unlink(local)


# ------------------------------------------------------------ CSV

# the most bytes of a CSV file one piece holds in memory while it is parsed
CSV_PIECE_BYTES = 64 << 20
# what a value of each Arrow type must look like in a CSV field (anything
# else makes its row malformed: counted and skipped); an empty field is null
_CSV_VALUE_PATTERNS = {
    "int": r"^\s*[+-]?[0-9]+\s*$",
    "float": r"^\s*([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(?i:nan|inf|infinity))\s*$",
    "bool": r"^\s*(?i:true|false|1|0)\s*$",
}


def split_csv_pieces(units: list[list[Piece]], sizes: Mapping[str, int]) -> list[list[Piece]]:
    """plan_pieces' units with each piece cut again so that none holds more
    than CSV_PIECE_BYTES of its file (a CSV piece is a byte range)."""
    out = []
    for unit in units:
        pieces: list[Piece] = []
        for path, k, n in unit:
            m = max(1, -(-sizes[path] // (n * CSV_PIECE_BYTES)))
            pieces += [(path, k * m + j, n * m) for j in range(m)]
        out.append(pieces)
    return out


@record(frozen=True)
class CsvColumn:
    """A PROTOCOL field read from CSV files by read_csv's GSQL form: its
    name, Arrow type, 1-based CSV position (its accessor's), and its
    time_format and unit (nanoseconds) when its text is a time."""
    name: str
    type: Any
    pos: int
    time_format: Optional[str] = None
    unit_ns: int = 1_000_000_000

    @property
    def is_text(self) -> bool:
        """Whether every text is a value of it (a string column)."""
        import pyarrow as pa
        return self.time_format is None and (pa.types.is_string(self.type)
                                             or pa.types.is_large_string(self.type))


def _line_start_at_or_after(f: Any, pos: int, size: int) -> int:
    """The offset of the first line that starts at or after pos (size: none)."""
    if pos <= 0:
        return 0
    at = pos - 1          # a line starts at pos when the byte before it ends one
    while at < size:
        chunk = f.read_at(min(1 << 16, size - at), at)
        i = chunk.find(b"\n")
        if i >= 0:
            return int(at + i + 1)
        at += len(chunk)
    return size


def csv_piece_bytes(f: Any, size: int, k: int, n: int) -> tuple[int, bytes]:
    """The lines of piece k of n of a file -- those starting in its k-th
    byte range (no line break may be inside a quoted field:
    refuse_quoted_line_breaks) -- and the offset of the first."""
    first = _line_start_at_or_after(f, k * size // n, size)
    end = _line_start_at_or_after(f, (k + 1) * size // n, size)
    return first, bytes(f.read_at(end - first, first)) if end > first else b""


def refuse_quoted_line_breaks(data: bytes, sep: str, path: str, offset: int) -> None:
    """A UsageError when a quoted field of the lines `data` (at byte
    `offset` of `path`) holds a line break, or is still open at their end:
    files are cut into pieces at line breaks, which such a field would
    split."""
    if b'"' not in data:
        return
    import re
    quoted = re.compile(rb'(?:^|(?<=' + re.escape(sep.encode()) + rb'))"(?:[^"]|"")*("?)', re.M)
    for m in quoted.finditer(data):
        if b"\n" in m.group(0) or not m.group(1):
            raise UsageError(
                f"read_csv: {path}: the quoted field at byte {offset + m.start()} holds a line "
                "break; Spark's CSV readers cut files into pieces at line breaks and cannot "
                "read it (gsqlc's own CSV source, csv:PATH, reads such files)")


def csv_header_cells(f: Any, size: int, sep: str) -> list[str]:
    """The cells of a file's first line (its header), unquoted."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    end = _line_start_at_or_after(f, 1, size)
    line = bytes(f.read_at(end, 0)) if end else b""
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    if not line.strip():
        return []
    t = pacsv.read_csv(pa.BufferReader(line), read_options=pacsv.ReadOptions(
        autogenerate_column_names=True, use_threads=False),
        parse_options=pacsv.ParseOptions(delimiter=sep),
        convert_options=pacsv.ConvertOptions(strings_can_be_null=False,
                                              column_types={f"f{i}": pa.string()
                                                            for i in range(line.count(
                                                                sep.encode()) + 1)}))
    return [str(t.column(i)[0]) for i in range(t.num_columns)]


def header_positions(fields: Sequence[CsvColumn], cells: Sequence[str],
                     where: str) -> dict[str, int]:
    """Each field's 0-based column in a header of `cells`: the cell that is
    its name, exactly, else ignoring case (blanks around a cell ignored); a
    UsageError naming a field that no cell names, or a name two cells give."""
    names = [c.strip(" \t") for c in cells]
    out = {}
    for f in fields:
        exact = [i for i, c in enumerate(names) if c == f.name]
        found = exact or [i for i, c in enumerate(names) if c.lower() == f.name.lower()]
        if len(exact) > 1:
            raise UsageError(f"read_csv: {where}: the header names column '{f.name}' twice; "
                             f"its columns: {', '.join(names)}")
        if not found:
            raise UsageError(f"read_csv: {where}: the header has no column '{f.name}' (field "
                             f"{f.name}); its columns: {', '.join(names)}")
        out[f.name] = found[0]
    return out


class MalformedCount:
    """Rows a CSV read skipped: their count and the first reasons, and
    notes of what else it skipped (a header line)."""

    def __init__(self) -> None:
        self.rows = 0
        self.reasons: list[str] = []
        self.notes: list[str] = []

    def add(self, rows: int, reason: str) -> None:
        self.rows += rows
        if len(self.reasons) < 5:
            self.reasons.append(reason)

    def note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 5:
            self.notes.append(text)

    def merge(self, other: "MalformedCount") -> None:
        self.rows += other.rows
        self.reasons = (self.reasons + other.reasons)[:5]
        self.notes = (self.notes + [n for n in other.notes if n not in self.notes])[:5]

    def report(self) -> str:
        """What was skipped, a line each: the malformed rows, then the
        notes ("" when nothing)."""
        lines = [f"{self.rows} CSV row(s) rejected as malformed: " + "; ".join(self.reasons)
                 ] if self.rows else []
        return "\n".join(lines + self.notes)


def _csv_table(data: bytes, names: Sequence[str], types: Sequence[Any], sep: str,
               skip_header: bool, where: str, bad: MalformedCount,
               columns: Sequence[str]) -> Any:
    """One piece's bytes (fields `names` of Arrow `types`) parsed into a
    table of `columns`: a row with another number of fields, or a value one
    of `columns` cannot take, is counted in `bad` and skipped; an empty
    field is null."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    short = MalformedCount()    # rows with another number of fields, this parse's

    def skip_row(row: Any) -> str:
        short.add(1, f"{where}: {row.text.strip()[:80]!r} has {row.actual_columns} fields, "
                     f"not {row.expected_columns}")
        return "skip"
    read = pacsv.ReadOptions(column_names=list(names), skip_rows=1 if skip_header else 0,
                             use_threads=False, block_size=16 << 20)
    parse = pacsv.ParseOptions(delimiter=sep, invalid_row_handler=skip_row)
    asked = set(columns)
    wanted = [(c, t) for c, t in zip(names, types) if c in asked]

    def parse_as(column_types: Mapping[str, Any]) -> Any:
        nonlocal short
        short = MalformedCount()    # a parse that raised counted nothing
        t = pacsv.read_csv(pa.BufferReader(data), read_options=read, parse_options=parse,
                           convert_options=pacsv.ConvertOptions(
                               column_types=column_types, include_columns=list(columns),
                               null_values=[""], strings_can_be_null=True))
        bad.merge(short)
        return t
    try:
        return parse_as(dict(wanted))
    except pa.ArrowInvalid:
        pass    # some value does not convert: find its rows
    as_text = parse_as({c: pa.string() for c, _ in wanted})
    ok = pa.repeat(True, as_text.num_rows)
    for name, t in wanted:
        ok = pc.and_(ok, _fits(as_text.column(name), t))
    n_bad = as_text.num_rows - pc.sum(ok).as_py() if as_text.num_rows else 0
    if n_bad:
        bad.add(n_bad, f"{where}: {n_bad} row(s) with a value their column's type cannot take")
    kept = as_text.filter(ok)
    cols = [_typed(kept.column(name), t) for name, t in wanted]
    return pa.table(cols, names=[c for c, _ in wanted]).select(list(columns))


def _fits(col: Any, t: Any) -> Any:
    """Whether each text of a column of strings is a value of Arrow type t
    (or null: an empty field), as a boolean array without nulls."""
    import pyarrow as pa
    import pyarrow.compute as pc
    kind = ("int" if pa.types.is_integer(t) else "float" if pa.types.is_floating(t)
            else "bool" if pa.types.is_boolean(t) else None)
    if kind is None:
        return pa.repeat(True, len(col))
    fits = pc.or_kleene(pc.is_null(col), pc.match_substring_regex(col, _CSV_VALUE_PATTERNS[kind]))
    if kind == "int":
        # digits out of the type's range are no value of it either (by
        # their float value: the last few near 2^63 count as out)
        import numpy as np
        info = np.iinfo(t.to_pandas_dtype())
        num = pc.cast(pc.utf8_trim_whitespace(
            pc.coalesce(pc.if_else(fits, col, "0"), "0")), pa.float64())
        inside = pc.and_(pc.greater_equal(num, float(info.min) * (1 - 1e-15)),
                         pc.less_equal(num, float(info.max) * (1 - 1e-15)))
        fits = pc.and_kleene(fits, inside)
    return pc.fill_null(fits, False)


def _typed(col: Any, t: Any) -> Any:
    """A column of strings that _fits type t, as t."""
    import pyarrow as pa
    import pyarrow.compute as pc
    return col if pa.types.is_string(t) else pc.utf8_trim_whitespace(col).cast(t)


def _fields_table(data: bytes, fields: Sequence[CsvColumn], at: Mapping[str, int], sep: str,
                  skip_header: bool, detect_header: bool, where: str, bad: MalformedCount,
                  columns: Sequence[str]) -> Any:
    """One piece's bytes parsed into a table of `columns`, fields of
    read_csv's GSQL form read from the 0-based file columns `at` (other
    columns skipped; one a row lacks is null); a row with another number
    of fields than the piece's first, or a value its field cannot take
    (a time that is not one of its time_format), is counted in `bad` and
    skipped.  detect_header: the piece starts a file read without a header,
    whose first line is skipped (and noted) when it is the fields' names."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    short = MalformedCount()

    def skip_row(row: Any) -> str:
        short.add(1, f"{where}: {row.text.strip()[:80]!r} has {row.actual_columns} fields, "
                     f"not {row.expected_columns}")
        return "skip"
    by_name = {f.name: f for f in fields}
    wanted = [by_name[c] for c in columns]
    include = sorted({f"f{at[f.name]}" for f in wanted})
    t = pacsv.read_csv(
        pa.BufferReader(data),
        read_options=pacsv.ReadOptions(autogenerate_column_names=True, use_threads=False,
                                       skip_rows=1 if skip_header else 0, block_size=16 << 20),
        parse_options=pacsv.ParseOptions(delimiter=sep, invalid_row_handler=skip_row),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in include},
                                             include_columns=include,
                                             include_missing_columns=True, null_values=[""],
                                             strings_can_be_null=True))
    bad.merge(short)
    text = {f.name: t.column(f"f{at[f.name]}").cast(pa.string()) for f in wanted}
    if detect_header and t.num_rows and _is_header_row(fields, wanted, text):
        bad.note(f"{where.split(' (piece')[0]}:1: the first line names the fields "
                 f"({', '.join(f.name for f in wanted)}) and was skipped as a header; "
                 "read_csv(..., header=True) finds each field's column by its name")
        text = {name: col.slice(1) for name, col in text.items()}
    n = len(next(iter(text.values()))) if text else t.num_rows
    ok = pa.repeat(True, n)
    values = {}
    for f in wanted:
        if f.time_format is not None:
            values[f.name], fits = _time_values(text[f.name], f)
        else:
            fits = _fits(text[f.name], f.type)
        ok = pc.and_(ok, fits)
    n_bad = n - pc.sum(ok).as_py() if n else 0
    if n_bad:
        bad.add(n_bad, f"{where}: {n_bad} row(s) with a value their column's type cannot take")
    cols = [values[f.name].filter(ok) if f.name in values else _typed(text[f.name].filter(ok),
                                                                       f.type)
            for f in wanted]
    return pa.table(cols, names=[f.name for f in wanted])


def _time_values(col: Any, f: CsvColumn) -> tuple[Any, Any]:
    """A column of time texts as field f's values (nulls kept: an empty
    field), and which are valid or null."""
    import pyarrow.compute as pc

    from .csv_times import time_values
    assert f.time_format is not None
    values, ok = time_values(pc.fill_null(col, ""), f.time_format, f.unit_ns, f.type)
    null = pc.is_null(col)
    return pc.if_else(null, None, values), pc.or_(ok, null)


def _is_header_row(fields: Sequence[CsvColumn], wanted: Sequence[CsvColumn],
                   text: Mapping[str, Any]) -> bool:
    """Whether the first row of columns `text` is a header: each column
    read holds the name of a field (ignoring case), and no value of a
    column other than text is valid (as the runtime's CSV reader decides)."""
    names = {f.name.lower() for f in fields}
    for f in wanted:
        cell = text[f.name][0].as_py()
        if cell is None or cell.strip(" \t").lower() not in names:
            return False
        if f.is_text:
            continue
        one = text[f.name].slice(0, 1)
        valid = _time_values(one, f)[1] if f.time_format else _fits(one, f.type)
        if valid[0].as_py():
            return False
    return True


def read_csv_pieces(filesystem: Any, pieces: Sequence[Piece], names: Sequence[str],
                    types: Sequence[Any], sep: str = ",", header: bool = False,
                    bad: Optional[MalformedCount] = None,
                    columns: Optional[Sequence[str]] = None,
                    fields: Optional[Sequence[CsvColumn]] = None) -> Any:
    """One RecordBatchReader over the CSV pieces (byte ranges of lines), in
    order: files of fields `names` of Arrow `types`, read as `columns` (all
    by default; the others are only counted); malformed rows skipped and
    counted in `bad`.  With `fields` (read_csv's GSQL form, one per name)
    each name is read from its field's position, or with a header from the
    column its name names, and times are read in their time_format."""
    import pyarrow as pa
    columns = list(names) if columns is None else list(columns)
    type_of = dict(zip(names, types))
    schema = pa.schema([(c, type_of[c]) for c in columns])
    counter = bad if bad is not None else MalformedCount()
    headers: dict[str, dict[str, int]] = {}    # path -> its fields' columns

    def positions(f: Any, path: str, size: int) -> dict[str, int]:
        assert fields is not None
        if not header:
            return {c.name: c.pos - 1 for c in fields}
        if path not in headers:
            headers[path] = header_positions(fields, csv_header_cells(f, size, sep), path)
        return headers[path]

    def batches() -> Iterator[Any]:
        for path, k, n in pieces:
            with open_input(filesystem, path) as f:
                size = f.size()
                first, data = csv_piece_bytes(f, size, k, n)
                at = positions(f, path, size) if fields is not None and data else {}
            if not data:
                continue
            refuse_quoted_line_breaks(data, sep, path, first)
            where = f"{path} (piece {k + 1} of {n})"
            if fields is None:
                t = _csv_table(data, names, types, sep, header and k == 0, where, counter,
                               columns)
            else:
                t = _fields_table(data, fields, at, sep, header and first == 0,
                                  not header and first == 0, where, counter, columns)
            yield from t.cast(schema).to_batches(max_chunksize=65536)
    return pa.RecordBatchReader.from_batches(schema, batches())
