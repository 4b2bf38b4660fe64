/*
 * What _recordfmt.c shares with the other record writers of the extension (_recordcols.c,
 * _dumpfmt.c, _dumptable.c, _replaytable.c): a growable output buffer, render_bytes' choice of
 * text or base64, and the records section of one batch written through templates.
 */
#ifndef KAFKATX_RECORDFMT_H
#define KAFKATX_RECORDFMT_H

#include <Python.h>
#include <stdint.h>

/* Shared within the extension only: hidden symbols are called directly and may be inlined
 * (an exported one is called through the PLT, and -fPIC assumes it may be interposed). */
#if defined(__GNUC__) || defined(__clang__)
#define KTX_INTERNAL __attribute__((visibility("hidden")))
#else
#define KTX_INTERNAL
#endif

#define RECORDS_START 61        /* the v2 batch header: records follow it */
#define COMPRESSION_BITS 0x07
#define LOG_APPEND_TIME_BIT 0x08

typedef struct {
    char *buf;
    Py_ssize_t len;
    Py_ssize_t cap;
} out_t;

enum { FIELD_NULL, FIELD_TEXT, FIELD_BINARY };

typedef struct {
    const char *p;
    Py_ssize_t n;
} text_t;

typedef struct {
    text_t prefix, mid_timestamp, mid_key, suffix_low, suffix_high, separator;
    long long split;
} templates_t;

typedef struct {
    long long min_offset, max_offset;
    int stop_at_max, mode;
} window_t;

enum { MODE_JSON, MODE_CSV, MODE_TABLE };

/* A string literal appended to `o`. */
#define PUT_LIT(o, s) put((o), (s), (Py_ssize_t)(sizeof(s) - 1))

/* Room for `more` bytes after o->len (-1 and MemoryError when there is none). */
KTX_INTERNAL int reserve(out_t *o, Py_ssize_t more);
/* The int64 column `name` of `function`'s arguments: n items, or ValueError and NULL. */
KTX_INTERNAL const int64_t *int64_column(Py_buffer *b, Py_ssize_t n, const char *function,
                                         const char *name);
/* `n` bytes appended to `o` (0 or -1). */
KTX_INTERNAL int put(out_t *o, const void *p, Py_ssize_t n);
/* `v` in decimal, as Python's int.__repr__ writes it (0 or -1). */
KTX_INTERNAL int put_ll(out_t *o, long long v);
/* render_bytes' choice for bytes that are not null: FIELD_TEXT or FIELD_BINARY; -1 on error. */
KTX_INTERNAL int classify(const uint8_t *p, Py_ssize_t n);
/* Whether p[0:n] is valid UTF-8 (*error set on a Python error). */
KTX_INTERNAL int valid_utf8(const uint8_t *p, Py_ssize_t n, int *error);
/* p[0:n] as base64 (b64encode's alphabet and padding) appended to o. */
KTX_INTERNAL int put_base64(out_t *o, const uint8_t *p, Py_ssize_t n);
/* `ms` in [0, ISO_BELOW) as kafkatx.analysis.timefmt.iso_ms writes it (24 bytes). */
#define ISO_BELOW (1LL << 42)
KTX_INTERNAL int put_iso_ms(out_t *o, long long ms);
/* The records section of one batch appended to `o` (taken back out when refused): 0, 1
 * refused, -1 Python error; `written` and `stopped` updated. See _recordfmt.c. */
KTX_INTERNAL int format_section(const uint8_t *data, Py_ssize_t len, Py_ssize_t count,
                                long long base_offset, long long base_timestamp,
                                long long max_timestamp, int log_append, const templates_t *t,
                                const window_t *w, out_t *o, out_t *scratch,
                                Py_ssize_t *written, int *stopped);

/* A plain table's cells (_dumptable.c): each a span of `text` (`chars` characters of UTF-8),
 * row after row, `columns` a row. */
typedef struct {
    Py_ssize_t at, len, chars;
} cell_t;

typedef struct {
    out_t text;
    cell_t *cells;
    Py_ssize_t n_cells, cap_cells;
} table_t;

#define MAX_TABLE_COLUMNS 16
/* A cell from `start` to the end of t->text; `extra` characters fewer than its bytes. */
KTX_INTERNAL int end_cell(table_t *t, Py_ssize_t start, Py_ssize_t extra);
/* The table's cells padded as kafkatx.cli.plain_table pads them (the header `names` joined
 * by '\n' when `show_header`, `justify` 'r'/'l' a column, two spaces between columns, a line
 * a row) appended to `o`: 0, 1 when a column is empty or the table wider than `width`, -1. */
KTX_INTERNAL int put_lines(out_t *o, const table_t *t, int columns, const char *names,
                           Py_ssize_t names_len, int show_header, const char *justify,
                           Py_ssize_t width);

#endif
