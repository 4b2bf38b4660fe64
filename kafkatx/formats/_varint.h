/*
 * Varint readers shared by the record decoder (_batchscan.c) and the record formatter
 * (_recordfmt.c): ByteUtils.readUnsignedVarint/readVarint/readVarlong over a bounded cursor.
 */
#ifndef KAFKATX_VARINT_H
#define KAFKATX_VARINT_H

#include <stdint.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} cursor_t;

/* ByteUtils.readUnsignedVarint/Varlong: at most max_bytes bytes; values above 2^64 - 1 (only
 * possible with 10 bytes) are left to the exact reader, which keeps Python's big integers. */
static inline int read_uvar(cursor_t *c, int max_bytes, uint64_t *out)
{
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->p >= c->end)
            return -1;
        uint8_t b = *c->p++;
        if (i == 9 && (b & 0x7F) > 1)
            return -1;
        value |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

static inline int read_zigzag(cursor_t *c, int max_bytes, int64_t *out)
{
    uint64_t u;
    if (read_uvar(c, max_bytes, &u) < 0)
        return -1;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* kafkatx.formats._batchscan.format_records/format_batches (in _recordfmt.c). */
PyObject *format_records(PyObject *self, PyObject *args);
PyObject *format_batches(PyObject *self, PyObject *args);
/* kafkatx.formats._batchscan.format_dump_batches (in _dumpfmt.c). */
PyObject *format_dump_batches(PyObject *self, PyObject *args);
PyObject *format_dump_table(PyObject *self, PyObject *args);

#endif
