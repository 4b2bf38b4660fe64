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

#include "_dumpcols.h"

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
    const templates_t t = DUMP_TEMPLATES;
    out_t o = {NULL, 0, 0}, scratch = {NULL, 0, 0};
    Py_ssize_t row = start < 0 ? 0 : start, written = 0;
    /* Room for the whole text at once (the text of a batch past it still grows it): the
     * buffer is not copied again and again as it doubles. */
    int result = max_bytes > 0 && max_bytes < (1 << 26) && reserve(&o, max_bytes + (1 << 16)) < 0
                 ? -1 : 0;
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
