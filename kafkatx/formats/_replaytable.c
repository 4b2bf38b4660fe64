/*
 * kafkatx.formats._batchscan.format_replay_table -- a chunk of `kafkatx replay`'s table (no
 * --records) padded in one call, from the lines the C formatter's table mode writes.
 *
 *   format_replay_table(lines, start, rows, pids, statuses, names, justify, show_header,
 *                       width) -> (bytes, end) or None
 *
 * `lines` (an ASCII str) holds `OFFSET ISO-TIMESTAMP K` lines (_recordfmt.c's MODE_TABLE
 * through kafkatx.cli.replay_table's templates); the `rows` lines from character `start` on
 * are the table's rows: the offset and timestamp cells as written, the pid/epoch cell
 * pids[K >> 1] and the status cell statuses[K] (UTF-8 bytes of the text rich shows, or None
 * when that is not plain). They are padded by _dumptable.c's put_lines (the header `names`,
 * '\n'-joined, when `show_header`; `justify` 'r'/'l' a column) and returned with the
 * character just after the last line. None -- the Python table then -- for anything it
 * cannot vouch for: a cell None, K outside the lists, an offset other than an integer, a
 * timestamp other than iso_ms' ISO text, fewer lines than `rows`, a column empty, a table
 * wider than `width`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_recordfmt.h"
#include "_varint.h"

#define REPLAY_COLUMNS 4

/* Up to the next `stop` character: the span's end, or NULL when a character is not in
 * `allowed` or the text ends first. */
static const char *span_of(const char *p, const char *end, char stop, const char *allowed)
{
    for (; p < end && *p != stop; p++)
        if (*p == 0 || strchr(allowed, *p) == NULL)
            return NULL;
    return p < end ? p : NULL;
}

/* Whether p[0:n] has the shape of put_iso_ms' text, YYYY-MM-DDTHH:MM:SS.mmmZ (no span
 * between its colons rich may take for an emoji code). */
static int iso_shaped(const char *p, Py_ssize_t n)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (n != (Py_ssize_t)sizeof(shape) - 1)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (shape[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != shape[i])
            return 0;
    return 1;
}

/* A bytes cell appended to the table (0, 1 not plain, -1 Python error). */
static int put_cell(table_t *t, PyObject *cells, Py_ssize_t k)
{
    if (k < 0 || k >= PyList_GET_SIZE(cells))
        return 1;
    PyObject *cell = PyList_GET_ITEM(cells, k);
    if (!PyBytes_Check(cell))
        return 1;
    const char *p = PyBytes_AS_STRING(cell);
    Py_ssize_t n = PyBytes_GET_SIZE(cell), extra = 0, start = t->text.len;
    for (Py_ssize_t i = 0; i < n; i++)
        extra += (((const uint8_t *)p)[i] & 0xC0) == 0x80;
    if (put(&t->text, p, n) < 0 || end_cell(t, start, extra) < 0)
        return -1;
    return 0;
}

/* The text from `p` to `q` as a cell (0 or -1). */
static int put_span(table_t *t, const char *p, const char *q)
{
    Py_ssize_t start = t->text.len;
    return put(&t->text, p, q - p) < 0 || end_cell(t, start, 0) < 0 ? -1 : 0;
}

PyObject *format_replay_table(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *lines, *pids, *statuses;
    Py_ssize_t start, rows, width;
    Py_buffer names, justify;
    int show_header;
    if (!PyArg_ParseTuple(args, "UnnO!O!y*y*pn", &lines, &start, &rows, &PyList_Type, &pids,
                          &PyList_Type, &statuses, &names, &justify, &show_header, &width))
        return NULL;
    PyObject *out = NULL;
    table_t t = {{NULL, 0, 0}, NULL, 0, 0};
    out_t o = {NULL, 0, 0};
    int result = 0;
    if (justify.len != REPLAY_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "format_replay_table: justify of the wrong size");
        goto done;
    }
    if (!PyUnicode_IS_ASCII(lines) || start < 0 || start > PyUnicode_GET_LENGTH(lines) ||
        rows <= 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    const char *text = (const char *)PyUnicode_DATA(lines);
    const char *p = text + start, *end = text + PyUnicode_GET_LENGTH(lines);
    for (Py_ssize_t r = 0; result == 0 && r < rows; r++) {
        const char *offset_end = span_of(p, end, ' ', "-0123456789");
        const char *time_end = offset_end ? span_of(offset_end + 1, end, ' ',
                                                    "-0123456789:.TZ") : NULL;
        const char *k_end = time_end ? span_of(time_end + 1, end, '\n', "0123456789") : NULL;
        if (k_end == NULL || k_end - time_end < 2 || k_end - time_end > 10 ||
            offset_end == p || !iso_shaped(offset_end + 1, time_end - offset_end - 1)) {
            result = 1;
            break;
        }
        Py_ssize_t k = 0;
        for (const char *d = time_end + 1; d < k_end; d++)
            k = 10 * k + (*d - '0');
        if (put_span(&t, p, offset_end) < 0 || put_span(&t, offset_end + 1, time_end) < 0) {
            result = -1;
            break;
        }
        result = put_cell(&t, pids, k >> 1);
        if (result == 0)
            result = put_cell(&t, statuses, k);
        p = k_end + 1;
    }
    if (result == 0)
        result = put_lines(&o, &t, REPLAY_COLUMNS, names.buf, names.len, show_header,
                           justify.buf, width);
    if (result == 0)
        out = Py_BuildValue("(y#n)", o.buf ? o.buf : "", o.len, (Py_ssize_t)(p - text));
    else if (result == 1)
        out = Py_NewRef(Py_None);
done:
    PyMem_Free(t.text.buf);
    PyMem_Free(t.cells);
    PyMem_Free(o.buf);
    PyBuffer_Release(&names);
    PyBuffer_Release(&justify);
    return out;
}
