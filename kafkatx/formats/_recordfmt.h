/*
 * What _recordfmt.c shares with the other record writers of the extension (_recordcols.c):
 * a growable output buffer and render_bytes' choice of text or base64.
 */
#ifndef KAFKATX_RECORDFMT_H
#define KAFKATX_RECORDFMT_H

#include <Python.h>
#include <stdint.h>

#define RECORDS_START 61        /* the v2 batch header: records follow it */
#define COMPRESSION_BITS 0x07
#define LOG_APPEND_TIME_BIT 0x08

typedef struct {
    char *buf;
    Py_ssize_t len;
    Py_ssize_t cap;
} out_t;

enum { FIELD_NULL, FIELD_TEXT, FIELD_BINARY };

/* Room for `more` bytes after o->len (-1 and MemoryError when there is none). */
int reserve(out_t *o, Py_ssize_t more);
/* render_bytes' choice for bytes that are not null: FIELD_TEXT or FIELD_BINARY; -1 on error. */
int classify(const uint8_t *p, Py_ssize_t n);
/* Whether p[0:n] is valid UTF-8 (*error set on a Python error). */
int valid_utf8(const uint8_t *p, Py_ssize_t n, int *error);
/* p[0:n] as base64 (b64encode's alphabet and padding) appended to o. */
int put_base64(out_t *o, const uint8_t *p, Py_ssize_t n);

#endif
