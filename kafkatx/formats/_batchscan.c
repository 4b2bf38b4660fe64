/*
 * kafkatx.formats._batchscan -- columnar scanner for RecordBatch v2 headers.
 *
 * Mirrors the header layout of Kafka's DefaultRecordBatch (magic 2): walks consecutive batches
 * of a log segment, decodes the 61-byte header of each into caller-provided column buffers and
 * checks the CRC-32C over [attributes, end of batch) like DefaultRecordBatch.isValid().
 *
 * Python API (see kafkatx/formats/batchscan.py for the friendly face):
 *
 *   scan_v2(buf, start, end, capacity,
 *           out_position, out_base_offset, out_batch_length, out_partition_leader_epoch,
 *           out_crc, out_attributes, out_last_offset_delta, out_base_timestamp,
 *           out_max_timestamp, out_producer_id, out_producer_epoch, out_base_sequence,
 *           out_records_count, out_crc_valid) -> (n, stop_position, stop_reason)
 *
 *   buf: any C-contiguous buffer (bytes, bytearray, memoryview, read-only mmap).
 *   out_*: writable C-contiguous buffers of at least capacity * itemsize bytes, filled with
 *   native-endian values; item sizes: position int64, base_offset int64, batch_length int32,
 *   partition_leader_epoch int32, crc uint32, attributes int16, last_offset_delta int32,
 *   base_timestamp int64, max_timestamp int64, producer_id int64, producer_epoch int16,
 *   base_sequence int32, records_count int32, crc_valid uint8 (0/1).
 *
 *   The walk starts at byte `start` and stops at the first of (checked in this order at
 *   each batch position `pos`):
 *     STOP_END          pos == end
 *     STOP_CAPACITY     capacity batches were written
 *     STOP_SHORT_HEADER fewer than 17 bytes remain (the magic byte is not there)
 *     STOP_NOT_V2       magic byte (pos + 16) != 2: a v0/v1 entry or garbage
 *     STOP_SHORT_HEADER fewer than 61 bytes remain (a truncated v2 header)
 *     STOP_BAD_LENGTH   batchLength < 49 (negative included)
 *     STOP_PAST_END     pos + 12 + batchLength > end (a truncated batch)
 *   stop_position is `pos`, the first byte not consumed. The GIL is released during the walk.
 *
 *   _crc32c(data, force_table=False) -> int: CRC-32C of data (for tests and benchmarks).
 *
 *   decode_records(data, count, base_offset, base_timestamp, max_timestamp, log_append_time)
 *       -> list of (offset, timestamp, key, value, headers, attributes, start) | None
 *
 *   The `count` records of a v2 batch's (decompressed) records section, DefaultRecord#readFrom
 *   for each: length varint, attributes int8, timestamp delta varlong, offset delta varint,
 *   key and value (varint length, -1 = null), headers (varint count; UTF-8 key, nullable
 *   value). `start` is where the record's length varint begins in `data`. Returns None for
 *   anything the exact reader (kafkatx.formats.record_batch.iter_records, construct) would
 *   reject or compute differently -- a malformed varint, a length or count out of range, a
 *   field running past its record, bytes left over in a record or after the last one, a header
 *   key that is not UTF-8, an offset or timestamp outside int64 -- so the caller hands the
 *   batch to that reader, which reports it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define KTX_X86_CRC 1
#include <nmmintrin.h>
#endif

enum {
    STOP_END = 0,
    STOP_CAPACITY = 1,
    STOP_NOT_V2 = 2,
    STOP_SHORT_HEADER = 3,
    STOP_BAD_LENGTH = 4,
    STOP_PAST_END = 5,
};

#define LOG_OVERHEAD 12           /* baseOffset + batchLength */
#define MAGIC_OFFSET 16
#define HEADER_SIZE_UP_TO_MAGIC 17
#define CRC_OFFSET 17
#define ATTRIBUTES_OFFSET 21
#define RECORD_BATCH_OVERHEAD 61
#define MIN_BATCH_LENGTH (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)

/* ---------------------------------------------------------------------------------------------
 * CRC-32C (Castagnoli), reflected polynomial 0x82F63B78. Every internal function works on the
 * raw register (no pre/post inversion); crc32c(data) == ~raw(~0, data).
 */
#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];

static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

static void crc_init_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* Portable slicing-by-8. */
static uint32_t crc_raw_table(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint64_t w = load_le64(p) ^ crc;
        crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#ifdef KTX_X86_CRC
/*
 * Hardware path: the SSE4.2 crc32 instruction has a latency of ~3 cycles but a throughput of
 * one per cycle, so long inputs are split into three adjacent blocks whose CRCs run in parallel
 * and are then joined: raw(s, A||B) = shift_|B|(raw(s, A)) ^ raw(0, B), where shift_n multiplies
 * by x^(8n) mod P (a linear map, applied with four 256-entry tables).
 */
#define CRC_LONG 4096
#define CRC_SHORT 256

static uint32_t crc_shift_long[4][256];
static uint32_t crc_shift_short[4][256];

/* Product of two polynomials modulo P in the reflected representation (bit 31 is x^0). */
static uint32_t crc_multmodp(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    for (int i = 31; i >= 0; i--) {
        if (a & (1u << i))
            product ^= b;
        b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return product;
}

static void crc_init_shift(uint32_t table[4][256], size_t nbytes)
{
    /* x^(8 n) mod P: feeding n zero bytes to the register holding 1 (= x^0) multiplies by it. */
    uint32_t xpow = 0x80000000u;
    static const uint8_t zeros[256];
    size_t left = nbytes;
    while (left) {
        size_t step = left < sizeof(zeros) ? left : sizeof(zeros);
        xpow = crc_raw_table(xpow, zeros, step);
        left -= step;
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t i = 0; i < 256; i++)
            table[k][i] = crc_multmodp(xpow, i << (8 * k));
}

static inline uint32_t crc_shift(uint32_t table[4][256], uint32_t c)
{
    return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^
           table[3][c >> 24];
}

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

#define CRC_THREE_WAY(BLOCK, TABLE)                                                            \
    while (n >= 3 * (BLOCK)) {                                                                 \
        uint64_t c1 = 0, c2 = 0;                                                               \
        const uint8_t *stop = p + (BLOCK);                                                     \
        do {                                                                                   \
            c0 = _mm_crc32_u64(c0, load_u64(p));                                               \
            c1 = _mm_crc32_u64(c1, load_u64(p + (BLOCK)));                                     \
            c2 = _mm_crc32_u64(c2, load_u64(p + 2 * (BLOCK)));                                 \
            p += 8;                                                                            \
        } while (p < stop);                                                                    \
        c0 = crc_shift(TABLE, (uint32_t)c0) ^ (uint32_t)c1;                                    \
        c0 = crc_shift(TABLE, (uint32_t)c0) ^ (uint32_t)c2;                                    \
        p += 2 * (BLOCK);                                                                      \
        n -= 3 * (BLOCK);                                                                      \
    }

__attribute__((target("sse4.2"))) static uint32_t crc_raw_hw(uint32_t crc, const uint8_t *p,
                                                              size_t n)
{
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    CRC_THREE_WAY(CRC_LONG, crc_shift_long)
    CRC_THREE_WAY(CRC_SHORT, crc_shift_short)
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, load_u64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif /* KTX_X86_CRC */

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);
static crc_fn crc_raw = crc_raw_table;
static int have_hw_crc = 0;

static void crc_init(void)
{
    crc_init_tables();
#ifdef KTX_X86_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_init_shift(crc_shift_long, CRC_LONG);
        crc_init_shift(crc_shift_short, CRC_SHORT);
        crc_raw = crc_raw_hw;
        have_hw_crc = 1;
    }
#endif
}

/* ---------------------------------------------------------------------------------------------
 * The walk.
 */
static inline uint16_t load_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t load_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t load_be64(const uint8_t *p)
{
    return ((uint64_t)load_be32(p) << 32) | load_be32(p + 4);
}

#define N_OUT 14

typedef struct {
    int64_t *position;
    int64_t *base_offset;
    int32_t *batch_length;
    int32_t *partition_leader_epoch;
    uint32_t *crc;
    int16_t *attributes;
    int32_t *last_offset_delta;
    int64_t *base_timestamp;
    int64_t *max_timestamp;
    int64_t *producer_id;
    int16_t *producer_epoch;
    int32_t *base_sequence;
    int32_t *records_count;
    uint8_t *crc_valid;
} columns;

/* Same order as the out_* arguments and as the columns struct. */
static const Py_ssize_t out_itemsize[N_OUT] = {8, 8, 4, 4, 4, 2, 4, 8, 8, 8, 2, 4, 4, 1};
static const char *const out_name[N_OUT] = {
    "out_position",      "out_base_offset",     "out_batch_length", "out_partition_leader_epoch",
    "out_crc",           "out_attributes",      "out_last_offset_delta",
    "out_base_timestamp", "out_max_timestamp",  "out_producer_id",  "out_producer_epoch",
    "out_base_sequence", "out_records_count",   "out_crc_valid"};

/* Values are stored with memcpy: the out buffers need not be aligned. */
#define PUT(col, i, type, value)                                                               \
    do {                                                                                       \
        type v_ = (type)(value);                                                               \
        memcpy(&(col)[i], &v_, sizeof(v_));                                                    \
    } while (0)

static int scan_walk(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t capacity,
                     const columns *out, Py_ssize_t *n_out, Py_ssize_t *stop_out)
{
    Py_ssize_t n = 0;
    int reason;
    for (;;) {
        Py_ssize_t remaining = end - pos;
        if (remaining == 0) {
            reason = STOP_END;
            break;
        }
        if (n >= capacity) {
            reason = STOP_CAPACITY;
            break;
        }
        if (remaining < HEADER_SIZE_UP_TO_MAGIC) {
            reason = STOP_SHORT_HEADER;
            break;
        }
        const uint8_t *b = buf + pos;
        if (b[MAGIC_OFFSET] != 2) {
            reason = STOP_NOT_V2;
            break;
        }
        if (remaining < RECORD_BATCH_OVERHEAD) {
            reason = STOP_SHORT_HEADER;
            break;
        }
        int32_t batch_length = (int32_t)load_be32(b + 8);
        if (batch_length < MIN_BATCH_LENGTH) {
            reason = STOP_BAD_LENGTH;
            break;
        }
        int64_t size = (int64_t)batch_length + LOG_OVERHEAD;
        if (size > (int64_t)remaining) {
            reason = STOP_PAST_END;
            break;
        }
        uint32_t stored_crc = load_be32(b + CRC_OFFSET);
        uint32_t computed =
            ~crc_raw(0xFFFFFFFFu, b + ATTRIBUTES_OFFSET, (size_t)(size - ATTRIBUTES_OFFSET));
        PUT(out->position, n, int64_t, pos);
        PUT(out->base_offset, n, int64_t, load_be64(b));
        PUT(out->batch_length, n, int32_t, batch_length);
        PUT(out->partition_leader_epoch, n, int32_t, load_be32(b + 12));
        PUT(out->crc, n, uint32_t, stored_crc);
        PUT(out->attributes, n, int16_t, load_be16(b + 21));
        PUT(out->last_offset_delta, n, int32_t, load_be32(b + 23));
        PUT(out->base_timestamp, n, int64_t, load_be64(b + 27));
        PUT(out->max_timestamp, n, int64_t, load_be64(b + 35));
        PUT(out->producer_id, n, int64_t, load_be64(b + 43));
        PUT(out->producer_epoch, n, int16_t, load_be16(b + 51));
        PUT(out->base_sequence, n, int32_t, load_be32(b + 53));
        PUT(out->records_count, n, int32_t, load_be32(b + 57));
        PUT(out->crc_valid, n, uint8_t, computed == stored_crc);
        pos += (Py_ssize_t)size;
        n++;
    }
    *n_out = n;
    *stop_out = pos;
    return reason;
}

static PyObject *scan_v2(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer in;
    Py_buffer outs[N_OUT];
    Py_ssize_t start, end, capacity;
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "y*nnnw*w*w*w*w*w*w*w*w*w*w*w*w*w*:scan_v2", &in, &start, &end,
                          &capacity, &outs[0], &outs[1], &outs[2], &outs[3], &outs[4], &outs[5],
                          &outs[6], &outs[7], &outs[8], &outs[9], &outs[10], &outs[11],
                          &outs[12], &outs[13]))
        return NULL;

    if (start < 0 || end < start || end > in.len) {
        PyErr_Format(PyExc_ValueError,
                     "scan_v2: need 0 <= start <= end <= len(buf), got start=%zd end=%zd len=%zd",
                     start, end, in.len);
        goto done;
    }
    if (capacity < 0 || capacity > PY_SSIZE_T_MAX / 8) {
        PyErr_Format(PyExc_ValueError, "scan_v2: bad capacity %zd", capacity);
        goto done;
    }
    for (int i = 0; i < N_OUT; i++) {
        if (outs[i].len / out_itemsize[i] < capacity) {
            PyErr_Format(PyExc_ValueError,
                         "scan_v2: %s holds %zd bytes, capacity %zd needs %zd", out_name[i],
                         outs[i].len, capacity, capacity * out_itemsize[i]);
            goto done;
        }
    }

    {
    columns cols = {
        .position = outs[0].buf,
        .base_offset = outs[1].buf,
        .batch_length = outs[2].buf,
        .partition_leader_epoch = outs[3].buf,
        .crc = outs[4].buf,
        .attributes = outs[5].buf,
        .last_offset_delta = outs[6].buf,
        .base_timestamp = outs[7].buf,
        .max_timestamp = outs[8].buf,
        .producer_id = outs[9].buf,
        .producer_epoch = outs[10].buf,
        .base_sequence = outs[11].buf,
        .records_count = outs[12].buf,
        .crc_valid = outs[13].buf,
    };
    Py_ssize_t n, stop;
    int reason;
    Py_BEGIN_ALLOW_THREADS
    reason = scan_walk((const uint8_t *)in.buf, start, end, capacity, &cols, &n, &stop);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nni)", n, stop, reason);
    }

done:
    PyBuffer_Release(&in);
    for (int i = 0; i < N_OUT; i++)
        PyBuffer_Release(&outs[i]);
    return result;
}

static PyObject *crc32c_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"data", "force_table", NULL};
    Py_buffer data;
    int force_table = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|p:_crc32c", kwlist, &data, &force_table))
        return NULL;
    crc_fn fn = force_table ? crc_raw_table : crc_raw;
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
    crc = ~fn(0xFFFFFFFFu, (const uint8_t *)data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

/* ---------------------------------------------------------------------------------------------
 * Records of a v2 batch (DefaultRecord). Every reader below returns 0 on success and -1 when
 * the bytes are not what the exact reader accepts with the same value (the caller then hands
 * the batch to it).
 */
#include "_varint.h"

/* VarIntNullableBytes: -1 is null (Py_None), other negative lengths are malformed. */
static PyObject *read_nullable_bytes(cursor_t *c, int *failed)
{
    int64_t n;
    if (read_zigzag(c, 5, &n) < 0 || n < -1 || n > c->end - c->p) {
        *failed = 1;
        return NULL;
    }
    if (n == -1)
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize((const char *)c->p, (Py_ssize_t)n);
    c->p += n;
    return out;
}

/* The headers array: varint count (>= 0), then (UTF-8 key, nullable value) pairs. */
static PyObject *read_headers(cursor_t *c, int *failed)
{
    int64_t n;
    if (read_zigzag(c, 5, &n) < 0 || n < 0 || n > c->end - c->p) {
        *failed = 1;
        return NULL;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)n);
    if (headers == NULL)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t klen;
        if (read_zigzag(c, 5, &klen) < 0 || klen < 0 || klen > c->end - c->p) {
            *failed = 1;
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)c->p, (Py_ssize_t)klen, "strict");
        if (key == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                *failed = 1;
            }
            Py_DECREF(headers);
            return NULL;
        }
        c->p += klen;
        PyObject *value = read_nullable_bytes(c, failed);
        if (value == NULL) {
            Py_DECREF(key);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, (Py_ssize_t)i, pair);
    }
    return headers;
}

/* One record; NULL with *failed = 1 when it is not the exact reader's, NULL alone on a Python
 * error. */
static PyObject *read_record(cursor_t *c, const uint8_t *data, long long base_offset,
                             long long base_timestamp, long long max_timestamp, int log_append,
                             int *failed)
{
    const uint8_t *start = c->p;
    int64_t length;
    if (read_zigzag(c, 5, &length) < 0 || length < 0 || length > c->end - c->p) {
        *failed = 1;
        return NULL;
    }
    cursor_t body = {c->p, c->p + length};
    c->p += length;
    if (body.p >= body.end) {
        *failed = 1;
        return NULL;
    }
    int attributes = (int8_t)*body.p++;
    int64_t timestamp_delta, offset_delta;
    if (read_zigzag(&body, 10, &timestamp_delta) < 0 || read_zigzag(&body, 5, &offset_delta) < 0) {
        *failed = 1;
        return NULL;
    }
    long long offset, timestamp = max_timestamp;
    if (__builtin_add_overflow(base_offset, (long long)offset_delta, &offset) ||
        (!log_append &&
         __builtin_add_overflow(base_timestamp, (long long)timestamp_delta, &timestamp))) {
        *failed = 1;
        return NULL;
    }
    PyObject *key = read_nullable_bytes(&body, failed);
    if (key == NULL)
        return NULL;
    PyObject *value = read_nullable_bytes(&body, failed);
    if (value == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *headers = read_headers(&body, failed);
    if (headers == NULL || body.p != body.end) {
        if (headers != NULL)
            *failed = 1;
        Py_XDECREF(headers);
        Py_DECREF(key);
        Py_DECREF(value);
        return NULL;
    }
    return Py_BuildValue("(LLNNNin)", offset, timestamp, key, value, headers, attributes,
                         (Py_ssize_t)(start - data));
}

static PyObject *decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp, max_timestamp;
    int log_append;
    if (!PyArg_ParseTuple(args, "y*nLLLp", &view, &count, &base_offset, &base_timestamp,
                          &max_timestamp, &log_append))
        return NULL;
    const uint8_t *data = (const uint8_t *)view.buf;
    cursor_t c = {data, data + view.len};
    PyObject *out = PyList_New(0);
    int failed = 0;
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        PyObject *rec = read_record(&c, data, base_offset, base_timestamp, max_timestamp,
                                    log_append, &failed);
        if (rec == NULL || PyList_Append(out, rec) < 0) {
            Py_XDECREF(rec);
            Py_CLEAR(out);
        } else {
            Py_DECREF(rec);
        }
    }
    if (out != NULL && c.p != c.end)
        failed = 1;
    PyBuffer_Release(&view);
    if (failed) {
        Py_XDECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

/* _recordcols.c */
PyObject *record_columns(PyObject *self, PyObject *args);

static PyMethodDef methods[] = {
    {"scan_v2", scan_v2, METH_VARARGS,
     "scan_v2(buf, start, end, capacity, out_position, out_base_offset, out_batch_length, "
     "out_partition_leader_epoch, out_crc, out_attributes, out_last_offset_delta, "
     "out_base_timestamp, out_max_timestamp, out_producer_id, out_producer_epoch, "
     "out_base_sequence, out_records_count, out_crc_valid) -> (n, stop_position, stop_reason)\n\n"
     "Decode consecutive RecordBatch v2 headers into the out buffers (see module source)."},
    {"_crc32c", (PyCFunction)(void (*)(void))crc32c_py, METH_VARARGS | METH_KEYWORDS,
     "_crc32c(data, force_table=False) -> int: CRC-32C (Castagnoli) of data."},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, max_timestamp, "
     "log_append_time) -> list of (offset, timestamp, key, value, headers, attributes, start) "
     "or None (see module source)."},
    {"format_records", format_records, METH_VARARGS,
     "format_records(data, count, base_offset, base_timestamp, max_timestamp, "
     "log_append_time, min_offset, max_offset, stop_at_max, csv, prefix, mid_timestamp, "
     "mid_key, suffix_low, suffix_high, split_offset, separator) -> (bytes, written, stopped) "
     "or None: the records as JSON lines or CSV rows (see _recordfmt.c)."},
    {"format_batches", format_batches, METH_VARARGS,
     "format_batches(buf, n, position, size, attributes, records_count, base_offset, "
     "base_timestamp, max_timestamp, template, templates, min_offset, max_offset, csv, start, "
     "stop) -> (bytes, written, stopped, next_row): format_records over rows of batches "
     "(see _recordfmt.c)."},
    {"format_dump_batches", format_dump_batches, METH_VARARGS,
     "format_dump_batches(buf, columns, n, head, item_separator, min_offset, max_offset, "
     "start, stop, max_bytes) -> (bytes, next_row): dump's JSON items of uncompressed v2 "
     "batches (see _dumpfmt.c)."},
    {"format_dump_table", format_dump_table, METH_VARARGS,
     "format_dump_table(buf, columns, n, min_offset, max_offset, start, stop, names, justify, "
     "show_header, under, more, width) -> bytes or None: dump's table rows of a chunk of "
     "batches and their records, padded (see _dumptable.c)."},
    {"format_replay_table", format_replay_table, METH_VARARGS,
     "format_replay_table(lines, start, rows, pids, statuses, names, justify, show_header, "
     "width) -> (bytes, end) or None: replay's table rows padded (see _replaytable.c)."},
    {"record_columns", record_columns, METH_VARARGS,
     "record_columns(buf, n, position, size, attributes, records_count, base_offset, "
     "base_timestamp, max_timestamp, template, min_offset, max_offset, start, stop, "
     "max_bytes) -> (next_row, stopped, reason, buffers): the records of rows of batches as "
     "Arrow column buffers (see _recordcols.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_batchscan", "Columnar scanner for Kafka RecordBatch v2 headers.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__batchscan(void)
{
    crc_init();
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "STOP_END", STOP_END) < 0 ||
        PyModule_AddIntConstant(m, "STOP_CAPACITY", STOP_CAPACITY) < 0 ||
        PyModule_AddIntConstant(m, "STOP_NOT_V2", STOP_NOT_V2) < 0 ||
        PyModule_AddIntConstant(m, "STOP_SHORT_HEADER", STOP_SHORT_HEADER) < 0 ||
        PyModule_AddIntConstant(m, "STOP_BAD_LENGTH", STOP_BAD_LENGTH) < 0 ||
        PyModule_AddIntConstant(m, "STOP_PAST_END", STOP_PAST_END) < 0 ||
        PyModule_AddIntConstant(m, "HW_CRC", have_hw_crc) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
