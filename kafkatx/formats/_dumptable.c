/*
 *   format_dump_table(buf, columns, n, min_offset, max_offset, start, stop, names, justify,
 *                     show_header, under, more, width) -> bytes or None
 *
 * `kafkatx dump --records`' table of the batches of rows [start, stop) of `columns` (those of
 * format_dump_batches, _dumpcols.h) on a console without colours: each batch's row, then a
 * row per record within [min_offset, max_offset] (none for a transaction marker), the cells
 * kafkatx.cli.dump_cmd's _batch_row and _record_rows make (`under` the arrow glyph, `more`
 * shorten's ellipsis, each as UTF-8 of one character), padded as
 * kafkatx.cli.plain_table.plain_table_text pads them: the columns' widths in characters (with
 * the header `names`, joined by '\n', when `show_header`), `justify` 'r'/'l' per column, two
 * spaces between columns, a line per row. None -- the caller's rich table then -- for
 * anything the plain writer would not print as it is or whose cells this does not make: a
 * row ROUTE left to Python, compressed or out of the buffer, records format_section refuses,
 * timestamps iso_ms does not write as ISO, key, value or header text other than printable
 * ASCII without '[' (markup), a span rich may take for an emoji code or a trailing space, a
 * table wider than `width`.
 *
 * The cells are written once into one buffer (`table_t`), the padded lines once into the
 * bytes object returned (its size known from the widths): the per-record work is the cells'
 * text, with the shared put/reserve of _recordfmt.c called only where a buffer must grow.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_recordfmt.h"
#include "_varint.h"

#include "_dumpcols.h"

#define TABLE_COLUMNS 11

/* Appends within this unit: the shared put/reserve (another unit, not inlined) only to grow. */
static inline int put_in(out_t *o, const void *p, Py_ssize_t n)
{
    if (o->len + n > o->cap && reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, p, (size_t)n);
    o->len += n;
    return 0;
}

#define PUT_IN(o, s) put_in((o), (s), (Py_ssize_t)(sizeof(s) - 1))

static int grow_cells(table_t *t, Py_ssize_t more)
{
    if (t->n_cells + more <= t->cap_cells)
        return 0;
    Py_ssize_t cap = t->cap_cells ? t->cap_cells : 4096;
    while (cap < t->n_cells + more)
        cap *= 2;
    cell_t *cells = PyMem_Realloc(t->cells, (size_t)cap * sizeof(cell_t));
    if (cells == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->cells = cells;
    t->cap_cells = cap;
    return 0;
}

int end_cell(table_t *t, Py_ssize_t start, Py_ssize_t extra)
{
    if (t->n_cells == t->cap_cells && grow_cells(t, 1) < 0)
        return -1;
    Py_ssize_t len = t->text.len - start;
    t->cells[t->n_cells++] = (cell_t){start, len, len - extra};
    return 0;
}

/* `k` empty cells at the end of the text. */
static int empty_cells(table_t *t, int k)
{
    if (grow_cells(t, k) < 0)
        return -1;
    for (int i = 0; i < k; i++)
        t->cells[t->n_cells++] = (cell_t){t->text.len, 0, 0};
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

/* `more` (shorten's ellipsis) and its characters. */
typedef struct {
    const Py_buffer *text;
    Py_ssize_t chars;
} glyph_t;

/* shorten(TEXT, width) of printable ASCII p[0:n] (0, -1 Python error); `extra` counts the
 * bytes of `more` beyond its characters. */
static int put_short(out_t *o, const uint8_t *p, Py_ssize_t n, Py_ssize_t width,
                     const glyph_t *more, Py_ssize_t *extra)
{
    if (n <= width)
        return put_in(o, p, n);
    if (put_in(o, p, width - more->chars) < 0 || put_in(o, more->text->buf, more->text->len) < 0)
        return -1;
    *extra += more->text->len - more->chars;
    return 0;
}

/* render_bytes' text of a key or value (null, printable ASCII or base64), shortened. */
static int put_bytes_cell(out_t *o, out_t *scratch, const uint8_t *p, int64_t n,
                          Py_ssize_t width, const glyph_t *more, Py_ssize_t *extra)
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
static int put_record_text(out_t *o, out_t *scratch, cursor_t *body, const glyph_t *more,
                           Py_ssize_t *extra)
{
    int64_t klen, vlen, count;
    const uint8_t *key, *value;
    int r;
    if (read_len(body, &klen, &key) < 0 || read_len(body, &vlen, &value) < 0)
        return 1;
    if (PUT_IN(o, "key=") < 0)
        return -1;
    if ((r = put_bytes_cell(o, scratch, key, klen, 40, more, extra)) != 0)
        return r;
    if (PUT_IN(o, " value=") < 0)
        return -1;
    if ((r = put_bytes_cell(o, scratch, value, vlen, 100, more, extra)) != 0)
        return r;
    if (read_zigzag(body, 5, &count) < 0 || count < 0 || count > body->end - body->p)
        return 1;
    for (int64_t i = 0; i < count; i++) {
        if (read_len(body, &klen, &key) < 0 || klen < 0 || !printable_ascii(key, klen) ||
            read_len(body, &vlen, &value) < 0)
            return 1;
        if ((i ? PUT_IN(o, ",") : PUT_IN(o, " headers=")) < 0 || put_in(o, key, klen) < 0 ||
            PUT_IN(o, "=") < 0)
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
 * emoji name has (a superset of the spans rich's _emoji_replace looks up). The characters
 * before the first colon cannot start such a span: the walk starts there. */
static int plain_cell(const char *text, Py_ssize_t n)
{
    if (n > 0 && text[n - 1] == ' ')
        return 0;
    if (n == 0 || memchr(text, '[', (size_t)n) != NULL)
        return n == 0;
    const char *first = memchr(text, ':', (size_t)n);
    if (first == NULL)
        return 1;
    int name = 0;  /* since the last colon, only characters of emoji names */
    for (const char *p = first, *end = text + n; p < end; p++) {
        char ch = *p;
        if (ch == ':') {
            if (name)
                return 0;
            name = 1;
        } else if (ch == ' ') {
            /* no span across a space: on from the next colon, as from the first */
            const char *next = memchr(p, ':', (size_t)(end - p));
            if (next == NULL)
                return 1;
            p = next;
            name = 1;
        } else if (!emoji_name_char(ch)) {
            name = 0;
        }
    }
    return 1;
}

/* iso_ms' text of the last second written (records of a batch mostly share it). */
typedef struct {
    long long second;
    char text[24];
} iso_cache_t;

static int put_iso(out_t *o, long long ms, iso_cache_t *cache)
{
    long long second = ms / 1000, milli = ms % 1000;
    if (second != cache->second) {
        out_t head = {cache->text, 0, (Py_ssize_t)sizeof cache->text};  /* room: no realloc */
        if (put_iso_ms(&head, ms) < 0)
            return -1;
        cache->second = second;
    }
    if (o->len + 24 > o->cap && reserve(o, 24) < 0)
        return -1;
    char *w = o->buf + o->len;
    memcpy(w, cache->text, 20);  /* YYYY-MM-DDTHH:MM:SS. */
    w[20] = (char)('0' + milli / 100);
    w[21] = (char)('0' + milli / 10 % 10);
    w[22] = (char)('0' + milli % 10);
    w[23] = 'Z';
    o->len += 24;
    return 0;
}

/* The record rows of one batch's records section (0, 1 refused, -1 Python error). */
static int put_record_rows(table_t *t, out_t *scratch, const uint8_t *data, Py_ssize_t len,
                           Py_ssize_t count, long long base_offset, long long base_timestamp,
                           long long max_timestamp, int log_append, const window_t *w,
                           const glyph_t *under, const glyph_t *more, iso_cache_t *iso)
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
        if (put_in(&t->text, under->text->buf, under->text->len) < 0 ||
            PUT_IN(&t->text, " ") < 0 || put_ll(&t->text, offset) < 0 ||
            end_cell(t, start, under->text->len - under->chars) < 0 || empty_cells(t, 7) < 0)
            return -1;
        start = t->text.len;
        if (put_iso(&t->text, shown ? timestamp : 0, iso) < 0 || end_cell(t, start, 0) < 0 ||
            empty_cells(t, 1) < 0)
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

/* How put_lines lays a table out: the header's cells, the columns' widths, and the bytes of
 * all its lines. */
typedef struct {
    cell_t header[MAX_TABLE_COLUMNS];
    Py_ssize_t widths[MAX_TABLE_COLUMNS];
    Py_ssize_t size;
} layout_t;

/* The layout of `t`'s lines (0), or 1 when a column is empty or the table is wider than
 * `width`. */
static int lay_out(layout_t *l, const table_t *t, int columns, const char *names,
                   Py_ssize_t names_len, int show_header, Py_ssize_t width)
{
    const char *p = names, *end = names + names_len;
    if (columns < 1 || columns > MAX_TABLE_COLUMNS)
        return 1;
    Py_ssize_t extra = 0;  /* bytes beyond characters, of every cell shown */
    for (int k = 0; k < columns; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            nl = end;
        l->header[k] = (cell_t){p - names, nl - p, nl - p};
        l->widths[k] = show_header ? nl - p : 0;
        p = nl < end ? nl + 1 : end;
    }
    Py_ssize_t rows = t->n_cells / columns;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const cell_t *row = t->cells + r * columns;
        for (int k = 0; k < columns; k++) {
            if (row[k].chars > l->widths[k])
                l->widths[k] = row[k].chars;
            extra += row[k].len - row[k].chars;
        }
    }
    Py_ssize_t line = 2 * (columns - 1) + 1;
    for (int k = 0; k < columns; k++) {
        if (l->widths[k] == 0)
            return 1;
        line += l->widths[k];
    }
    if (line - 1 > width)
        return 1;
    for (int k = 0; show_header && k < columns; k++)
        extra += l->header[k].len - l->header[k].chars;
    l->size = (rows + (show_header ? 1 : 0)) * line + extra;
    return 0;
}

/* The lines of `t` as laid out, into w[0:l->size]: each line spaces first, then each cell's
 * text at its place. */
static void write_lines(char *w, const layout_t *l, const table_t *t, int columns,
                        const char *names, int show_header, const char *justify)
{
    Py_ssize_t line = 2 * (columns - 1) + 1;
    for (int k = 0; k < columns; k++)
        line += l->widths[k];
    Py_ssize_t rows = t->n_cells / columns;
    for (Py_ssize_t r = show_header ? -1 : 0; r < rows; r++) {
        const cell_t *row = r < 0 ? l->header : t->cells + r * columns;
        const char *text = r < 0 ? names : t->text.buf;
        Py_ssize_t bytes = line;
        for (int k = 0; k < columns; k++)
            bytes += row[k].len - row[k].chars;
        memset(w, ' ', (size_t)(bytes - 1));
        w[bytes - 1] = '\n';
        char *at = w;
        for (int k = 0; k < columns; k++) {
            Py_ssize_t pad = l->widths[k] - row[k].chars;
            if (justify[k] == 'r')
                at += pad;
            if (row[k].len)
                memcpy(at, text + row[k].at, (size_t)row[k].len);
            at += row[k].len + 2;
            if (justify[k] != 'r')
                at += pad;
        }
        w += bytes;
    }
}

int put_lines(out_t *o, const table_t *t, int columns, const char *names,
              Py_ssize_t names_len, int show_header, const char *justify, Py_ssize_t width)
{
    layout_t l;
    int r = lay_out(&l, t, columns, names, names_len, show_header, width);
    if (r != 0)
        return r;
    if (reserve(o, l.size) < 0)
        return -1;
    write_lines(o->buf + o->len, &l, t, columns, names, show_header, justify);
    o->len += l.size;
    return 0;
}

/* Room for the cells and their text of batches [start, stop) at once (a guess from their
 * sizes and record counts: the buffers still grow past it). */
static int reserve_table(table_t *t, const int64_t *col, Py_ssize_t n, Py_ssize_t start,
                         Py_ssize_t stop)
{
    Py_ssize_t bytes = 0, records = 0;
    for (Py_ssize_t row = start; row < stop; row++) {
        bytes += (Py_ssize_t)col[(Py_ssize_t)SIZE * n + row];
        records += (Py_ssize_t)col[(Py_ssize_t)COUNT * n + row];
    }
    if (bytes < 0 || records < 0 || bytes > (1 << 26) || records > (1 << 22))
        return 0;  /* a guess only */
    return reserve(&t->text, 2 * bytes + 48 * records + 4096) < 0 ||
           grow_cells(t, TABLE_COLUMNS * (stop - start + records)) < 0 ? -1 : 0;
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
    out_t scratch = {NULL, 0, 0}, json = {NULL, 0, 0};
    int result = 0;
    if (n < 0 || columns.len != (Py_ssize_t)N_COLUMNS * n * (Py_ssize_t)sizeof(int64_t) ||
        justify.len != TABLE_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "format_dump_table: columns or justify of the "
                        "wrong size");
        goto done;
    }
    const int64_t *col = (const int64_t *)columns.buf;
    const uint8_t *buf = (const uint8_t *)view.buf;
    const templates_t tpl = DUMP_TEMPLATES;
    const glyph_t under_glyph = {&under, chars_of(&under)}, more_glyph = {&more, chars_of(&more)};
    iso_cache_t iso = {-1, {0}};
    if (start < 0 || stop > n || start >= stop)
        result = 1;
    else
        result = reserve_table(&t, col, n, start, stop);
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
                                     log_append, &w, &under_glyph, &more_glyph, &iso);
#undef AT
    }
    layout_t layout;
    if (result == 0)
        result = lay_out(&layout, &t, TABLE_COLUMNS, names.buf, names.len, show_header,
                         width);
    if (result == 0) {
        out = PyBytes_FromStringAndSize(NULL, layout.size);
        if (out != NULL)
            write_lines(PyBytes_AS_STRING(out), &layout, &t, TABLE_COLUMNS, names.buf,
                        show_header, justify.buf);
    } else if (result == 1) {
        out = Py_NewRef(Py_None);
    }
    PyMem_Free(t.text.buf);
    PyMem_Free(t.cells);
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
