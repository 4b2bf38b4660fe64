/*
 * Varint readers shared by the record decoder (_batchscan.c) and the record writers
 * (_recordfmt.c, _recordcols.c, _dumpfmt.c, _dumptable.c):
 * ByteUtils.readUnsignedVarint/readVarint/readVarlong over a bounded cursor, and the head of a
 * record (DefaultRecord#readFrom).
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

/* The head of one record (DefaultRecord#readFrom): its length, attributes (unused), timestamp
 * and offset deltas, resolved against the batch; `body` is left after the offset delta.
 * 0, or 1 for a record the exact reader must judge (bad varint, length out of range, int64
 * overflow). */
static inline int read_record_head(cursor_t *c, long long base_offset, long long base_timestamp,
                                   long long max_timestamp, int log_append, cursor_t *body,
                                   long long *offset, long long *timestamp)
{
    int64_t length, timestamp_delta, offset_delta;
    if (read_zigzag(c, 5, &length) < 0 || length <= 0 || length > c->end - c->p)
        return 1;
    body->p = c->p + 1;  /* past the record's attributes */
    body->end = c->p + length;
    c->p += length;
    if (read_zigzag(body, 10, &timestamp_delta) < 0 || read_zigzag(body, 5, &offset_delta) < 0)
        return 1;
    *timestamp = max_timestamp;
    if (__builtin_add_overflow(base_offset, (long long)offset_delta, offset) ||
        (!log_append &&
         __builtin_add_overflow(base_timestamp, (long long)timestamp_delta, timestamp)))
        return 1;
    return 0;
}

/* kafkatx.formats._batchscan.format_records/format_batches (in _recordfmt.c). */
PyObject *format_records(PyObject *self, PyObject *args);
PyObject *format_batches(PyObject *self, PyObject *args);
/* kafkatx.formats._batchscan.format_dump_batches (in _dumpfmt.c), format_dump_table (in
 * _dumptable.c). */
PyObject *format_dump_batches(PyObject *self, PyObject *args);
PyObject *format_dump_table(PyObject *self, PyObject *args);
/* kafkatx.formats._batchscan.format_replay_table (in _replaytable.c). */
PyObject *format_replay_table(PyObject *self, PyObject *args);

#endif
