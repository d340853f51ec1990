/* The pre-optimisation encoders, kept for ndd-bench-encoding (bench_baseline.c). */
#ifndef NDD_BENCH_BASELINE_H
#define NDD_BENCH_BASELINE_H

#include "buf.h"
#include "codec-t.h"
#include "frame.h"

int base_json_valid(const uint8_t *p, size_t n);
int base_json_envelope(buf_t *out, const codec_msg_t *m);
int base_data_begin(frame_builder_t *b, buf_t *out, uint64_t id, uint16_t flags,
                    uint32_t max_payload);
int base_data_add_msg(frame_builder_t *b, const codec_msg_t *m);
int base_data_end(frame_builder_t *b);
void base_data_abort(frame_builder_t *b);

#endif
