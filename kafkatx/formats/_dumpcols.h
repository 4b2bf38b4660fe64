/*
 * The columns dump's C writers take (_dumpfmt.c's JSON items, _dumptable.c's table): int64
 * rows of n items each, in this order (kafkatx/analysis/dump_lines.py's COLUMNS builds them),
 * and the batch attribute bits they read.
 */
#ifndef KAFKATX_DUMPCOLS_H
#define KAFKATX_DUMPCOLS_H

#define TRANSACTIONAL_BIT 0x10
#define CONTROL_BIT 0x20
#define DELETE_HORIZON_BIT 0x40

enum {
    POSITION, SIZE, ATTRIBUTES, COUNT, BASE_OFFSET, LAST_OFFSET, BASE_TIMESTAMP, MAX_TIMESTAMP,
    PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE, LAST_SEQUENCE, LEADER_EPOCH, CRC, CRC_VALID,
    CONTROL_TYPE, COORDINATOR_EPOCH, ROUTE, N_COLUMNS
};

/* kafkatx.formats.record_format.RECORD_JSON, as C strings. */
static const char RECORD_PREFIX[] = "{\"offset\":", RECORD_MID_TIMESTAMP[] = ",\"timestamp\":",
                  RECORD_MID_KEY[] = ",", RECORD_SUFFIX[] = "}", RECORD_SEPARATOR[] = ",";
#define TEXT(s) {(s), (Py_ssize_t)(sizeof(s) - 1)}
/* The templates_t of dump's records (format_section's JSON of Record.to_dict). */
#define DUMP_TEMPLATES {TEXT(RECORD_PREFIX), TEXT(RECORD_MID_TIMESTAMP), TEXT(RECORD_MID_KEY), \
                        TEXT(RECORD_SUFFIX), TEXT(RECORD_SUFFIX), TEXT(RECORD_SEPARATOR), 0}

#endif
