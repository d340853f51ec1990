/* File formats of the export (the file transport, adapter/transport_file.c): pcapng for the
 * synthetic encoding's batches (its frames' records hold classic pcap records; each becomes an
 * Enhanced Packet Block) and JSON lines for the JSON envelope's (one object, or an array of
 * them, becomes one line per object). Both append to a caller's bounded buffer. */
#ifndef NDD_PCAP_H
#define NDD_PCAP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Section Header Block (28 bytes) + Interface Description Block (20 bytes, Ethernet,
 * microsecond timestamps). */
#define PCAPNG_HEADER_LEN 48
void pcapng_file_header(uint8_t out[PCAPNG_HEADER_LEN]);

/* The pcap records in the records of a synthetic DATA frame, as EPBs appended to out.
 * Returns the number of frame records (copies), or -1 when the payload is not such a frame
 * or out is full (out unchanged). */
long pcapng_from_frame(buf_t *out, const uint8_t *frame, size_t len);

/* One JSON object, or a JSON array of objects, as JSON lines appended to out. Returns the
 * number of lines, or -1 when the payload is neither or out is full (out unchanged). */
long jsonl_from_json(buf_t *out, const uint8_t *p, size_t len);

#endif
