/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmu_shm.h: the shared-memory region through which the emulated PMU's two halves talk.
 *
 * The region is an ivshmem-plain device's BAR 2 in the guest (tests/vm/run.sh: a
 * memory-backend-file with share=on, declared after the nodes' backends) and the same file
 * mmap()ed by the memsim TCG plugin on the host (tests/vm/memsim/memsim.c, argument pmu=FILE).
 * QEMU 7.2's plugin API can neither read nor write guest memory; this region is the only channel.
 *
 * One struct pmu_shm_cpu per vCPU. The guest driver (tierd_pmu_emu.c) arms and disarms the
 * counters of CPU c and consumes ring c only on CPU c; the plugin's memory callback for vCPU c
 * runs on the host thread that runs vCPU c. The two sides of one CPU therefore never run at the
 * same time, and nothing here needs a lock or a barrier beyond the compiler's (volatile access).
 * The guest CPU number is assumed to equal QEMU's vCPU index (true for the rig's -smp N: CPUs are
 * enumerated in APIC-id order on both sides).
 *
 * Layout version 1, little endian, every field naturally aligned.
 */
#ifndef TIERD_PMU_SHM_H
#define TIERD_PMU_SHM_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef u64 pmu_u64;
typedef u32 pmu_u32;
typedef u8 pmu_u8;
#else
#include <stdint.h>
typedef uint64_t pmu_u64;
typedef uint32_t pmu_u32;
typedef uint8_t pmu_u8;
#endif

#define PMU_SHM_MAGIC 0x756d706472656974ULL /* "tierdpmu", little endian */
#define PMU_SHM_VERSION 1
#define PMU_SHM_MAX_CPUS 8
#define PMU_SHM_COUNTERS 4
#define PMU_SHM_RING 1024       /* records per CPU; a power of two */
#define PMU_SHM_SIZE (1u << 20) /* the ivshmem BAR: a power of two >= sizeof(struct pmu_shm) */

/* What a counter counts (the guest driver maps perf event codes to these). */
enum pmu_shm_kind {
  PMU_KIND_OFF = 0,
  PMU_KIND_LOAD_LATENCY = 1, /* loads whose modelled latency >= ldlat cycles (0x01cd) */
  PMU_KIND_ALL_STORES = 2,   /* every store (MEM_INST_RETIRED.ALL_STORES, 0x82d0) */
  PMU_KIND_L3_MISS = 3,      /* loads that miss the LLC model (MEM_LOAD_RETIRED.L3_MISS, 0x20d1) */
  PMU_KIND_IBS_OP = 4,       /* every instruction (AMD IBS op sampling, counting dispatched ops) */
};

/* Privilege filter bits of pmu_shm_counter.priv (the mode is the instruction's: IP in the lower
 * half is user, as the hardware's CPL filter sees it). */
#define PMU_PRIV_USER 1u
#define PMU_PRIV_KERNEL 2u

struct pmu_shm_counter {
  pmu_u32 kind;  /* guest: enum pmu_shm_kind; PMU_KIND_OFF = disarmed */
  pmu_u32 ldlat; /* guest: PMU_KIND_LOAD_LATENCY's threshold, cycles */
  pmu_u32 priv;  /* guest: PMU_PRIV_* modes counted */
  pmu_u32 pad;
  pmu_u64 period; /* guest: events per record (>= 1) */
  pmu_u64 left;   /* both: events until the next record; the guest sets it when it arms */
  pmu_u64 count;  /* plugin: events counted while armed (never reset; the guest reads deltas) */
};

/* What the sampled instruction did (pmu_shm_record.op). */
#define PMU_OP_LOAD 0
#define PMU_OP_STORE 1
#define PMU_OP_NONE 2 /* IBS: the tagged op made no memory access; addr, phys, source unset */

/* Where a sampled access was served (pmu_shm_record.source). */
#define PMU_SOURCE_CACHE 0 /* a hit of the LLC model */
#define PMU_SOURCE_NODE0 1 /* a miss served by node (source - PMU_SOURCE_NODE0) */

struct pmu_shm_record {
  pmu_u64 ip;      /* instruction's guest virtual address (qemu_plugin_insn_vaddr) */
  pmu_u64 addr;    /* data's guest virtual address */
  pmu_u64 phys;    /* data's guest physical address at the time of the access */
  pmu_u32 latency; /* modelled latency, cycles */
  pmu_u8 counter;  /* index of the counter that overflowed */
  pmu_u8 source;   /* PMU_SOURCE_* */
  pmu_u8 op;       /* PMU_OP_* */
  pmu_u8 user;     /* 1: IP in user space */
};

struct pmu_shm_cpu {
  struct pmu_shm_counter counter[PMU_SHM_COUNTERS];
  pmu_u64 armed; /* guest: bit i set while counter i is armed (the plugin's fast test) */
  pmu_u64 head;  /* plugin: records written (ring index = head % PMU_SHM_RING) */
  pmu_u64 tail;  /* guest: records consumed */
  pmu_u64 lost;  /* plugin: records dropped because the ring was full */
  pmu_u64 pad[4];
  struct pmu_shm_record ring[PMU_SHM_RING];
};

struct pmu_shm {
  pmu_u64 magic;         /* plugin: PMU_SHM_MAGIC once the region is ready */
  pmu_u32 version;       /* plugin: PMU_SHM_VERSION */
  pmu_u32 ncpus;         /* plugin: vCPUs with a slot (min(vCPUs, PMU_SHM_MAX_CPUS)) */
  pmu_u64 cycles_per_us; /* plugin: the clock that turns modelled ns into cycles */
  pmu_u64 pad[5];
  struct pmu_shm_cpu cpu[PMU_SHM_MAX_CPUS];
};

#endif /* TIERD_PMU_SHM_H */
