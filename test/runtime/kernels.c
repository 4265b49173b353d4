/*===- kernels.c - Kernels for the runtime unit tests ---------------------===*
 *
 * Part of the Flow project.
 *
 *===----------------------------------------------------------------------===*
 *
 * Built as a shared object that the tests embed in .fbin files. Every entry
 * point has the runtime's kernel ABI:
 *   void entry(void **bindings, int64_t workgroup, int64_t workgroups)
 * Workgroup w of n handles rows [w * R / n, (w + 1) * R / n) of R rows, the
 * split the compiler's workgroup distribution uses.
 *
 *===----------------------------------------------------------------------===*/

#include "flow/runtime/KernelAbi.h"

#include <stdint.h>

#define ROWS 16

/* out = x + y over 16 f32 values: bindings x, y, out. */
void add_f32_entry(void **bindings, int64_t workgroup, int64_t workgroups) {
  const float *x = (const float *)bindings[0];
  const float *y = (const float *)bindings[1];
  float *out = (float *)bindings[2];
  for (int64_t i = workgroup * ROWS / workgroups;
       i < (workgroup + 1) * ROWS / workgroups; ++i)
    out[i] = x[i] + y[i];
}

/* out = 2 * x over 16 f32 values: bindings x, out. */
void scale2_f32_entry(void **bindings, int64_t workgroup, int64_t workgroups) {
  const float *x = (const float *)bindings[0];
  float *out = (float *)bindings[1];
  for (int64_t i = workgroup * ROWS / workgroups;
       i < (workgroup + 1) * ROWS / workgroups; ++i)
    out[i] = 2 * x[i];
}

/* Stores the address of binding 0 in the i64 at binding 1. */
void address_of_entry(void **bindings, int64_t workgroup, int64_t workgroups) {
  (void)workgroup;
  (void)workgroups;
  *(int64_t *)bindings[1] = (int64_t)(intptr_t)bindings[0];
}

/* out[workgroup] = workgroups over an i64[64] output (binding 0). */
void workgroups_entry(void **bindings, int64_t workgroup, int64_t workgroups) {
  if (workgroup < 64)
    ((int64_t *)bindings[0])[workgroup] = workgroups;
}

/* A kernel the ABI table below does not list: the loader refuses it. */
void unlisted_entry(void **bindings, int64_t workgroup, int64_t workgroups) {
  (void)bindings;
  (void)workgroup;
  (void)workgroups;
}

/* The ABI table every kernel library exports (flow/runtime/KernelAbi.h). */
static const uint64_t add_sizes[] = {64, 64, 64};
static const uint64_t scale2_sizes[] = {64, 64};
static const uint64_t address_of_sizes[] = {8, 8};
static const uint64_t workgroups_sizes[] = {512};
static const struct FlowKernelAbiEntry entries[] = {
    {"add_f32_entry", (const void *)add_f32_entry, 3, 1, add_sizes},
    {"scale2_f32_entry", (const void *)scale2_f32_entry, 2, 1, scale2_sizes},
    {"address_of_entry", (const void *)address_of_entry, 2, 1,
     address_of_sizes},
    {"workgroups_entry", (const void *)workgroups_entry, 1, 1,
     workgroups_sizes},
};
const struct FlowKernelAbiTable flow_kernel_abi = {
    FLOW_KERNEL_ABI_MAGIC, sizeof(entries) / sizeof(entries[0]), entries};
