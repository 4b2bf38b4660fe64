/*
 * kafkatx.formats._batchscan.format_dump_batches -- `kafkatx dump --records` JSON items of many
 * uncompressed v2 batches of a segment in one call: each batch's fields from the scan's header
 * columns, its records through _recordfmt.c's format_section, no Python object per batch.
 *
 *   format_dump_batches(buf, columns, n, head, item_separator, min_offset, max_offset,
 *                       start, stop, max_bytes) -> (bytes, next_row)
 *
 * `columns` is a C-contiguous int64 buffer of N_COLUMNS rows of n items (the order of the enum
 * below; kafkatx/analysis/dump_lines.py builds it). From row `start` up to `stop`, each batch
 * is written as kafkatx.analysis.dump's item of it, JSON-encoded as JsonWriter encodes it
 * (compact separators, ensure_ascii=False):
 *
 *   head BASE_OFFSET,"last_offset":...,"crc_valid":true[,"control":{"type":"COMMIT",
 *   "coordinator_epoch":E}],"records":[RECORD,...]}
 *
 * where `head` is the constant start `{"kind":"batch","file":"...","base_offset":` and each
 * RECORD is Record.to_dict's JSON (dump's RECORD_JSON templates) of a record whose offset is
 * within [min_offset, max_offset]. Items are joined by `item_separator`. It stops before the
 * first row it leaves to the caller -- a ROUTE of -1 (legacy entries, compressed payloads,
 * control batches other than a transaction marker: the caller's item for those), a batch
 * outside the buffer, records format_section refuses -- and after the first row that takes
 * the text past `max_bytes`; `next_row` is where it stopped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_recordfmt.h"
#include "_varint.h"

#define TRANSACTIONAL_BIT 0x10
#define CONTROL_BIT 0x20
#define DELETE_HORIZON_BIT 0x40

enum {
    POSITION, SIZE, ATTRIBUTES, COUNT, BASE_OFFSET, LAST_OFFSET, BASE_TIMESTAMP, MAX_TIMESTAMP,
    PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE, LAST_SEQUENCE, LEADER_EPOCH, CRC, CRC_VALID,
    CONTROL_TYPE, COORDINATOR_EPOCH, ROUTE, N_COLUMNS
};

/* A literal, then a number: `,"name":V`. */
#define PUT_FIELD(o, lit, v) (PUT_LIT((o), lit) < 0 || put_ll((o), (v)) < 0)
#define PUT_BOOL(o, b) ((b) ? PUT_LIT((o), "true") : PUT_LIT((o), "false"))

/* The batch's fields after `head` up to `"records":[` (0 or -1). */
static int put_batch_fields(out_t *o, const int64_t *col, Py_ssize_t n, Py_ssize_t row)
{
#define AT(k) (col[(Py_ssize_t)(k) * n + row])
    int64_t attributes = AT(ATTRIBUTES), control = AT(CONTROL_TYPE);
    if (put_ll(o, AT(BASE_OFFSET)) < 0 ||
        PUT_FIELD(o, ",\"last_offset\":", AT(LAST_OFFSET)) ||
        PUT_FIELD(o, ",\"count\":", AT(COUNT)) ||
        PUT_FIELD(o, ",\"producer_id\":", AT(PRODUCER_ID)) ||
        PUT_FIELD(o, ",\"producer_epoch\":", AT(PRODUCER_EPOCH)) ||
        PUT_FIELD(o, ",\"base_sequence\":", AT(BASE_SEQUENCE)) ||
        PUT_FIELD(o, ",\"last_sequence\":", AT(LAST_SEQUENCE)) ||
        PUT_FIELD(o, ",\"partition_leader_epoch\":", AT(LEADER_EPOCH)) ||
        PUT_LIT(o, ",\"is_transactional\":") < 0 ||
        PUT_BOOL(o, attributes & TRANSACTIONAL_BIT) < 0 ||
        PUT_LIT(o, ",\"is_control\":") < 0 || PUT_BOOL(o, attributes & CONTROL_BIT) < 0 ||
        PUT_FIELD(o, ",\"position\":", AT(POSITION)) ||
        PUT_FIELD(o, ",\"size\":", AT(SIZE)) ||
        PUT_LIT(o, ",\"magic\":2,\"compression\":\"none\",\"timestamp_type\":") < 0 ||
        ((attributes & LOG_APPEND_TIME_BIT) ? PUT_LIT(o, "\"LogAppendTime\"")
                                            : PUT_LIT(o, "\"CreateTime\"")) < 0 ||
        PUT_FIELD(o, ",\"base_timestamp\":", AT(BASE_TIMESTAMP)) ||
        PUT_FIELD(o, ",\"max_timestamp\":", AT(MAX_TIMESTAMP)) ||
        PUT_LIT(o, ",\"delete_horizon_ms\":") < 0 ||
        ((attributes & DELETE_HORIZON_BIT) ? put_ll(o, AT(BASE_TIMESTAMP))
                                           : PUT_LIT(o, "null")) < 0 ||
        PUT_FIELD(o, ",\"crc\":", AT(CRC)) ||
        PUT_LIT(o, ",\"crc_valid\":") < 0 || PUT_BOOL(o, AT(CRC_VALID)) < 0)
        return -1;
    /* ControlType ABORT (0) and COMMIT (1): the only control batches given a ROUTE here. */
    if (control >= 0 &&
        ((control == 1 ? PUT_LIT(o, ",\"control\":{\"type\":\"COMMIT\"")
                       : PUT_LIT(o, ",\"control\":{\"type\":\"ABORT\"")) < 0 ||
         PUT_FIELD(o, ",\"coordinator_epoch\":", AT(COORDINATOR_EPOCH)) ||
         PUT_LIT(o, "}") < 0))
        return -1;
    return PUT_LIT(o, ",\"records\":[");
#undef AT
}

/* kafkatx.formats.record_format.RECORD_JSON, as C strings. */
static const char RECORD_PREFIX[] = "{\"offset\":", RECORD_MID_TIMESTAMP[] = ",\"timestamp\":",
                  RECORD_MID_KEY[] = ",", RECORD_SUFFIX[] = "}", RECORD_SEPARATOR[] = ",";
#define TEXT(s) {(s), (Py_ssize_t)(sizeof(s) - 1)}

PyObject *format_dump_batches(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view, columns, head, separator;
    Py_ssize_t n, start, stop, max_bytes;
    window_t w = {0, 0, 0, MODE_JSON};
    if (!PyArg_ParseTuple(args, "y*y*ny*y*LLnnn", &view, &columns, &n, &head, &separator,
                          &w.min_offset, &w.max_offset, &start, &stop, &max_bytes))
        return NULL;
    PyObject *out = NULL;
    if (n < 0 || columns.len != (Py_ssize_t)N_COLUMNS * n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "format_dump_batches: columns hold %zd bytes, not "
                     "%d x %zd int64", columns.len, N_COLUMNS, n);
        goto done;
    }
    const int64_t *col = (const int64_t *)columns.buf;
    const uint8_t *buf = (const uint8_t *)view.buf;
    const templates_t t = {TEXT(RECORD_PREFIX), TEXT(RECORD_MID_TIMESTAMP), TEXT(RECORD_MID_KEY),
                           TEXT(RECORD_SUFFIX), TEXT(RECORD_SUFFIX), TEXT(RECORD_SEPARATOR),
                           0};
    out_t o = {NULL, 0, 0}, scratch = {NULL, 0, 0};
    Py_ssize_t row = start < 0 ? 0 : start, written = 0;
    int result = 0;
    for (; row < n && row < stop && o.len < max_bytes; row++) {
#define AT(k) (col[(Py_ssize_t)(k) * n + row])
        int64_t pos = AT(POSITION), size = AT(SIZE);
        if (AT(ROUTE) < 0 || (AT(ATTRIBUTES) & COMPRESSION_BITS) != 0 || pos < 0 ||
            size < RECORDS_START || pos > view.len - size)
            break;
        Py_ssize_t mark = o.len;
        int stopped = 0;
        if ((mark && put(&o, separator.buf, separator.len) < 0) ||
            put(&o, head.buf, head.len) < 0 || put_batch_fields(&o, col, n, row) < 0) {
            result = -1;
            break;
        }
        result = format_section(buf + pos + RECORDS_START, (Py_ssize_t)(size - RECORDS_START),
                                (Py_ssize_t)AT(COUNT), AT(BASE_OFFSET), AT(BASE_TIMESTAMP),
                                AT(MAX_TIMESTAMP), (AT(ATTRIBUTES) & LOG_APPEND_TIME_BIT) != 0,
                                &t, &w, &o, &scratch, &written, &stopped);
#undef AT
        if (result == 1) {  /* refused: the caller's item for this batch */
            o.len = mark;
            result = 0;
            break;
        }
        if (result < 0 || PUT_LIT(&o, "]}") < 0) {
            result = -1;
            break;
        }
    }
    if (result == 0)
        out = Py_BuildValue("(y#n)", o.buf ? o.buf : "", o.len, row);
    PyMem_Free(o.buf);
    PyMem_Free(scratch.buf);
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&columns);
    PyBuffer_Release(&head);
    PyBuffer_Release(&separator);
    return out;
}

/*
 *   format_dump_table(buf, columns, n, min_offset, max_offset, start, stop, names, justify,
 *                     show_header, under, more, width) -> bytes or None
 *
 * `kafkatx dump --records`' table of the batches of rows [start, stop) of `columns` (as
 * above) on a console without colours: each batch's row, then a row per record within
 * [min_offset, max_offset] (none for a transaction marker), the cells kafkatx.cli.dump_cmd's
 * _batch_row and _record_rows make (`under` the arrow glyph, `more` shorten's ellipsis, each
 * as UTF-8 of one character), padded as kafkatx.cli.plain_table.plain_table_text pads them:
 * the columns' widths in characters (with the header `names`, joined by '\n', when
 * `show_header`), `justify` 'r'/'l' per column, two spaces between columns, a line per row.
 * None -- the caller's rich table then -- for anything the plain writer would not print as
 * it is or whose cells this does not make: a row ROUTE left to Python, compressed or out of
 * the buffer, records format_section refuses, timestamps iso_ms does not write as ISO, key,
 * value or header text other than printable ASCII without '[' (markup), a span rich may
 * take for an emoji code or a trailing space, a table wider than `width`.
 */
#define TABLE_COLUMNS 11

int end_cell(table_t *t, Py_ssize_t start, Py_ssize_t extra)
{
    if (t->n_cells == t->cap_cells) {
        Py_ssize_t cap = t->cap_cells ? 2 * t->cap_cells : 4096;
        cell_t *cells = PyMem_Realloc(t->cells, (size_t)cap * sizeof(cell_t));
        if (cells == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->cells = cells;
        t->cap_cells = cap;
    }
    Py_ssize_t len = t->text.len - start;
    t->cells[t->n_cells++] = (cell_t){start, len, len - extra};
    return 0;
}

static int put_range(out_t *o, long long a, long long b)
{
    if (put_ll(o, a) < 0)
        return -1;
    return a == b ? 0 : (PUT_LIT(o, "..") < 0 || put_ll(o, b) < 0) ? -1 : 0;
}

static int printable_ascii(const uint8_t *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7E)
            return 0;
    return 1;
}

/* Characters of the UTF-8 text of `b`. */
static Py_ssize_t chars_of(const Py_buffer *b)
{
    Py_ssize_t chars = 0;
    for (Py_ssize_t i = 0; i < b->len; i++)
        chars += (((const uint8_t *)b->buf)[i] & 0xC0) != 0x80;
    return chars;
}

/* shorten(TEXT, width) of printable ASCII p[0:n] (0, -1 Python error); `extra` counts the
 * bytes of `more` beyond its characters. */
static int put_short(out_t *o, const uint8_t *p, Py_ssize_t n, Py_ssize_t width,
                     const Py_buffer *more, Py_ssize_t *extra)
{
    if (n <= width)
        return put(o, p, n) < 0 ? -1 : 0;
    Py_ssize_t chars = chars_of(more);
    if (put(o, p, width - chars) < 0 || put(o, more->buf, more->len) < 0)
        return -1;
    *extra += more->len - chars;
    return 0;
}

/* render_bytes' text of a key or value (null, printable ASCII or base64), shortened. */
static int put_bytes_cell(out_t *o, out_t *scratch, const uint8_t *p, int64_t n,
                          Py_ssize_t width, const Py_buffer *more, Py_ssize_t *extra)
{
    if (n < 0)
        return put_short(o, (const uint8_t *)"null", 4, width, more, extra);
    if (printable_ascii(p, (Py_ssize_t)n))
        return put_short(o, p, (Py_ssize_t)n, width, more, extra);
    int kind = classify(p, (Py_ssize_t)n);
    if (kind < 0)
        return -1;
    if (kind != FIELD_BINARY)
        return 1;  /* text beyond printable ASCII: rich's */
    scratch->len = 0;
    if (put_base64(scratch, p, (Py_ssize_t)n) < 0)
        return -1;
    return put_short(o, (const uint8_t *)scratch->buf, scratch->len, width, more, extra);
}

static int read_len(cursor_t *c, int64_t *n, const uint8_t **p)
{
    if (read_zigzag(c, 5, n) < 0 || *n < -1 || *n > c->end - c->p)
        return -1;
    *p = c->p;
    if (*n > 0)
        c->p += *n;
    return 0;
}

/* The record cell's text from its key on (0, 1 refused, -1 Python error). */
static int put_record_text(out_t *o, out_t *scratch, cursor_t *body, const Py_buffer *more,
                           Py_ssize_t *extra)
{
    int64_t klen, vlen, count;
    const uint8_t *key, *value;
    int r;
    if (read_len(body, &klen, &key) < 0 || read_len(body, &vlen, &value) < 0)
        return 1;
    if (PUT_LIT(o, "key=") < 0)
        return -1;
    if ((r = put_bytes_cell(o, scratch, key, klen, 40, more, extra)) != 0)
        return r;
    if (PUT_LIT(o, " value=") < 0)
        return -1;
    if ((r = put_bytes_cell(o, scratch, value, vlen, 100, more, extra)) != 0)
        return r;
    if (read_zigzag(body, 5, &count) < 0 || count < 0 || count > body->end - body->p)
        return 1;
    for (int64_t i = 0; i < count; i++) {
        if (read_len(body, &klen, &key) < 0 || klen < 0 || !printable_ascii(key, klen) ||
            read_len(body, &vlen, &value) < 0)
            return 1;
        if ((i ? PUT_LIT(o, ",") : PUT_LIT(o, " headers=")) < 0 || put(o, key, klen) < 0 ||
            PUT_LIT(o, "=") < 0)
            return -1;
        if ((r = put_bytes_cell(o, scratch, value, vlen, 20, more, extra)) != 0)
            return r;
    }
    return body->p == body->end ? 0 : 1;
}

/* Whether `ch` may be in an emoji name of rich's (its EMOJI keys' ASCII characters, any
 * case: rich looks the name up lowered). */
static int emoji_name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != 0 && strchr("!#&()*+-._", ch) != NULL);
}

/* Whether rich shows the record cell text[0:n] (printable ASCII and `more`'s bytes) as it
 * is: no '[' (markup), no trailing space, and no ':name:' rich may take for an emoji code --
 * of any two colons with only non-space between them, the part between holds a character no
 * emoji name has (a superset of the spans rich's _emoji_replace looks up). */
static int plain_cell(const char *text, Py_ssize_t n)
{
    Py_ssize_t colon = -1;
    int name = 0;  /* since that colon, only characters of emoji names */
    for (Py_ssize_t i = 0; i < n; i++) {
        char ch = text[i];
        if (ch == '[')
            return 0;
        if (ch == ':') {
            if (colon >= 0 && name)
                return 0;
            colon = i;
            name = 1;
        } else if (ch == ' ') {
            colon = -1;
        } else if (!emoji_name_char(ch)) {
            name = 0;
        }
    }
    return n == 0 || text[n - 1] != ' ';
}

/* The record rows of one batch's records section (0, 1 refused, -1 Python error). */
static int put_record_rows(table_t *t, out_t *scratch, const uint8_t *data, Py_ssize_t len,
                           Py_ssize_t count, long long base_offset, long long base_timestamp,
                           long long max_timestamp, int log_append, const window_t *w,
                           const Py_buffer *under, const Py_buffer *more)
{
    cursor_t c = {data, data + len};
    for (Py_ssize_t i = 0; i < count; i++) {
        cursor_t body;
        long long offset, timestamp;
        if (read_record_head(&c, base_offset, base_timestamp, max_timestamp, log_append, &body,
                             &offset, &timestamp))
            return 1;
        /* A record outside the window is read as one within it (format_section's checks),
         * then taken back out. */
        int shown = offset >= w->min_offset && offset <= w->max_offset;
        if (shown && (timestamp < 0 || timestamp >= ISO_BELOW))
            return 1;
        Py_ssize_t mark = t->text.len, marked_cells = t->n_cells;
        Py_ssize_t start = t->text.len;
        if (put(&t->text, under->buf, under->len) < 0 || PUT_LIT(&t->text, " ") < 0 ||
            put_ll(&t->text, offset) < 0 || end_cell(t, start, under->len - chars_of(under)) < 0)
            return -1;
        for (int k = 1; k < 8; k++)
            if (end_cell(t, t->text.len, 0) < 0)
                return -1;
        start = t->text.len;
        if (put_iso_ms(&t->text, shown ? timestamp : 0) < 0 || end_cell(t, start, 0) < 0 ||
            end_cell(t, t->text.len, 0) < 0)
            return -1;
        Py_ssize_t extra = 0;
        start = t->text.len;
        int r = put_record_text(&t->text, scratch, &body, more, &extra);
        if (r != 0)
            return r;
        if (!shown) {
            t->text.len = mark;
            t->n_cells = marked_cells;
            continue;
        }
        if (!plain_cell(t->text.buf + start, t->text.len - start))
            return 1;
        if (end_cell(t, start, extra) < 0)
            return -1;
    }
    return c.p == c.end ? 0 : 1;
}

/* The batch row of column row `row` (0, 1 refused, -1 Python error). */
static int put_batch_row(table_t *t, const int64_t *col, Py_ssize_t n, Py_ssize_t row)
{
#define AT(k) (col[(Py_ssize_t)(k) * n + row])
    out_t *o = &t->text;
    int64_t attributes = AT(ATTRIBUTES), control = AT(CONTROL_TYPE);
    if (AT(MAX_TIMESTAMP) < 0 || AT(MAX_TIMESTAMP) >= ISO_BELOW)
        return 1;
    Py_ssize_t s = o->len;
    if (put_range(o, AT(BASE_OFFSET), AT(LAST_OFFSET)) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if (put_ll(o, AT(COUNT)) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if ((AT(PRODUCER_ID) < 0 ? PUT_LIT(o, "-")
         : (put_ll(o, AT(PRODUCER_ID)) < 0 || PUT_LIT(o, "/") < 0 ||
            put_ll(o, AT(PRODUCER_EPOCH)) < 0) ? -1 : 0) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if ((AT(BASE_SEQUENCE) < 0 ? PUT_LIT(o, "-")
         : (put_ll(o, AT(BASE_SEQUENCE)) < 0 || PUT_LIT(o, "..") < 0 ||
            put_ll(o, AT(LAST_SEQUENCE)) < 0) ? -1 : 0) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    int txn = (attributes & TRANSACTIONAL_BIT) != 0, ctl = (attributes & CONTROL_BIT) != 0;
    if ((txn && ctl ? PUT_LIT(o, "txn,ctrl") : txn ? PUT_LIT(o, "txn")
         : ctl ? PUT_LIT(o, "ctrl") : PUT_LIT(o, "-")) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if (put_ll(o, AT(POSITION)) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if (put_ll(o, AT(SIZE)) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if (PUT_LIT(o, "v2 none") < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if (put_iso_ms(o, AT(MAX_TIMESTAMP)) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;  /* "[bold red]BAD[/]" is BAD without colours */
    if ((AT(CRC_VALID) ? PUT_LIT(o, "ok") : PUT_LIT(o, "BAD")) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    s = o->len;
    if ((control < 0 ? PUT_LIT(o, "-")
         : ((control == 1 ? PUT_LIT(o, "COMMIT coord_epoch=")
                          : PUT_LIT(o, "ABORT coord_epoch=")) < 0 ||
            put_ll(o, AT(COORDINATOR_EPOCH)) < 0) ? -1 : 0) < 0 || end_cell(t, s, 0) < 0)
        return -1;
    return 0;
#undef AT
}

static int put_spaces(out_t *o, Py_ssize_t k)
{
    if (k <= 0)
        return 0;
    if (reserve(o, k) < 0)
        return -1;
    memset(o->buf + o->len, ' ', (size_t)k);
    o->len += k;
    return 0;
}

int put_lines(out_t *o, const table_t *t, int columns, const char *names,
              Py_ssize_t names_len, int show_header, const char *justify, Py_ssize_t width)
{
    cell_t header[MAX_TABLE_COLUMNS];
    Py_ssize_t widths[MAX_TABLE_COLUMNS] = {0};
    const char *p = names, *end = names + names_len;
    if (columns < 1 || columns > MAX_TABLE_COLUMNS)
        return 1;
    for (int k = 0; k < columns; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            nl = end;
        header[k] = (cell_t){p - names, nl - p, nl - p};
        if (show_header)
            widths[k] = nl - p;
        p = nl < end ? nl + 1 : end;
    }
    for (Py_ssize_t i = 0; i < t->n_cells; i++)
        if (t->cells[i].chars > widths[i % columns])
            widths[i % columns] = t->cells[i].chars;
    Py_ssize_t total = 2 * (columns - 1);
    for (int k = 0; k < columns; k++) {
        if (widths[k] == 0)
            return 1;
        total += widths[k];
    }
    if (total > width)
        return 1;
    Py_ssize_t rows = t->n_cells / columns;
    for (Py_ssize_t r = show_header ? -1 : 0; r < rows; r++) {
        for (int k = 0; k < columns; k++) {
            const cell_t *c = r < 0 ? &header[k] : &t->cells[r * columns + k];
            const char *text = (r < 0 ? names : t->text.buf) + c->at;
            Py_ssize_t pad = widths[k] - c->chars;
            if ((k && PUT_LIT(o, "  ") < 0) ||
                (justify[k] == 'r' && put_spaces(o, pad) < 0) || put(o, text, c->len) < 0 ||
                (justify[k] != 'r' && put_spaces(o, pad) < 0))
                return -1;
        }
        if (PUT_LIT(o, "\n") < 0)
            return -1;
    }
    return 0;
}

PyObject *format_dump_table(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view, columns, names, justify, under, more;
    Py_ssize_t n, start, stop, width;
    int show_header;
    window_t w = {0, 0, 0, MODE_JSON};
    if (!PyArg_ParseTuple(args, "y*y*nLLnny*y*py*y*n", &view, &columns, &n, &w.min_offset,
                          &w.max_offset, &start, &stop, &names, &justify, &show_header, &under,
                          &more, &width))
        return NULL;
    PyObject *out = NULL;
    table_t t = {{NULL, 0, 0}, NULL, 0, 0};
    out_t lines = {NULL, 0, 0}, scratch = {NULL, 0, 0}, json = {NULL, 0, 0};
    int result = 0;
    if (n < 0 || columns.len != (Py_ssize_t)N_COLUMNS * n * (Py_ssize_t)sizeof(int64_t) ||
        justify.len != TABLE_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "format_dump_table: columns or justify of the "
                        "wrong size");
        goto done;
    }
    const int64_t *col = (const int64_t *)columns.buf;
    const uint8_t *buf = (const uint8_t *)view.buf;
    const templates_t tpl = {TEXT(RECORD_PREFIX), TEXT(RECORD_MID_TIMESTAMP),
                             TEXT(RECORD_MID_KEY), TEXT(RECORD_SUFFIX), TEXT(RECORD_SUFFIX),
                             TEXT(RECORD_SEPARATOR), 0};
    if (start < 0 || stop > n || start >= stop)
        result = 1;
    for (Py_ssize_t row = start; result == 0 && row < stop; row++) {
#define AT(k) (col[(Py_ssize_t)(k) * n + row])
        int64_t pos = AT(POSITION), size = AT(SIZE);
        if (AT(ROUTE) < 0 || (AT(ATTRIBUTES) & COMPRESSION_BITS) != 0 || pos < 0 ||
            size < RECORDS_START || pos > view.len - size || AT(COUNT) < 0) {
            result = 1;
            break;
        }
        const uint8_t *section = buf + pos + RECORDS_START;
        Py_ssize_t len = (Py_ssize_t)(size - RECORDS_START), written = 0;
        int stopped = 0, log_append = (AT(ATTRIBUTES) & LOG_APPEND_TIME_BIT) != 0;
        result = put_batch_row(&t, col, n, row);
        /* A marker's records (no rows): those the JSON path takes, and no others; a data
         * batch's rows are read with at least format_section's checks. */
        json.len = 0;
        if (result == 0 && (AT(ATTRIBUTES) & CONTROL_BIT))
            result = format_section(section, len, (Py_ssize_t)AT(COUNT), AT(BASE_OFFSET),
                                    AT(BASE_TIMESTAMP), AT(MAX_TIMESTAMP), log_append, &tpl,
                                    &w, &json, &scratch, &written, &stopped);
        else if (result == 0)
            result = put_record_rows(&t, &scratch, section, len, (Py_ssize_t)AT(COUNT),
                                     AT(BASE_OFFSET), AT(BASE_TIMESTAMP), AT(MAX_TIMESTAMP),
                                     log_append, &w, &under, &more);
#undef AT
    }
    if (result == 0)
        result = put_lines(&lines, &t, TABLE_COLUMNS, names.buf, names.len, show_header,
                           justify.buf, width);
    if (result == 0)
        out = PyBytes_FromStringAndSize(lines.buf ? lines.buf : "", lines.len);
    else if (result == 1)
        out = Py_NewRef(Py_None);
    PyMem_Free(t.text.buf);
    PyMem_Free(t.cells);
    PyMem_Free(lines.buf);
    PyMem_Free(scratch.buf);
    PyMem_Free(json.buf);
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&columns);
    PyBuffer_Release(&names);
    PyBuffer_Release(&justify);
    PyBuffer_Release(&under);
    PyBuffer_Release(&more);
    return out;
}
