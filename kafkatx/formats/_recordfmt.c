/*
 * kafkatx.formats._batchscan.format_records -- the records of a v2 batch written straight out
 * as JSON lines, CSV rows or replay's table rows, without a Python object per record.
 *
 *   format_records(data, count, base_offset, base_timestamp, max_timestamp, log_append_time,
 *                  min_offset, max_offset, stop_at_max, mode, prefix, mid_timestamp, mid_key,
 *                  suffix_low, suffix_high, split_offset, separator)
 *       -> (bytes, records_written, stopped) | None
 *
 *   format_batches(buf, n, position, size, attributes, records_count, base_offset,
 *                  base_timestamp, max_timestamp, template, templates, min_offset,
 *                  max_offset, mode, start, stop) -> (bytes, records_written, stopped, row)
 *
 * format_records over rows [start, stop) of n batches of a segment `buf` (the columns int64
 * arrays of n items; `size` the whole batch's; `template` an index into `templates`, tuples
 * of prefix, mid_timestamp, mid_key, suffix_low, suffix_high and split_offset), stopping at
 * the first row it leaves to the caller -- a template index of -1, a compressed payload, a
 * batch format_records refuses -- or after the row where a record above max_offset was met;
 * `row` is where it stopped (its records are not in the text).
 *
 * Decodes the records exactly as decode_records does (DefaultRecord#readFrom) and refuses
 * (None) every batch decode_records refuses, so the caller's fallback (the Python rendering
 * of decode_records' or construct's records) reports it. Each record whose offset is within
 * [min_offset, max_offset] is written as
 *
 *   [separator] prefix OFFSET mid_timestamp TIMESTAMP mid_key KEY VALUE HEADERS suffix
 *
 * where suffix is suffix_low for an offset below split_offset, else suffix_high. A record
 * below min_offset is skipped; the first record above max_offset sets `stopped` and, with
 * stop_at_max, ends the output (the rest of the batch is still decoded, to be refused if it
 * does not decode). The caller's templates carry everything constant in a batch (producer,
 * visibility, the view); KEY, VALUE and HEADERS follow kafkatx.formats.record_batch.
 * render_bytes (UTF-8 text when every character is printable or a tab, CR or LF; otherwise
 * base64 with a `_encoding` field) and json.dumps(ensure_ascii=False) for JSON:
 *
 *   JSON: "key":<null|"text"|"b64","key_encoding":"base64">,"value":...,
 *         "headers":[{"key":"k","value":...},...]
 *   CSV:  key,key_encoding,value,value_encoding,headers (the headers as json.dumps with its
 *         default ", " and ": " separators), each quoted as csv.writer's QUOTE_MINIMAL does
 *         (a field holding a comma, a quote or a LF is quoted, quotes doubled). A text field
 *         holding a CR is refused (None): csv's rule for it differs between Python versions.
 *   table: prefix OFFSET mid_timestamp ISO suffix (replay's table rows: ISO as iso_ms writes
 *         it, a batch with a timestamp outside [0, 2**42) ms refused; key, value and headers
 *         decoded and checked, not written).
 *
 * `mode` is 0 (JSON), 1 (CSV) or 2 (table); a bool is taken for the first two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "_varint.h"
#include "_recordfmt.h"

int reserve(out_t *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + more)
        cap *= 2;
    char *buf = PyMem_Realloc(o->buf, (size_t)cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = buf;
    o->cap = cap;
    return 0;
}

/* put, inlined where this unit writes (a literal's memcpy then is a move or two). */
static inline __attribute__((always_inline)) int put_in(out_t *o, const void *p, Py_ssize_t n)
{
    if (o->len + n > o->cap && reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, p, (size_t)n);
    o->len += n;
    return 0;
}

int put(out_t *o, const void *p, Py_ssize_t n)
{
    return put_in(o, p, n);
}

#undef PUT_LIT
#define PUT_LIT(o, s) put_in((o), (s), (Py_ssize_t)(sizeof(s) - 1))

static const char DIGIT_PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* put_ll, inlined where this unit writes: the digits written in place, two a step. */
static inline __attribute__((always_inline)) int put_ll_in(out_t *o, long long v)
{
    if (o->len + 20 > o->cap && reserve(o, 20) < 0)
        return -1;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int digits = 1;
    unsigned long long rest = u;
    for (; rest >= 10000; rest /= 10000)
        digits += 4;
    digits += (rest >= 10) + (rest >= 100) + (rest >= 1000);
    char *w = o->buf + o->len + (v < 0) + digits;
    o->len += (v < 0) + digits;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--w = DIGIT_PAIRS[d + 1];
        *--w = DIGIT_PAIRS[d];
    }
    if (u >= 10) {
        *--w = DIGIT_PAIRS[u * 2 + 1];
        *--w = DIGIT_PAIRS[u * 2];
    } else {
        *--w = (char)('0' + u);
    }
    if (v < 0)
        *--w = '-';
    return 0;
}

/* Decimal, as Python's int.__repr__ writes it. */
int put_ll(out_t *o, long long v)
{
    return put_ll_in(o, v);
}

/* render_bytes' choice for bytes that are not null: text iff valid UTF-8 whose characters are
 * all printable (str.isprintable) or a tab, CR or LF. -1 on a Python error. */
int classify(const uint8_t *p, Py_ssize_t n)
{
    int ascii = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        if (b >= 0x80)
            ascii = 0;
        else if ((b < 0x20 && b != '\t' && b != '\r' && b != '\n') || b == 0x7F)
            return FIELD_BINARY;  /* one character, not printable, whatever the rest holds */
    }
    if (ascii)
        return FIELD_TEXT;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
    if (text == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -1;
        PyErr_Clear();
        return FIELD_BINARY;
    }
    int kind = FIELD_TEXT;
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 ch = PyUnicode_READ_CHAR(text, i);
        if (ch >= 0x80 && !Py_UNICODE_ISPRINTABLE(ch)) {
            kind = FIELD_BINARY;
            break;
        }
    }
    Py_DECREF(text);
    return kind;
}

/* Whether p[0:n] is valid UTF-8 (header keys are strings: construct refuses anything else). */
int valid_utf8(const uint8_t *p, Py_ssize_t n, int *error)
{
    Py_ssize_t i = 0;
    while (i < n && p[i] < 0x80)
        i++;
    if (i == n)
        return 1;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
    if (text != NULL) {
        Py_DECREF(text);
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear();
    else
        *error = 1;
    return 0;
}

/* A JSON string body as json.dumps(ensure_ascii=False) writes it (valid UTF-8 input). */
static int put_json_text(out_t *o, const uint8_t *p, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (reserve(o, n * 6) < 0)
        return -1;
    char *w = o->buf + o->len;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        if (b >= 0x20 && b != '"' && b != '\\') {
            *w++ = (char)b;
            continue;
        }
        *w++ = '\\';
        switch (b) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        default:
            *w++ = 'u';
            *w++ = '0';
            *w++ = '0';
            *w++ = hex[b >> 4];
            *w++ = hex[b & 0xF];
        }
    }
    o->len = w - o->buf;
    return 0;
}

static const char BASE64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static char BASE64_PAIRS[2 * 4096];  /* the two characters of each 12 bits (filled once) */

int put_base64(out_t *o, const uint8_t *p, Py_ssize_t n)
{
    if (BASE64_PAIRS[0] == 0)
        for (int v = 0; v < 4096; v++) {
            BASE64_PAIRS[2 * v] = BASE64[v >> 6];
            BASE64_PAIRS[2 * v + 1] = BASE64[v & 63];
        }
    if (reserve(o, (n + 2) / 3 * 4) < 0)
        return -1;
    char *w = o->buf + o->len;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        memcpy(w, BASE64_PAIRS + 2 * (v >> 12), 2);
        memcpy(w + 2, BASE64_PAIRS + 2 * (v & 4095), 2);
        w += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        *w++ = BASE64[v >> 18];
        *w++ = BASE64[(v >> 12) & 63];
        *w++ = i + 1 < n ? BASE64[(v >> 6) & 63] : '=';
        *w++ = '=';
    }
    o->len = w - o->buf;
    return 0;
}

/* A CSV field as csv.writer (QUOTE_MINIMAL, delimiter ",", lineterminator "\n") writes it. */
static int put_csv_field(out_t *o, const char *p, Py_ssize_t n)
{
    int quote = 0;
    for (Py_ssize_t i = 0; i < n && !quote; i++)
        quote = p[i] == ',' || p[i] == '"' || p[i] == '\n';
    if (!quote)
        return put_in(o, p, n);
    if (reserve(o, 2 * n + 2) < 0)
        return -1;
    char *w = o->buf + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] == '"')
            *w++ = '"';
        *w++ = p[i];
    }
    *w++ = '"';
    o->len = w - o->buf;
    return 0;
}

typedef struct {
    const uint8_t *p;  /* NULL: null */
    Py_ssize_t n;
} span_t;

/* `"name":...` of a key, value or header value in JSON; ", " before "name_encoding" when
 * `spaced` (json.dumps' default separators, the CSV headers column). */
static inline __attribute__((always_inline)) int put_json_field(out_t *o, const char *name,
                                                               span_t s, int spaced)
{
    const char *colon = spaced ? "\": " : "\":";
    if (PUT_LIT(o, "\"") < 0 || put_in(o, name, (Py_ssize_t)strlen(name)) < 0 ||
        put_in(o, colon, (Py_ssize_t)strlen(colon)) < 0)
        return -1;
    if (s.p == NULL)
        return PUT_LIT(o, "null");
    int kind = classify(s.p, s.n);
    if (kind < 0 || PUT_LIT(o, "\"") < 0)
        return -1;
    if (kind == FIELD_TEXT)
        return put_json_text(o, s.p, s.n) < 0 ? -1 : PUT_LIT(o, "\"");
    if (put_base64(o, s.p, s.n) < 0 || PUT_LIT(o, "\"") < 0 ||
        put_in(o, spaced ? ", \"" : ",\"", spaced ? 3 : 2) < 0 ||
        put_in(o, name, (Py_ssize_t)strlen(name)) < 0)
        return -1;
    return spaced ? PUT_LIT(o, "_encoding\": \"base64\"") : PUT_LIT(o, "_encoding\":\"base64\"");
}

/* "key,key_encoding," (or the value's) in CSV; 1 when refused (a CR in text). */
static int put_csv_bytes(out_t *o, span_t s)
{
    if (s.p == NULL)
        return PUT_LIT(o, ",,");
    int kind = classify(s.p, s.n);
    if (kind < 0)
        return -1;
    if (kind == FIELD_TEXT) {
        if (memchr(s.p, '\r', (size_t)s.n) != NULL)
            return 1;
        return put_csv_field(o, (const char *)s.p, s.n) < 0 ? -1 : PUT_LIT(o, ",,");
    }
    return put_base64(o, s.p, s.n) < 0 ? -1 : PUT_LIT(o, ",base64,");
}

/* The headers array of a record (count varint, then UTF-8 key and nullable value pairs) as
 * JSON into `o`; 1 when the bytes are not the exact reader's, -1 on a Python error. */
static int put_headers(out_t *o, cursor_t *c, int spaced)
{
    int64_t count;
    if (read_zigzag(c, 5, &count) < 0 || count < 0 || count > c->end - c->p)
        return 1;
    if (PUT_LIT(o, "[") < 0)
        return -1;
    for (int64_t i = 0; i < count; i++) {
        int64_t klen, vlen;
        if (read_zigzag(c, 5, &klen) < 0 || klen < 0 || klen > c->end - c->p)
            return 1;
        const uint8_t *key = c->p;
        c->p += klen;
        int error = 0;
        if (!valid_utf8(key, (Py_ssize_t)klen, &error))
            return error ? -1 : 1;
        if (read_zigzag(c, 5, &vlen) < 0 || vlen < -1 || vlen > c->end - c->p)
            return 1;
        span_t value = {vlen < 0 ? NULL : c->p, vlen < 0 ? 0 : (Py_ssize_t)vlen};
        if (vlen > 0)
            c->p += vlen;
        if ((i && (spaced ? PUT_LIT(o, ", ") : PUT_LIT(o, ",")) < 0) ||
            (spaced ? PUT_LIT(o, "{\"key\": \"") : PUT_LIT(o, "{\"key\":\"")) < 0 ||
            put_json_text(o, key, (Py_ssize_t)klen) < 0 ||
            (spaced ? PUT_LIT(o, "\", ") : PUT_LIT(o, "\",")) < 0 ||
            put_json_field(o, "value", value, spaced) < 0 || PUT_LIT(o, "}") < 0)
            return -1;
    }
    return PUT_LIT(o, "]");
}

static int read_span(cursor_t *c, span_t *s)
{
    int64_t n;
    if (read_zigzag(c, 5, &n) < 0 || n < -1 || n > c->end - c->p)
        return -1;
    s->p = n < 0 ? NULL : c->p;
    s->n = n < 0 ? 0 : (Py_ssize_t)n;
    if (n > 0)
        c->p += n;
    return 0;
}

#define PUT_TEXT(o, t) put_in((o), (t).p, (t).n)

/* ISO-8601 UTC with milliseconds, as kafkatx.analysis.timefmt.iso_ms writes a timestamp in
 * [0, ISO_BELOW): civil-from-days (proleptic Gregorian) of the day count. */
#define ISO_BELOW (1LL << 42)  /* iso_ms' float seconds are exact to the ms below it */

int put_iso_ms(out_t *o, long long ms)
{
    long long days = ms / 86400000LL, in_day = ms % 86400000LL;
    long long z = days + 719468, era = z / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    long long day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    long long fields[7] = {year, month, day, in_day / 3600000, in_day / 60000 % 60,
                           in_day / 1000 % 60, in_day % 1000};
    static const int digits[7] = {4, 2, 2, 2, 2, 2, 3};
    static const char after[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
    if (reserve(o, 24) < 0)
        return -1;
    char *w = o->buf + o->len;
    for (int f = 0; f < 7; f++) {
        long long v = fields[f];
        for (int d = digits[f] - 1; d >= 0; d--) {
            w[d] = (char)('0' + v % 10);
            v /= 10;
        }
        w += digits[f];
        *w++ = after[f];
    }
    o->len += 24;
    return 0;
}

/* One record; 0 written or skipped, 1 refused, -1 Python error. `emit` 0: decode only.
 * `mode` MODE_JSON, MODE_CSV or MODE_TABLE (prefix OFFSET mid_timestamp ISO-TIMESTAMP suffix,
 * no key, value or headers written; a timestamp iso_ms does not write as ISO is refused). */
static int format_record(cursor_t *c, out_t *o, out_t *scratch, const templates_t *t,
                         long long base_offset, long long base_timestamp,
                         long long max_timestamp, int log_append, int mode, int emit,
                         long long *offset_out)
{
    int csv = mode == MODE_CSV;
    cursor_t body;
    long long offset, timestamp;
    if (read_record_head(c, base_offset, base_timestamp, max_timestamp, log_append, &body,
                         &offset, &timestamp))
        return 1;
    *offset_out = offset;
    span_t key, value;
    if (read_span(&body, &key) < 0 || read_span(&body, &value) < 0)
        return 1;
    if (emit && mode == MODE_TABLE) {
        if (timestamp < 0 || timestamp >= ISO_BELOW)
            return 1;
        if (PUT_TEXT(o, t->prefix) < 0 || put_ll_in(o, offset) < 0 ||
            PUT_TEXT(o, t->mid_timestamp) < 0 || put_iso_ms(o, timestamp) < 0)
            return -1;
    } else if (emit) {
        if (PUT_TEXT(o, t->prefix) < 0 || put_ll_in(o, offset) < 0 ||
            PUT_TEXT(o, t->mid_timestamp) < 0 || put_ll_in(o, timestamp) < 0 ||
            PUT_TEXT(o, t->mid_key) < 0)
            return -1;
        int r;
        if (csv) {
            r = put_csv_bytes(o, key);
            if (r == 0)
                r = put_csv_bytes(o, value);
        } else {
            r = put_json_field(o, "key", key, 0);
            if (r == 0 && PUT_LIT(o, ",") < 0)
                r = -1;
            if (r == 0)
                r = put_json_field(o, "value", value, 0);
            if (r == 0)
                r = PUT_LIT(o, ",\"headers\":");
        }
        if (r != 0)
            return r;
    }
    /* CSV quotes the headers' JSON as one field; a record not written is only checked. */
    out_t *h = (mode != MODE_JSON || !emit) ? scratch : o;
    if (h == scratch)
        scratch->len = 0;
    int r = put_headers(h, &body, csv);
    if (r != 0)
        return r;
    if (body.p != body.end)
        return 1;
    if (!emit)
        return 0;
    if (csv && put_csv_field(o, scratch->buf, scratch->len) < 0)
        return -1;
    return offset < t->split ? PUT_TEXT(o, t->suffix_low) : PUT_TEXT(o, t->suffix_high);
}

/* The records section of one batch appended to `o` (taken back out when refused): 0, 1
 * refused, -1 Python error; `written` and `stopped` updated. */
int format_section(const uint8_t *data, Py_ssize_t len, Py_ssize_t count,
                   long long base_offset, long long base_timestamp,
                   long long max_timestamp, int log_append, const templates_t *t,
                   const window_t *w, out_t *o, out_t *scratch, Py_ssize_t *written,
                   int *stopped)
{
    cursor_t c = {data, data + len};
    Py_ssize_t start = o->len, written_here = 0;
    int result = 0;
    for (Py_ssize_t i = 0; result == 0 && i < count; i++) {
        /* Whether to write is known only once the offset is: decode into the output, then
         * take the record back out when it falls outside the range. */
        Py_ssize_t mark = o->len;
        int emit = !(*stopped && w->stop_at_max);
        if (emit && written_here && PUT_TEXT(o, t->separator) < 0)
            return -1;
        long long offset = 0;
        result = format_record(&c, o, scratch, t, base_offset, base_timestamp, max_timestamp,
                               log_append, w->mode, emit, &offset);
        if (result != 0 || !emit)
            continue;
        if (offset < w->min_offset) {
            o->len = mark;
        } else if (offset > w->max_offset) {
            o->len = mark;
            *stopped = 1;
        } else {
            written_here++;
        }
    }
    if (result == 0 && c.p != c.end)
        result = 1;
    if (result == 1)
        o->len = start;
    else if (result == 0)
        *written += written_here;
    return result;
}

static PyObject *finish(out_t *o, out_t *scratch, int result, PyObject *value)
{
    PyObject *out = NULL;
    if (result == 0)
        out = value;
    else if (result == 1)
        out = Py_NewRef(Py_None);
    PyMem_Free(o->buf);
    PyMem_Free(scratch->buf);
    return out;
}

static text_t text_of(const Py_buffer *b)
{
    text_t t = {(const char *)b->buf, b->len};
    return t;
}

PyObject *format_records(PyObject *self, PyObject *args)
{
    Py_buffer view, prefix, mid_timestamp, mid_key, suffix_low, suffix_high, separator;
    Py_ssize_t count;
    long long base_offset, base_timestamp, max_timestamp, split;
    int log_append;
    window_t w;
    if (!PyArg_ParseTuple(args, "y*nLLLpLLpiy*y*y*y*y*Ly*", &view, &count, &base_offset,
                          &base_timestamp, &max_timestamp, &log_append, &w.min_offset,
                          &w.max_offset, &w.stop_at_max, &w.mode, &prefix, &mid_timestamp,
                          &mid_key, &suffix_low, &suffix_high, &split, &separator))
        return NULL;
    templates_t t = {text_of(&prefix), text_of(&mid_timestamp), text_of(&mid_key),
                     text_of(&suffix_low), text_of(&suffix_high), text_of(&separator), split};
    out_t o = {NULL, 0, 0}, scratch = {NULL, 0, 0};
    Py_ssize_t written = 0;
    int stopped = 0;
    int result = format_section((const uint8_t *)view.buf, view.len, count, base_offset,
                                base_timestamp, max_timestamp, log_append, &t, &w, &o,
                                &scratch, &written, &stopped);
    PyObject *value = result != 0 ? NULL : Py_BuildValue(
        "(y#nO)", o.buf ? o.buf : "", o.len, written, stopped ? Py_True : Py_False);
    PyObject *out = finish(&o, &scratch, result, value);
    PyBuffer_Release(&view);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&mid_timestamp);
    PyBuffer_Release(&mid_key);
    PyBuffer_Release(&suffix_low);
    PyBuffer_Release(&suffix_high);
    PyBuffer_Release(&separator);
    return out;
}

const int64_t *int64_column(Py_buffer *b, Py_ssize_t n, const char *function, const char *name)
{
    if (b->len != n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "%s: %s holds %zd bytes, not %zd int64", function,
                     name, b->len, n);
        return NULL;
    }
    return (const int64_t *)b->buf;
}

PyObject *format_batches(PyObject *self, PyObject *args)
{
    enum { POSITION, SIZE, ATTRIBUTES, COUNT, BASE_OFFSET, BASE_TIMESTAMP, MAX_TIMESTAMP,
           TEMPLATE, N_COLUMNS };
    static const char *const names[N_COLUMNS] = {
        "position", "size", "attributes", "records_count", "base_offset", "base_timestamp",
        "max_timestamp", "template"};
    Py_buffer view, cols[N_COLUMNS];
    PyObject *templates;
    Py_ssize_t n, start, stop;
    window_t w = {0, 0, 1, 0};
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*y*y*y*y*O!LLinn", &view, &n, &cols[POSITION],
                          &cols[SIZE], &cols[ATTRIBUTES], &cols[COUNT], &cols[BASE_OFFSET],
                          &cols[BASE_TIMESTAMP], &cols[MAX_TIMESTAMP], &cols[TEMPLATE],
                          &PyTuple_Type, &templates, &w.min_offset, &w.max_offset, &w.mode,
                          &start, &stop))
        return NULL;
    const int64_t *col[N_COLUMNS];
    int ok = 1;
    for (int k = 0; k < N_COLUMNS && ok; k++)
        ok = (col[k] = int64_column(&cols[k], n, "format_batches", names[k])) != NULL;
    Py_ssize_t n_templates = PyTuple_GET_SIZE(templates);
    templates_t *ts = ok ? PyMem_Calloc((size_t)n_templates + 1, sizeof(templates_t)) : NULL;
    for (Py_ssize_t k = 0; ts != NULL && k < n_templates; k++) {
        PyObject *tt = PyTuple_GET_ITEM(templates, k);
        text_t *parts = &ts[k].prefix;
        if (!PyTuple_Check(tt) || PyTuple_GET_SIZE(tt) != 6) {
            PyErr_SetString(PyExc_TypeError, "format_batches: a template is 5 bytes and an int");
            PyMem_Free(ts);
            ts = NULL;
            break;
        }
        for (int part = 0; part < 5 && ts != NULL; part++) {
            PyObject *b = PyTuple_GET_ITEM(tt, part);
            if (!PyBytes_Check(b)) {
                PyErr_SetString(PyExc_TypeError, "format_batches: template parts are bytes");
                PyMem_Free(ts);
                ts = NULL;
                break;
            }
            parts[part].p = PyBytes_AS_STRING(b);
            parts[part].n = PyBytes_GET_SIZE(b);
        }
        if (ts != NULL) {
            ts[k].separator.p = "";
            ts[k].split = PyLong_AsLongLong(PyTuple_GET_ITEM(tt, 5));
            if (ts[k].split == -1 && PyErr_Occurred()) {
                PyMem_Free(ts);
                ts = NULL;
            }
        }
    }
    out_t o = {NULL, 0, 0}, scratch = {NULL, 0, 0};
    Py_ssize_t written = 0, row = start < 0 ? 0 : start;
    int stopped = 0, result = ts == NULL ? -1 : 0;
    const uint8_t *buf = (const uint8_t *)view.buf;
    for (; result == 0 && !stopped && row < n && row < stop; row++) {
        int64_t k = col[TEMPLATE][row], pos = col[POSITION][row], size = col[SIZE][row];
        /* Left to the caller: no template (its records are classified one by one), a
         * compressed payload, a batch outside the buffer, records the decoder refuses. */
        if (k < 0 || k >= n_templates || (col[ATTRIBUTES][row] & COMPRESSION_BITS) != 0 ||
            pos < 0 || size < RECORDS_START || pos > view.len - size)
            break;
        result = format_section(buf + pos + RECORDS_START, (Py_ssize_t)(size - RECORDS_START),
                                (Py_ssize_t)col[COUNT][row], col[BASE_OFFSET][row],
                                col[BASE_TIMESTAMP][row], col[MAX_TIMESTAMP][row],
                                (col[ATTRIBUTES][row] & LOG_APPEND_TIME_BIT) != 0, &ts[k], &w,
                                &o, &scratch, &written, &stopped);
        if (result == 1) {
            result = 0;
            break;
        }
    }
    PyObject *value = result != 0 ? NULL : Py_BuildValue(
        "(y#nOn)", o.buf ? o.buf : "", o.len, written, stopped ? Py_True : Py_False, row);
    PyObject *out = finish(&o, &scratch, result, value);
    PyMem_Free(ts);
    PyBuffer_Release(&view);
    for (int k = 0; k < N_COLUMNS; k++)
        PyBuffer_Release(&cols[k]);
    return out;
}
