/*===- KernelAbi.h - The table a kernel library exports ---------*- C -*-===*
 *
 * Part of the Flow project.
 *
 *===----------------------------------------------------------------------===*
 *
 * Every CPU kernel library exports `flow_kernel_abi`, written by the
 * compiler next to the kernels themselves: for each entry point, its symbol,
 * its address, and the buffers it takes (count, bytes of each, how many
 * trailing ones it writes). The loader checks the executable's metadata
 * (fbs::Kernel) against this table entry by entry after dlopen, so metadata
 * that names another kernel, or claims other sizes, is refused before any
 * kernel runs. Plain C so that hand-written test libraries can export it.
 *
 *   void entry(void **bindings, int64_t workgroup, int64_t workgroups);
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLOW_RUNTIME_KERNELABI_H
#define FLOW_RUNTIME_KERNELABI_H

#include <stdint.h>

/* "FLOWABI1", little-endian. */
#define FLOW_KERNEL_ABI_MAGIC 0x31494241574f4c46ull
#define FLOW_KERNEL_ABI_SYMBOL "flow_kernel_abi"

struct FlowKernelAbiEntry {
  const char *symbol;
  const void *entry;
  uint64_t num_bindings;
  uint64_t num_outputs;
  const uint64_t *binding_sizes; /* num_bindings values */
};

struct FlowKernelAbiTable {
  uint64_t magic; /* FLOW_KERNEL_ABI_MAGIC */
  uint64_t count;
  const struct FlowKernelAbiEntry *entries; /* count entries */
};

#endif /* FLOW_RUNTIME_KERNELABI_H */
