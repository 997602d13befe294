// gsqlc._native -- the package's own extension: query-independent native
// code shared by the Python API: the libpcap in use, and read_pcap, which
// decodes a capture with the C runtime's packet decoder (pkt_decode.c) and
// field accessors (gsq_packet.h) into Arrow record batches (Arrow C data
// interface, runtime_c/include/arrow_abi.h).
//
// read_pcap(path, columns, batch_rows) -> dict
//   path     bytes (os.fsencode) of a pcap / pcapng file
//   columns  [(name, accessor, gsql_type)], e.g. ("srcIP", "get_ipv4_src", "IP");
//            the accessor names a packet accessor of kAccessors below and the
//            type must be the one the accessor gives.  gsqlc.runtime.packets passes
//            the fields of the packet schema (compiler/gsqlc/data/packet_schema.txt).
//   returns  {"schema": capsule "arrow_schema",
//             "batches": [(capsule "arrow_schema", capsule "arrow_array")],
//             "packets": int, "linktype": int, "decoded": bool,
//             "truncated": None | why the file ends inside a record or block
//                          (the packets before it are in the batches),
//             "undecoded_packets": int, "undecoded_linktype": int (pcapng
//                          interfaces of a link type not decoded; the first's),
//             "past_time_end": int (packets from 2106 on: `time` holds at
//                          UINT32_MAX)}
//
// ip_text(values, offset, length, width) -> (offsets, data)
//   values   a buffer of IP values: width 4, uint32 (10.0.0.1 is 0x0A000001),
//            or width 16, IPV6 bytes in network order; values [offset,
//            offset + length) are converted
//   returns  two bytes objects, the int32 offsets (length + 1) and the UTF-8
//            data of an Arrow utf8 array of their text forms (GSQL.md: dotted
//            quad, eight groups of four lower-case hex digits), written by
//            the runtime's own formatting (runtime_c/sinks/format.c), as its
//            text sinks write them
// The file is read by the runtime's memory-mapped reader (pcap_mmap.c)
// when it takes it, else by libpcap, as the pcap source reads it.
// A field whose accessor returns nonzero (header absent) is null.  Arrow
// types: uint/IP -> uint32, ullong -> uint64, bool -> bool,
// IPV6 -> fixed_size_binary(16), string -> binary.  A batch holds at most
// batch_rows rows, and less than 2 GiB of bytes in any binary column.
//
// Memory: every buffer is a 64-byte aligned Buffer (RAII); a finished batch
// moves its buffers into a BatchData shared by the exported ArrowArray and
// its children (each holds a shared_ptr in private_data), so the consumer may
// release the parent and moved children in any order.  The capsules'
// destructors release a structure pyarrow did not import.
#include <pcap/pcap.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrow_abi.h"
#include "format.h"
#include "gsq_packet.h"
#include "gsq_pkt_decode.h"
#include "pcap_mmap.h"

namespace py = pybind11;

namespace {

// Bumped whenever read_pcap's signature or result changes: gsqlc.runtime.packets
// refuses an extension built from older sources.
constexpr int kReadPcapAbi = 3;

// ---- buffers ------------------------------------------------------------

constexpr size_t kAlign = 64;

// An owned, 64-byte aligned, growable byte buffer.  Invariant: size_ <= cap_;
// p_ is NULL or holds cap_ bytes from std::aligned_alloc.
class Buffer {
public:
    Buffer() = default;
    ~Buffer() { std::free(p_); }
    Buffer(Buffer &&o) noexcept : p_(o.p_), size_(o.size_), cap_(o.cap_)
    {
        o.p_ = nullptr;
        o.size_ = o.cap_ = 0;
    }
    Buffer &operator=(Buffer &&o) noexcept
    {
        if (this != &o) {
            std::free(p_);
            p_ = o.p_;
            size_ = o.size_;
            cap_ = o.cap_;
            o.p_ = nullptr;
            o.size_ = o.cap_ = 0;
        }
        return *this;
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    uint8_t *data() const { return p_; }
    size_t size() const { return size_; }

    // Capacity for n bytes (at least doubling), contents kept.
    void reserve(size_t n)
    {
        if (n <= cap_)
            return;
        realloc_to(std::max(n, cap_ * 2));
    }
    // Size n; with zero, bytes [old size, n) become 0.
    void resize(size_t n, bool zero)
    {
        reserve(n);
        if (zero && n > size_)
            std::memset(p_ + size_, 0, n - size_);
        size_ = n;
    }
    void append(const void *src, size_t n)
    {
        if (n == 0)
            return;
        reserve(size_ + n);
        std::memcpy(p_ + size_, src, n);
        size_ += n;
    }
    // Give back most of an oversized capacity (the last batch of a capture).
    void shrink()
    {
        if (cap_ > 4096 && size_ < cap_ / 2)
            realloc_to(size_);
    }

private:
    void realloc_to(size_t n)
    {
        size_t c = (std::max<size_t>(n, 1) + kAlign - 1) / kAlign * kAlign;
        auto *q = static_cast<uint8_t *>(std::aligned_alloc(kAlign, c));
        if (!q)
            throw std::bad_alloc();
        if (size_)
            std::memcpy(q, p_, size_);
        std::free(p_);
        p_ = q;
        cap_ = c;
    }

    uint8_t *p_ = nullptr;
    size_t size_ = 0, cap_ = 0;
};

size_t bitmap_bytes(int64_t rows) { return static_cast<size_t>((rows + 7) / 8); }

inline void set_bit(uint8_t *bits, int64_t i) { bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7)); }

// ---- one exported record batch -----------------------------------------

// The memory of one record batch, shared by its exported ArrowArray and the
// children.  Invariant after export: children/child_ptrs/child_bufs are not
// resized (the exported structures point into them).
struct BatchData {
    int64_t length = 0;
    std::vector<Buffer> owned;                      // every column buffer
    std::vector<ArrowArray> children;               // one per column
    std::vector<ArrowArray *> child_ptrs;
    std::vector<std::vector<const void *>> child_bufs;
    const void *struct_bufs[1] = {nullptr};         // the struct's validity: none
};
using BatchPtr = std::shared_ptr<BatchData>;

void release_child_array(ArrowArray *a)
{
    delete static_cast<BatchPtr *>(a->private_data);
    a->private_data = nullptr;
    a->release = nullptr;
}

void release_batch_array(ArrowArray *a)
{
    for (int64_t i = 0; i < a->n_children; i++) {
        ArrowArray *c = a->children[i];
        if (c->release) // not moved away by the consumer
            c->release(c);
    }
    delete static_cast<BatchPtr *>(a->private_data);
    a->private_data = nullptr;
    a->release = nullptr;
}

// Fill *out (a struct array, "+s") with batch b.
void export_batch(const BatchPtr &b, ArrowArray *out)
{
    const size_t n = b->children.size();
    b->child_ptrs.resize(n);
    for (size_t i = 0; i < n; i++) {
        ArrowArray &c = b->children[i];
        c.buffers = b->child_bufs[i].data();
        c.n_buffers = static_cast<int64_t>(b->child_bufs[i].size());
        c.n_children = 0;
        c.children = nullptr;
        c.dictionary = nullptr;
        c.offset = 0;
        c.length = b->length;
        c.release = release_child_array;
        c.private_data = new BatchPtr(b);
        b->child_ptrs[i] = &c;
    }
    out->length = b->length;
    out->null_count = 0;
    out->offset = 0;
    out->n_buffers = 1;
    out->n_children = static_cast<int64_t>(n);
    out->buffers = b->struct_bufs;
    out->children = n ? b->child_ptrs.data() : nullptr;
    out->dictionary = nullptr;
    out->release = release_batch_array;
    out->private_data = new BatchPtr(b);
}

// ---- the schema --------------------------------------------------------

struct SchemaData {
    std::vector<std::string> names, formats;
    std::vector<ArrowSchema> children;
    std::vector<ArrowSchema *> child_ptrs;
};
using SchemaPtr = std::shared_ptr<SchemaData>;

void release_child_schema(ArrowSchema *s)
{
    delete static_cast<SchemaPtr *>(s->private_data);
    s->private_data = nullptr;
    s->release = nullptr;
}

void release_struct_schema(ArrowSchema *s)
{
    for (int64_t i = 0; i < s->n_children; i++) {
        ArrowSchema *c = s->children[i];
        if (c->release)
            c->release(c);
    }
    delete static_cast<SchemaPtr *>(s->private_data);
    s->private_data = nullptr;
    s->release = nullptr;
}

// A struct schema ("+s") of nullable fields named names[i] of formats[i].
void export_schema(const std::vector<std::string> &names, const std::vector<std::string> &formats,
                   ArrowSchema *out)
{
    auto d = std::make_shared<SchemaData>();
    d->names = names;
    d->formats = formats;
    const size_t n = names.size();
    d->children.resize(n);
    d->child_ptrs.resize(n);
    for (size_t i = 0; i < n; i++) {
        ArrowSchema &c = d->children[i];
        c.format = d->formats[i].c_str();
        c.name = d->names[i].c_str();
        c.metadata = nullptr;
        c.flags = ARROW_FLAG_NULLABLE;
        c.n_children = 0;
        c.children = nullptr;
        c.dictionary = nullptr;
        c.release = release_child_schema;
        c.private_data = new SchemaPtr(d);
        d->child_ptrs[i] = &c;
    }
    out->format = "+s";
    out->name = "";
    out->metadata = nullptr;
    out->flags = 0;
    out->n_children = static_cast<int64_t>(n);
    out->children = n ? d->child_ptrs.data() : nullptr;
    out->dictionary = nullptr;
    out->release = release_struct_schema;
    out->private_data = new SchemaPtr(d);
}

// ---- columns ----------------------------------------------------------

// The builder of one column over the batches of a capture.  begin() starts a
// batch; reserve_rows() makes room for rows [0, rows); append() sets row i
// (rows are appended in order); finish() moves the batch's buffers into b.
class Column {
public:
    virtual ~Column() = default;
    virtual void begin() = 0;
    virtual void reserve_rows(int64_t rows) = 0;
    virtual void append(const gsq_record *r, int64_t i) = 0;
    virtual void finish(int64_t n, BatchData &b) = 0;

protected:
    // the validity bitmap, shared by every kind of column
    void begin_validity()
    {
        valid_ = Buffer();
        nulls_ = 0;
    }
    void reserve_validity(int64_t rows) { valid_.resize(bitmap_bytes(rows), true); }
    // Buffer 0 of the exported child: the bitmap, or none when nothing is null.
    void finish_validity(int64_t n, BatchData &b, std::vector<const void *> &bufs)
    {
        ArrowArray c{};
        c.null_count = nulls_;
        b.children.push_back(c);
        if (nulls_ == 0) {
            valid_ = Buffer();
            bufs.push_back(nullptr);
        } else {
            valid_.resize(bitmap_bytes(n), false);
            valid_.shrink();
            bufs.push_back(valid_.data());
            b.owned.push_back(std::move(valid_));
        }
    }
    Buffer valid_;
    int64_t nulls_ = 0;
};

// What an accessor gives: T of int (*)(gsq_node *, const gsq_record *, T *).
template <typename F> struct AccessorValue;
template <typename T> struct AccessorValue<int (*)(gsq_node *, const gsq_record *, T *)> {
    using type = T;
};
template <auto F> using value_of = typename AccessorValue<decltype(F)>::type;

// uint32 / uint64 / fixed_size_binary(16) (gsq_ipv6): one T per row.
template <auto F> class FixedColumn final : public Column {
    using T = value_of<F>;
    static_assert(std::is_trivially_copyable_v<T>);

public:
    void begin() override
    {
        begin_validity();
        vals_ = Buffer();
    }
    void reserve_rows(int64_t rows) override
    {
        reserve_validity(rows);
        vals_.resize(static_cast<size_t>(rows) * sizeof(T), false);
    }
    void append(const gsq_record *r, int64_t i) override
    {
        T v;
        if (F(nullptr, r, &v) == 0) {
            set_bit(valid_.data(), i);
        } else {
            std::memset(&v, 0, sizeof v);
            nulls_++;
        }
        std::memcpy(vals_.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
    }
    void finish(int64_t n, BatchData &b) override
    {
        std::vector<const void *> bufs;
        finish_validity(n, b, bufs);
        vals_.resize(static_cast<size_t>(n) * sizeof(T), false);
        vals_.shrink();
        bufs.push_back(vals_.data());
        b.owned.push_back(std::move(vals_));
        b.child_bufs.push_back(std::move(bufs));
    }

private:
    Buffer vals_;
};

// bool: the values are a bitmap too.
template <auto F> class BoolColumn final : public Column {
public:
    void begin() override
    {
        begin_validity();
        bits_ = Buffer();
    }
    void reserve_rows(int64_t rows) override
    {
        reserve_validity(rows);
        bits_.resize(bitmap_bytes(rows), true);
    }
    void append(const gsq_record *r, int64_t i) override
    {
        uint8_t v;
        if (F(nullptr, r, &v) == 0) {
            set_bit(valid_.data(), i);
            if (v)
                set_bit(bits_.data(), i);
        } else {
            nulls_++;
        }
    }
    void finish(int64_t n, BatchData &b) override
    {
        std::vector<const void *> bufs;
        finish_validity(n, b, bufs);
        bits_.resize(bitmap_bytes(n), false);
        bits_.shrink();
        bufs.push_back(bits_.data());
        b.owned.push_back(std::move(bits_));
        b.child_bufs.push_back(std::move(bufs));
    }

private:
    Buffer bits_;
};

// binary: int32 offsets and the bytes (the reader keeps a batch under 2 GiB).
template <auto F> class BinaryColumn final : public Column {
public:
    void begin() override
    {
        begin_validity();
        offsets_ = Buffer();
        bytes_ = Buffer();
        offsets_.resize(sizeof(int32_t), true); // offsets[0] = 0
    }
    void reserve_rows(int64_t rows) override
    {
        reserve_validity(rows);
        offsets_.resize(static_cast<size_t>(rows + 1) * sizeof(int32_t), false);
    }
    void append(const gsq_record *r, int64_t i) override
    {
        gsq_str s;
        if (F(nullptr, r, &s) == 0) {
            set_bit(valid_.data(), i);
            bytes_.append(s.p, s.len);
        } else {
            nulls_++;
        }
        auto *off = reinterpret_cast<int32_t *>(offsets_.data());
        off[i + 1] = static_cast<int32_t>(bytes_.size());
    }
    void finish(int64_t n, BatchData &b) override
    {
        std::vector<const void *> bufs;
        finish_validity(n, b, bufs);
        offsets_.resize(static_cast<size_t>(n + 1) * sizeof(int32_t), false);
        offsets_.shrink();
        bytes_.shrink();
        if (!bytes_.data())
            bytes_.reserve(1); // a non-NULL data buffer even when empty
        bufs.push_back(offsets_.data());
        bufs.push_back(bytes_.data());
        b.owned.push_back(std::move(offsets_));
        b.owned.push_back(std::move(bytes_));
        b.child_bufs.push_back(std::move(bufs));
    }

private:
    Buffer offsets_, bytes_;
};

// ---- the accessor table ------------------------------------------------

// Every packet accessor of gsq_packet.h (gsq_acc_get_<name>), i.e. the
// accessors compiler/gsqlc/schema.py's PACKET_ACCESSORS lists.
#define GSQ_PACKET_ACCESSORS(X)                                                             \
    X(time) X(timestamp) X(caplen) X(wire_len)                                               \
    X(eth_src) X(eth_dst) X(eth_type) X(vlan_id)                                             \
    X(ip_version) X(ip_protocol) X(ip_len) X(ip_hdr_length) X(ip_ttl) X(ip_tos) X(ip_id)    \
    X(ip_offset) X(ip_more_fragments) X(ip_dont_fragment)                                    \
    X(ipv4_src) X(ipv4_dst) X(ipv6_src) X(ipv6_dst) X(src_port) X(dst_port)                  \
    X(tcp_src_port) X(tcp_dst_port) X(tcp_seq) X(tcp_ack) X(tcp_flags)                       \
    X(tcp_fin) X(tcp_syn) X(tcp_rst) X(tcp_psh) X(tcp_ackflag) X(tcp_urg)                    \
    X(tcp_window) X(tcp_data_length) X(tcp_data)                                             \
    X(udp_src_port) X(udp_dst_port) X(udp_length) X(udp_data)                                \
    X(icmp_type) X(icmp_code)

enum class Kind { U32, U64, BOOL, IPV6, STRING };

template <auto F> constexpr Kind kind_of()
{
    using T = value_of<F>;
    if constexpr (std::is_same_v<T, uint32_t>)
        return Kind::U32;
    else if constexpr (std::is_same_v<T, uint64_t>)
        return Kind::U64;
    else if constexpr (std::is_same_v<T, uint8_t>)
        return Kind::BOOL;
    else if constexpr (std::is_same_v<T, gsq_ipv6>)
        return Kind::IPV6;
    else {
        static_assert(std::is_same_v<T, gsq_str>, "an accessor of an unexpected type");
        return Kind::STRING;
    }
}

template <auto F> std::unique_ptr<Column> make_column()
{
    constexpr Kind k = kind_of<F>();
    if constexpr (k == Kind::BOOL)
        return std::make_unique<BoolColumn<F>>();
    else if constexpr (k == Kind::STRING)
        return std::make_unique<BinaryColumn<F>>();
    else
        return std::make_unique<FixedColumn<F>>();
}

struct AccessorEntry {
    const char *name; // "get_<name>" as the schema spells it
    Kind kind;
    std::unique_ptr<Column> (*make)();
};

const AccessorEntry kAccessors[] = {
#define GSQ_ACCESSOR_ENTRY(n) {"get_" #n, kind_of<&gsq_acc_get_##n>(), &make_column<&gsq_acc_get_##n>},
    GSQ_PACKET_ACCESSORS(GSQ_ACCESSOR_ENTRY)
#undef GSQ_ACCESSOR_ENTRY
};

const AccessorEntry *find_accessor(const std::string &name)
{
    for (const auto &e : kAccessors)
        if (name == e.name)
            return &e;
    return nullptr;
}

const char *kind_name(Kind k)
{
    switch (k) {
    case Kind::U32: return "uint";
    case Kind::U64: return "ullong";
    case Kind::BOOL: return "bool";
    case Kind::IPV6: return "IPV6";
    case Kind::STRING: return "string";
    }
    return "?";
}

std::string lower(std::string s)
{
    for (auto &ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// The Arrow format of a column of GSQL type `type` read by accessor e, or ""
// when the accessor does not give that type.
std::string arrow_format(const AccessorEntry &e, const std::string &type)
{
    const std::string t = lower(type);
    switch (e.kind) {
    case Kind::U32: return (t == "uint" || t == "ip") ? "I" : "";
    case Kind::U64: return t == "ullong" ? "L" : "";
    case Kind::BOOL: return t == "bool" ? "b" : "";
    case Kind::IPV6: return t == "ipv6" ? "w:16" : "";
    case Kind::STRING: return t == "string" ? "z" : "";
    }
    return "";
}

// ---- reading a capture -------------------------------------------------

struct ColumnSpec {
    std::string name, format;
    Kind kind;
    std::unique_ptr<Column> col;
};

struct ReadResult {
    enum { OK, OS_ERROR, FORMAT_ERROR } status = OK;
    int err_no = 0;
    std::string message;    // the error, or libpcap's message of a truncated file
    bool truncated = false;
    int linktype = -1;
    bool decoded = false;
    uint64_t packets = 0;
    uint64_t undecoded = 0;          // mapped pcapng: packets of interfaces not decoded
    uint32_t undecoded_linktype = 0; // the file link type of the first of them
    uint64_t past_time_end = 0;      // packets whose `time` holds at UINT32_MAX
    std::vector<BatchPtr> batches;
};

struct PcapCloser {
    void operator()(pcap_t *p) const { pcap_close(p); }
};

// The largest byte count a binary column may hold in one batch (int32 offsets).
constexpr uint64_t kMaxBatchBytes = INT32_MAX;

// One packet of either reader, as read_capture consumes it.
struct Packet {
    const uint8_t *data;
    uint32_t caplen, wire_len;
    uint64_t ts_usec;
    int linktype; // for gsq_pkt_decode, -1: not decoded
};

// Feeds the packets of a capture (next() until false) into batches of the
// columns' values, the same for either reader.
class BatchBuilder {
  public:
    BatchBuilder(std::vector<ColumnSpec> &cols, int64_t batch_rows, ReadResult &res)
        : cols_(cols), batch_rows_(batch_rows), res_(res),
          has_binary_(std::any_of(cols.begin(), cols.end(),
                                  [](const ColumnSpec &c) { return c.kind == Kind::STRING; }))
    {
    }

    void add(const Packet &p)
    {
        if (open_ && (n_ == batch_rows_ || (has_binary_ && bytes_ + p.caplen > kMaxBatchBytes)))
            flush();
        if (!open_) {
            for (auto &c : cols_)
                c.col->begin();
            cap_ = 0;
            open_ = true;
        }
        if (n_ == cap_) {
            cap_ = std::min<int64_t>(std::max<int64_t>(next_cap_, cap_ * 2), batch_rows_);
            next_cap_ = cap_;
            for (auto &c : cols_)
                c.col->reserve_rows(cap_);
        }
        std::memset(&rec_, 0, sizeof rec_);
        rec_.kind = GSQ_SRC_PCAP;
        rec_.data = p.data;
        rec_.len = p.caplen;
        rec_.pkt.ts_usec = p.ts_usec;
        rec_.pkt.wire_len = p.wire_len;
        gsq_pkt_decode(&rec_.pkt, p.linktype, p.data, p.caplen);
        for (auto &c : cols_)
            c.col->append(&rec_, n_);
        n_++;
        bytes_ += p.caplen;
        res_.packets++;
        res_.past_time_end += p.ts_usec >= GSQ_PKT_TIME_END_USEC;
    }

    void finish()
    {
        if (open_)
            flush();
    }

  private:
    void flush()
    {
        auto b = std::make_shared<BatchData>();
        b->length = n_;
        b->children.reserve(cols_.size());
        b->child_bufs.reserve(cols_.size());
        for (auto &c : cols_)
            c.col->finish(n_, *b);
        res_.batches.push_back(std::move(b));
        open_ = false;
        n_ = 0;
        bytes_ = 0;
    }

    std::vector<ColumnSpec> &cols_;
    const int64_t batch_rows_;
    ReadResult &res_;
    const bool has_binary_;
    int64_t n_ = 0;        // rows in the current batch
    int64_t cap_ = 0;      // rows reserved in the current batch
    int64_t next_cap_ = 1024;
    uint64_t bytes_ = 0;   // bytes captured in the current batch: bounds a binary column's
    bool open_ = false;
    gsq_record rec_{};
};

struct MmapCloser {
    void operator()(gsq_pcap_mmap *m) const
    {
        gsq_pcap_mmap_close(m);
        delete m;
    }
};

// The capture through the memory-mapped reader (pcap_mmap.h), as the
// runtime's pcap source reads it: 1 when it took the file (res filled),
// 0 when it leaves the file to libpcap.
bool read_mapped(const std::string &path, BatchBuilder &out, ReadResult &res)
{
    std::unique_ptr<gsq_pcap_mmap, MmapCloser> m(new gsq_pcap_mmap{});
    char why[160];
    if (gsq_pcap_mmap_open(m.get(), path.c_str(), why, sizeof why) != 0)
        return false; // open closed it

    res.linktype = m->linktype;
    res.decoded = true; // per packet: m->undecoded counts the others
    gsq_pcap_mmap_pkt pk;
    int rc;
    while ((rc = gsq_pcap_mmap_next(m.get(), &pk)) == 1)
        out.add(Packet{pk.data, pk.caplen, pk.wire_len, pk.ts_usec, pk.linktype});
    out.finish();
    if (rc < 0) {
        res.truncated = true;
        res.message = "at byte " + std::to_string(m->err_off) + ": " + m->err;
    }
    res.undecoded = m->undecoded;
    res.undecoded_linktype = m->undecoded_linktype;
    return true;
}

// Decode the capture at path into batches of the columns' values: through
// the memory-mapped reader when it takes the file (zero copy; pcapng
// interfaces of several link types), else through libpcap.  Runs without
// the GIL: touches no Python object.
ReadResult read_capture(const std::string &path, std::vector<ColumnSpec> &cols, int64_t batch_rows)
{
    ReadResult res;
    BatchBuilder out(cols, std::max<int64_t>(batch_rows, 1), res);
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) {
        res.status = ReadResult::OS_ERROR;
        res.err_no = errno;
        return res;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fclose(f);
        res.status = ReadResult::OS_ERROR;
        res.err_no = EISDIR;
        return res;
    }
    if (read_mapped(path, out, res)) {
        std::fclose(f);
        return res;
    }
    // libpcap reads each record with two small freads: a large stdio buffer
    // turns 4 KiB read(2) calls into 1 MiB ones (as pcap_source.c does).
    std::setvbuf(f, nullptr, _IOFBF, static_cast<size_t>(1) << 20);
    char errbuf[PCAP_ERRBUF_SIZE];
    errbuf[0] = '\0';
    std::unique_ptr<pcap_t, PcapCloser> h(pcap_fopen_offline(f, errbuf)); // owns f from here on
    if (!h) {
        std::fclose(f);
        res.status = ReadResult::FORMAT_ERROR;
        res.message = errbuf;
        return res;
    }
    res.linktype = pcap_datalink(h.get());
    res.decoded = gsq_pkt_linktype_known(res.linktype) != 0;
    const int lt = res.decoded ? res.linktype : -1;
    const int classic = pcap_major_version(h.get()) == 2;
    for (;;) {
        struct pcap_pkthdr *hdr;
        const u_char *data;
        int rc = pcap_next_ex(h.get(), &hdr, &data);
        if (rc != 1) {
            if (rc == PCAP_ERROR) { // "truncated dump file; ...", or a read error
                res.truncated = true;
                res.message = std::string("libpcap: ") + pcap_geterr(h.get());
            }
            break; // PCAP_ERROR_BREAK: the end (0 only happens live)
        }
        out.add(Packet{data, hdr->caplen, hdr->len,
                       gsq_pkt_ts_usec(static_cast<int64_t>(hdr->ts.tv_sec),
                                       static_cast<int64_t>(hdr->ts.tv_usec), classic),
                       lt});
    }
    out.finish();
    return res;
}

// ---- Python glue -------------------------------------------------------

void schema_capsule_free(PyObject *cap)
{
    auto *s = static_cast<ArrowSchema *>(PyCapsule_GetPointer(cap, "arrow_schema"));
    if (!s) {
        PyErr_Clear();
        return;
    }
    if (s->release)
        s->release(s);
    delete s;
}

void array_capsule_free(PyObject *cap)
{
    auto *a = static_cast<ArrowArray *>(PyCapsule_GetPointer(cap, "arrow_array"));
    if (!a) {
        PyErr_Clear();
        return;
    }
    if (a->release)
        a->release(a);
    delete a;
}

py::object schema_capsule(const std::vector<std::string> &names, const std::vector<std::string> &formats)
{
    auto s = std::make_unique<ArrowSchema>();
    export_schema(names, formats, s.get());
    PyObject *cap = PyCapsule_New(s.get(), "arrow_schema", schema_capsule_free);
    if (!cap) {
        s->release(s.get());
        throw py::error_already_set();
    }
    s.release();
    return py::reinterpret_steal<py::object>(cap);
}

py::object array_capsule(const BatchPtr &b)
{
    auto a = std::make_unique<ArrowArray>();
    export_batch(b, a.get());
    PyObject *cap = PyCapsule_New(a.get(), "arrow_array", array_capsule_free);
    if (!cap) {
        a->release(a.get());
        throw py::error_already_set();
    }
    a.release();
    return py::reinterpret_steal<py::object>(cap);
}

[[noreturn]] void raise_os_error(int err_no, const std::string &path)
{
    // OSError(errno, strerror, filename) picks the subclass (FileNotFoundError, ...)
    py::object name = py::module_::import("os").attr("fsdecode")(py::bytes(path));
    py::object exc = py::module_::import("builtins").attr("OSError")(err_no, std::strerror(err_no), name);
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
}

py::dict read_pcap(const py::bytes &path_b, const std::vector<std::tuple<std::string, std::string, std::string>> &columns,
                   int64_t batch_rows)
{
    const std::string path = path_b;
    if (batch_rows < 1)
        throw py::value_error("batch_rows must be at least 1");
    std::vector<ColumnSpec> cols;
    std::vector<std::string> names, formats;
    for (const auto &[name, accessor, type] : columns) {
        const AccessorEntry *e = find_accessor(accessor);
        if (!e)
            throw py::value_error("column '" + name + "': unknown packet accessor '" + accessor + "'");
        std::string fmt = arrow_format(*e, type);
        if (fmt.empty())
            throw py::value_error("column '" + name + "' is " + type + " but accessor " + accessor +
                                  " gives " + kind_name(e->kind));
        names.push_back(name);
        formats.push_back(fmt);
        cols.push_back(ColumnSpec{name, fmt, e->kind, e->make()});
    }

    ReadResult res;
    {
        py::gil_scoped_release nogil;
        res = read_capture(path, cols, batch_rows);
    }
    if (res.status == ReadResult::OS_ERROR)
        raise_os_error(res.err_no, path);
    if (res.status == ReadResult::FORMAT_ERROR)
        throw py::value_error(path + ": not a pcap capture: " + res.message);

    py::list batches;
    for (const auto &b : res.batches)
        batches.append(py::make_tuple(schema_capsule(names, formats), array_capsule(b)));
    py::dict out;
    out["schema"] = schema_capsule(names, formats);
    out["batches"] = batches;
    out["packets"] = res.packets;
    out["linktype"] = res.linktype;
    out["decoded"] = res.decoded;
    out["truncated"] = res.truncated ? py::object(py::str(res.message)) : py::object(py::none());
    out["undecoded_packets"] = res.undecoded;
    out["undecoded_linktype"] = res.undecoded_linktype;
    out["past_time_end"] = res.past_time_end;
    return out;
}

// ---- IP values as text -------------------------------------------------

// A bytes object of n bytes to fill (CPython's idiom: written before anyone
// else sees it, then cut to its length by finish_bytes).
py::object new_bytes(size_t n)
{
    PyObject *o = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n));
    if (!o)
        throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

py::object finish_bytes(py::object b, size_t n)
{
    if (static_cast<size_t>(PyBytes_GET_SIZE(b.ptr())) == n)
        return b; // nothing to cut (and b may be the shared empty bytes)
    PyObject *o = b.release().ptr();
    if (_PyBytes_Resize(&o, static_cast<Py_ssize_t>(n)) != 0)
        throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

py::tuple ip_text(py::buffer values, int64_t offset, int64_t length, int width)
{
    if (width != 4 && width != 16)
        throw py::value_error("ip_text: width must be 4 or 16");
    py::buffer_info info = values.request();
    size_t have = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
    if (offset < 0 || length < 0 ||
        static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) >
            have / static_cast<size_t>(width))
        throw py::value_error("ip_text: values past the end of the buffer");
    if (length >= INT32_MAX / 40)
        throw py::value_error("ip_text: too many values for one utf8 array");
    // 15 / 39 bytes at most, and one more: gsq_fmt_ip and gsq_fmt_ipv6 end
    // their text with a terminator (which the next value overwrites)
    const size_t n = static_cast<size_t>(length), each = width == 4 ? 15 : 39;
    const uint8_t *src = static_cast<const uint8_t *>(info.ptr) + static_cast<size_t>(offset) * width;
    py::object offsets = new_bytes((n + 1) * 4), data = new_bytes(n * each + 1);
    auto *offs = reinterpret_cast<int32_t *>(PyBytes_AS_STRING(offsets.ptr()));
    char *out = PyBytes_AS_STRING(data.ptr());
    size_t len = 0;
    {
        py::gil_scoped_release unlocked;
        offs[0] = 0;
        for (size_t i = 0; i < n; i++) {
            if (width == 4) {
                uint32_t ip;
                std::memcpy(&ip, src + 4 * i, 4);
                len += gsq_fmt_ip(out + len, ip);
            } else {
                static_assert(sizeof(gsq_ipv6) == 16 && alignof(gsq_ipv6) == 1);
                gsq_fmt_ipv6(out + len, reinterpret_cast<const gsq_ipv6 *>(src + 16 * i));
                len += 39;
            }
            offs[i + 1] = static_cast<int32_t>(len);
        }
    }
    return py::make_tuple(offsets, finish_bytes(std::move(data), len));
}

py::list packet_accessors()
{
    py::list out;
    for (const auto &e : kAccessors)
        out.append(py::make_tuple(e.name, kind_name(e.kind)));
    return out;
}

} // namespace

PYBIND11_MODULE(_native, m)
{
    m.doc() = "gsqlc native helpers";
    m.attr("READ_PCAP_ABI") = kReadPcapAbi;
    m.def("pcap_version", []() { return std::string(pcap_lib_version()); },
          "the version string of the libpcap gsqlc links");
    m.def("read_pcap", &read_pcap, py::arg("path"), py::arg("columns"), py::arg("batch_rows") = 65536,
          "Decode a pcap capture (path as bytes) into Arrow record batches of the given\n"
          "(name, accessor, gsql_type) columns; see gsqlc.runtime.packets.read_pcap.");
    m.def("ip_text", &ip_text, py::arg("values"), py::arg("offset"), py::arg("length"),
          py::arg("width"),
          "The text forms of IP (width 4, uint32) or IPV6 (width 16) values of a buffer:\n"
          "(int32 offsets, utf8 data) of an Arrow utf8 array.");
    m.def("packet_accessors", &packet_accessors,
          "[(accessor, gsql type)] of the packet accessors read_pcap knows");
}
