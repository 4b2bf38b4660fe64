/*
 * kafkatx.formats._batchscan.record_columns -- the records of many v2 batches of a segment
 * decoded into Arrow column buffers (replay's records.parquet), no Python object per record.
 *
 *   record_columns(buf, n, position, size, attributes, records_count, base_offset,
 *                  base_timestamp, max_timestamp, template, min_offset, max_offset, start,
 *                  stop, max_bytes) -> (row, stopped, reason, buffers)
 *
 * Rows [start, stop) of n batches (the columns int64 arrays of n items, as format_batches
 * takes them) are decoded exactly as decode_records and format_batches do
 * (DefaultRecord#readFrom); the walk stops at the first row it leaves to the caller -- a
 * template index below 0, a compressed payload, a batch outside the buffer, records the
 * decoder refuses (reason 1) -- before a row once a text buffer holds max_bytes (reason 2), or
 * after the row where a record above max_offset was met (stopped; reason 0). `row` is where
 * it stopped; the records of a row left to the caller are not in the buffers. A record below
 * min_offset is skipped; after the first above max_offset nothing more is written (the rest
 * of that batch is still decoded, to be refused if it does not decode).
 *
 * `buffers` is a tuple of bytes, one item per record unless said:
 *   offsets, timestamps, rows (the batch row of each record) as int64;
 *   key: offsets (int32, records + 1), data, kind (uint8: 0 null, 1 text, 2 base64);
 *   value: offsets, data, kind, as the key's;
 *   headers: list offsets (int32, records + 1), then per header key offsets (int32,
 *   headers + 1), key data, value offsets, value data, value kind (uint8).
 * Text and base64 follow kafkatx.formats.record_batch.render_bytes (the JSON contract's key
 * and value), as _recordfmt.c writes them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "_varint.h"
#include "_recordfmt.h"

enum { OFFSETS, TIMESTAMPS, ROWS, KEY_OFFSETS, KEY_DATA, KEY_KIND, VALUE_OFFSETS, VALUE_DATA,
       VALUE_KIND, HEADER_OFFSETS, HKEY_OFFSETS, HKEY_DATA, HVALUE_OFFSETS, HVALUE_DATA,
       HVALUE_KIND, N_BUFFERS };

enum { LEFT_NONE, LEFT_TO_CALLER, LEFT_FULL };

typedef struct {
    out_t b[N_BUFFERS];
} columns_t;

static int put_raw(out_t *o, const void *p, Py_ssize_t n)
{
    if (n == 0)
        return 0;
    if (reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, p, (size_t)n);
    o->len += n;
    return 0;
}

static int put_i64(out_t *o, int64_t v) { return put_raw(o, &v, sizeof v); }

static int put_i32(out_t *o, Py_ssize_t v)
{
    int32_t x = (int32_t)v;
    return put_raw(o, &x, sizeof x);
}

static int put_u8(out_t *o, uint8_t v) { return put_raw(o, &v, 1); }

/* A nullable key or value as render_bytes renders it: its data, end offset and kind. */
static int put_bytes(columns_t *cols, int offsets, int data, int kind_col, const uint8_t *p,
                     Py_ssize_t n)
{
    out_t *d = &cols->b[data];
    uint8_t kind = FIELD_NULL;
    if (p != NULL) {
        int k = classify(p, n);
        if (k < 0)
            return -1;
        kind = k == FIELD_TEXT ? 1 : 2;
        if ((kind == 1 ? put_raw(d, p, n) : put_base64(d, p, n)) < 0)
            return -1;
    }
    return put_i32(&cols->b[offsets], d->len) < 0 ? -1 : put_u8(&cols->b[kind_col], kind);
}

static int read_span(cursor_t *c, const uint8_t **p, Py_ssize_t *n)
{
    int64_t len;
    if (read_zigzag(c, 5, &len) < 0 || len < -1 || len > c->end - c->p)
        return -1;
    *p = len < 0 ? NULL : c->p;
    *n = len < 0 ? 0 : (Py_ssize_t)len;
    if (len > 0)
        c->p += len;
    return 0;
}

/* The headers (count varint, then UTF-8 key and nullable value pairs): checked, and written
 * when `emit`. 0, 1 refused, -1 Python error. */
static int put_headers(columns_t *cols, cursor_t *c, int emit)
{
    int64_t count;
    if (read_zigzag(c, 5, &count) < 0 || count < 0 || count > c->end - c->p)
        return 1;
    for (int64_t i = 0; i < count; i++) {
        const uint8_t *key, *value;
        Py_ssize_t klen, vlen;
        int64_t n;
        if (read_zigzag(c, 5, &n) < 0 || n < 0 || n > c->end - c->p)
            return 1;
        key = c->p;
        klen = (Py_ssize_t)n;
        c->p += n;
        int error = 0;
        if (!valid_utf8(key, klen, &error))
            return error ? -1 : 1;
        if (read_span(c, &value, &vlen) < 0)
            return 1;
        if (!emit)
            continue;
        out_t *kd = &cols->b[HKEY_DATA];
        if (put_raw(kd, key, klen) < 0 || put_i32(&cols->b[HKEY_OFFSETS], kd->len) < 0 ||
            put_bytes(cols, HVALUE_OFFSETS, HVALUE_DATA, HVALUE_KIND, value, vlen) < 0)
            return -1;
    }
    return emit ? (put_i32(&cols->b[HEADER_OFFSETS], cols->b[HKEY_OFFSETS].len / 4 - 1) < 0
                   ? -1 : 0) : 0;
}

typedef struct {
    long long base_offset, base_timestamp, max_timestamp, min_offset, max_offset;
    int log_append;
    int64_t row;
} batch_t;

/* One record: 0 (written or skipped), 1 refused, -1 Python error. */
static int put_record(columns_t *cols, cursor_t *c, const batch_t *b, int *stopped)
{
    cursor_t body;
    long long offset, timestamp;
    if (read_record_head(c, b->base_offset, b->base_timestamp, b->max_timestamp, b->log_append,
                         &body, &offset, &timestamp))
        return 1;
    const uint8_t *key, *value;
    Py_ssize_t klen, vlen;
    if (read_span(&body, &key, &klen) < 0 || read_span(&body, &value, &vlen) < 0)
        return 1;
    int emit = !*stopped && offset >= b->min_offset && offset <= b->max_offset;
    if (!*stopped && offset > b->max_offset)
        *stopped = 1;
    if (emit && (put_i64(&cols->b[OFFSETS], offset) < 0 ||
                 put_i64(&cols->b[TIMESTAMPS], timestamp) < 0 ||
                 put_i64(&cols->b[ROWS], b->row) < 0 ||
                 put_bytes(cols, KEY_OFFSETS, KEY_DATA, KEY_KIND, key, klen) < 0 ||
                 put_bytes(cols, VALUE_OFFSETS, VALUE_DATA, VALUE_KIND, value, vlen) < 0))
        return -1;
    int r = put_headers(cols, &body, emit);
    if (r != 0)
        return r;
    return body.p != body.end;
}

/* The records section of one batch: 0, 1 refused (the buffers as before it), -1 error. */
static int put_section(columns_t *cols, const uint8_t *data, Py_ssize_t len, Py_ssize_t count,
                       const batch_t *b, int *stopped)
{
    Py_ssize_t marks[N_BUFFERS];
    for (int k = 0; k < N_BUFFERS; k++)
        marks[k] = cols->b[k].len;
    int stopped_here = *stopped;
    cursor_t c = {data, data + len};
    int result = 0;
    for (Py_ssize_t i = 0; result == 0 && i < count; i++)
        result = put_record(cols, &c, b, &stopped_here);
    if (result == 0 && c.p != c.end)
        result = 1;
    for (int k = KEY_DATA; result == 0 && k < N_BUFFERS; k++)
        if (cols->b[k].len > INT32_MAX)  /* beyond Arrow's int32 offsets: Python's */
            result = 1;
    if (result == 1)
        for (int k = 0; k < N_BUFFERS; k++)
            cols->b[k].len = marks[k];
    else if (result == 0)
        *stopped = stopped_here;
    return result;
}

PyObject *record_columns(PyObject *self, PyObject *args)
{
    enum { POSITION, SIZE, ATTRIBUTES, COUNT, BASE_OFFSET, BASE_TIMESTAMP, MAX_TIMESTAMP,
           TEMPLATE, N_COLUMNS };
    static const char *const names[N_COLUMNS] = {
        "position", "size", "attributes", "records_count", "base_offset", "base_timestamp",
        "max_timestamp", "template"};
    Py_buffer view, in[N_COLUMNS];
    Py_ssize_t n, start, stop, max_bytes;
    long long min_offset, max_offset;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*y*y*y*y*LLnnn", &view, &n, &in[POSITION],
                          &in[SIZE], &in[ATTRIBUTES], &in[COUNT], &in[BASE_OFFSET],
                          &in[BASE_TIMESTAMP], &in[MAX_TIMESTAMP], &in[TEMPLATE], &min_offset,
                          &max_offset, &start, &stop, &max_bytes))
        return NULL;
    const int64_t *col[N_COLUMNS];
    int result = 0;
    for (int k = 0; k < N_COLUMNS && result == 0; k++)
        if ((col[k] = int64_column(&in[k], n, "record_columns", names[k])) == NULL)
            result = -1;
    columns_t cols;
    memset(&cols, 0, sizeof cols);
    /* Arrow's offsets start at 0. */
    for (int k = KEY_OFFSETS; result == 0 && k < N_BUFFERS; k++)
        if ((k == KEY_OFFSETS || k == VALUE_OFFSETS || k == HEADER_OFFSETS ||
             k == HKEY_OFFSETS || k == HVALUE_OFFSETS) && put_i32(&cols.b[k], 0) < 0)
            result = -1;
    Py_ssize_t row = start < 0 ? 0 : start;
    int stopped = 0, left = LEFT_NONE;
    const uint8_t *buf = (const uint8_t *)view.buf;
    for (; result == 0 && !stopped && row < n && row < stop; row++) {
        int64_t pos = col[POSITION][row], size = col[SIZE][row];
        if (cols.b[KEY_DATA].len >= max_bytes || cols.b[VALUE_DATA].len >= max_bytes ||
            cols.b[HKEY_DATA].len >= max_bytes || cols.b[HVALUE_DATA].len >= max_bytes) {
            left = LEFT_FULL;
            break;
        }
        if (col[TEMPLATE][row] < 0 || (col[ATTRIBUTES][row] & COMPRESSION_BITS) != 0 ||
            pos < 0 || size < RECORDS_START || pos > view.len - size) {
            left = LEFT_TO_CALLER;
            break;
        }
        batch_t b = {col[BASE_OFFSET][row], col[BASE_TIMESTAMP][row], col[MAX_TIMESTAMP][row],
                     min_offset, max_offset, (col[ATTRIBUTES][row] & LOG_APPEND_TIME_BIT) != 0,
                     row};
        result = put_section(&cols, buf + pos + RECORDS_START,
                             (Py_ssize_t)(size - RECORDS_START), (Py_ssize_t)col[COUNT][row],
                             &b, &stopped);
        if (result == 1) {
            result = 0;
            left = LEFT_TO_CALLER;
            break;
        }
    }
    PyObject *out = NULL;
    if (result == 0) {
        PyObject *buffers = PyTuple_New(N_BUFFERS);
        for (int k = 0; buffers != NULL && k < N_BUFFERS; k++) {
            PyObject *b = PyBytes_FromStringAndSize(cols.b[k].buf ? cols.b[k].buf : "",
                                                    cols.b[k].len);
            if (b == NULL)
                Py_CLEAR(buffers);
            else
                PyTuple_SET_ITEM(buffers, k, b);
        }
        if (buffers != NULL)
            out = Py_BuildValue("(nOiN)", row, stopped ? Py_True : Py_False, left, buffers);
    }
    for (int k = 0; k < N_BUFFERS; k++)
        PyMem_Free(cols.b[k].buf);
    PyBuffer_Release(&view);
    for (int k = 0; k < N_COLUMNS; k++)
        PyBuffer_Release(&in[k]);
    return out;
}
