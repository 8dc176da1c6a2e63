/*
 * memsim: a QEMU TCG plugin that gives the rig's NUMA nodes real access costs and counts where
 * every guest memory access went (tests/vm/memsim/README.md has the model and the file format).
 *
 * Built by tests/vm/memsim/build.sh against the qemu-plugin.h of the INSTALLED QEMU's Debian
 * source package (never vendored). Loaded by tests/vm/run.sh for scenarios with
 * "# rig: memsim=count|cost":
 *   -plugin memsim.so,mode=cost,out=FILE,llc=BYTES,line=BYTES,ways=N,interval_ms=MS,
 *           seg=NODE:HW:GPA:LEN,...,charge=NODE:NS,...
 * seg: QEMU's "physical address" of a RAM access (qemu_plugin_hwaddr_phys_addr, which in 7.2 is
 *      the RAMBlock's ram_addr offset + offset in the block + the block's MemoryRegion address)
 *      in [HW, HW+LEN) is guest-physical GPA + (value - HW) on node NODE. run.sh computes the
 *      segments from the node sizes and q35's RAM layout.
 * charge: ns added to the accessing vCPU for each miss of the LLC model to NODE (cost mode).
 * dilate=FILE,lat=NODE:NS,...,bw=NODE:MBPS,... (cost mode): time dilation. Once FILE holds a
 *      line (the guest writes it: rig_mem_dilate in guest-lib.sh), the line is D, TCG's slowdown
 *      of the guest's own instructions measured in this boot (a loop's time in the guest over its
 *      time natively on the host). From then on every miss to NODE, the CPU node's too, costs
 *      D * lat (the hardware's latency, HMAT), and a miss that continues an ascending stream of
 *      lines (the next line after an earlier miss of the same vCPU; 4 streams per vCPU, like a
 *      hardware prefetcher's) costs D * line / bw instead (the node's bandwidth): memory then
 *      costs the emulated CPU what it costs a real one, and a page copy is charged as a stream,
 *      not as a latency per line. Before FILE exists the charge= figures apply.
 * sample=ON_MS:PERIOD_MS (count mode only): count during ON_MS of every PERIOD_MS instead of
 *      always. The per-access callback stays installed and returns at once outside the counting
 *      windows (one load of a flag the publisher thread flips), so the LLC model, the shared tag
 *      array that both vCPUs write and the frame counters cost nothing then. (Switching the
 *      instrumentation itself with qemu_plugin_reset() would be cheaper still, but QEMU 7.2 can
 *      leave a vCPU's plugin_mem_cbs pointing at callback arrays that the reset's code flush
 *      frees: "qemu_plugin_vcpu_mem_cb: code should not be reached", seen here at boot.)
 *      Shares (per node, per frame) are unbiased by time; absolute counts cover only the
 *      windows (sampled_ns in the stats file).
 * start=FILE (with sample): install nothing per access until FILE exists (the guest creates it in
 *      the results share: rig_mem_start), so the scenario runs at full TCG speed until it wants
 *      numbers. Going from no per-access callbacks to callbacks is one qemu_plugin_reset(), safe
 *      in 7.2 because no callback array exists yet to be freed; the plugin never goes back.
 *      The reset is asked for from a vCPU thread (QEMU needs one): from the vCPU idle callback
 *      and from a callback on one in 16 translated kernel blocks (the timer interrupt runs kernel
 *      code on every vCPU, busy or not).
 * pmu=FILE,lat=NODE:NS,... (count or cost mode): the emulated PMU's host half. FILE is the
 *      shared region of tests/vm/pmu/pmu_shm.h (run.sh backs an ivshmem-plain device with it);
 *      the guest's tierd_pmu_emu module arms counters there. Every access of vCPU c that an
 *      armed counter of slot c counts (a load whose modelled latency reaches its ldlat, a store,
 *      a load that misses the LLC model; in the privilege modes it asks for) decrements the
 *      counter; at zero a record (IP, virtual and physical address, node, latency, source) goes
 *      into ring c and the counter restarts at its period. Latency model: PMU_HIT_CYCLES for a
 *      hit, the node's lat= ns * PMU_CYCLES_PER_NS for a miss (the topology's HMAT latency).
 * pmu_ns=NS (cost mode, with pmu=): each record written charges its vCPU NS (D x NS once dilated),
 *      what the hardware spends on a sample outside the guest's own handler.
 * Every data access (loads and stores, user and kernel) goes through a shared set-associative
 * LRU last-level-cache model indexed by guest-physical line; misses are counted per node, split
 * read/write and user/kernel (user: virtual address in the lower half). Accesses and misses are
 * also counted per 2 MiB guest-physical frame. A thread publishes the counters to FILE every
 * interval_ms (written to FILE.tmp, then renamed) and at exit (with "final 1").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "pmu_shm.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_NODES 8
#define MAX_SEGS 16
#define FRAME_SHIFT 21
#define USER_TOP 0x0000800000000000ull
#define QUANTUM_NS 10000   /* debt paid in busy waits of at least this much */
#define CREDIT_NS 100000000 /* most overrun of a wait carried over to later misses */
#define STREAMS 4           /* ascending miss streams tracked per vCPU (dilate=) */
#define PMU_CYCLES_PER_NS 2 /* pmu=: the emulated core's clock, 2 GHz */
#define PMU_HIT_CYCLES 40   /* pmu=: a hit of the LLC model (an L3 hit on Skylake-SP is ~40-70) */

struct seg {
  uint64_t hw, gpa, len;
  int node;
};

/* Per-vCPU counters (only that vCPU's thread writes them; the publisher reads them relaxed). */
struct vcpu {
  uint64_t miss[MAX_NODES][2][2]; /* [node][kernel?][write?] */
  uint64_t accesses, misses, other, io;
  int64_t debt_ns;
  uint64_t delay_ns, charged_ns, waits;
  uint64_t *frame_acc, *frame_miss; /* per 2 MiB guest-physical frame */
  uint64_t stream_next[STREAMS];     /* the line that continues each stream (dilate=) */
  unsigned stream_victim;            /* the tracker the next new stream replaces */
  uint64_t stream_misses[MAX_NODES]; /* misses charged as a stream */
  uint64_t ibs_ip;                   /* pmu= IBS: the tagged op's address, 0 when none is due */
  unsigned ibs_counter;              /* and the counter it is for */
  uint64_t pmu_charged_ns;           /* pmu_ns=: charged for records written (part of charged_ns) */
  char pad[64];
};

static int mode_cost;
static const char *out_path;
static char *tmp_path;
static uint64_t llc_bytes = 16ull << 20, line_bytes = 64, ways = 16;
static unsigned line_shift, interval_ms = 200;
static uint64_t sets, set_mask;
static uint64_t *tags; /* sets * ways line numbers + 1 (0 = empty), MRU first */
static struct seg segs[MAX_SEGS];
static int nsegs, nnodes;
static int64_t charge_ns[MAX_NODES];
/* dilate=FILE: the publisher sets miss_charge_ns / stream_charge_ns, then dilated (release) */
static const char *dilate_path;
static int64_t lat_ns[MAX_NODES], bw_mbps[MAX_NODES];
static int64_t pmu_record_ns; /* pmu_ns=: what the hardware spends on one sample, ns */
static int64_t miss_charge_ns[MAX_NODES], stream_charge_ns[MAX_NODES];
static double dilate_factor;
static int dilated, dilate_rejected;
static uint64_t nframes;
static struct vcpu *vcpus;
static int nvcpus;
static volatile int stopping;
static pthread_t publisher;
static uint64_t seq;
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
/* pmu=FILE: the shared region (NULL without pmu=) */
static const char *pmu_path;
static struct pmu_shm *pmu;

/* Duty-cycle sampling (sample=ON_MS:PERIOD_MS). sample_period_ns 0: always counting. The
 * publisher thread writes these (on_activate too, once, in QEMU's exclusive context); the vCPU
 * threads read `counting`. */
static uint64_t sample_on_ns, sample_period_ns;
static int counting = 1;         /* inside a counting window now */
static uint64_t window_start_ns; /* start of the current counting window */
static uint64_t sampled_ns;      /* counting time of the windows that ended */
static uint64_t windows;         /* counting windows begun */
/* start=FILE: per-access callbacks are installed once FILE exists (the publisher sees it and sets
 * start_seen; a vCPU thread then asks for the reset; on_activate sets active). */
static qemu_plugin_id_t plugin_id;
static const char *start_path;
static int active = 1, start_seen, activating;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* LRU lookup of LINE in the shared model; returns whether it hit. Races between vCPUs may
 * duplicate or drop a tag (a model inaccuracy, never a crash). */
static bool llc_access(uint64_t line) {
  uint64_t *set = tags + (line & set_mask) * ways;
  uint64_t want = line + 1;
  uint64_t prev = ld(&set[0]);
  if (prev == want) return true;
  for (uint64_t w = 1; w < ways; w++) {
    uint64_t cur = ld(&set[w]);
    __atomic_store_n(&set[w], prev, __ATOMIC_RELAXED);
    if (cur == want) {
      __atomic_store_n(&set[0], want, __ATOMIC_RELAXED);
      return true;
    }
    prev = cur;
  }
  __atomic_store_n(&set[0], want, __ATOMIC_RELAXED);
  return false;
}

static void pay(struct vcpu *v) {
  uint64_t start = now_ns(), end = start + (uint64_t)v->debt_ns, t;
  do {
    t = now_ns();
  } while (t < end);
  v->delay_ns += t - start;
  v->waits++;
  v->debt_ns -= (int64_t)(t - start);
  /* A wait that overran (the host preempted this thread) pays later misses, up to CREDIT_NS:
   * the vCPU was already delayed that long. With the credit, a vCPU that gets a share s of a host
   * core spends s * charge of CPU on waits per miss and the charge in wall time stays the
   * charge, so host load slows emulation but leaves the charged difference between nodes as
   * declared (memsim-calibrate measures it). */
  if (v->debt_ns < -CREDIT_NS) v->debt_ns = -CREDIT_NS;
}

/* dilate=: the charge of a miss of LINE on NODE: a stream's bandwidth share when LINE continues
 * one of the vCPU's ascending streams, else the node's latency (and LINE starts a new stream). */
static int64_t dilated_charge(struct vcpu *v, uint64_t line, int node) {
  for (int i = 0; i < STREAMS; i++) {
    if (v->stream_next[i] == line) {
      v->stream_next[i] = line + 1;
      v->stream_misses[node]++;
      return stream_charge_ns[node];
    }
  }
  v->stream_next[v->stream_victim] = line + 1;
  v->stream_victim = (v->stream_victim + 1) % STREAMS;
  return miss_charge_ns[node];
}

/* dilate=FILE, on the publisher thread: once FILE holds D (1 <= D <= 10000) and a newline, switch
 * the charges. The file is judged only once its line is complete: a poll may land between the
 * guest's creation of the file and its write (the share is 9p), and an empty or partial read then
 * must mean "not yet", not a rejected factor. */
static void maybe_dilate(void) {
  if (!dilate_path || dilate_rejected || __atomic_load_n(&dilated, __ATOMIC_RELAXED)) return;
  FILE *f = fopen(dilate_path, "r");
  if (!f) return;
  char line[64];
  size_t len = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[len] = 0;
  if (!memchr(line, '\n', len) && len < sizeof line - 1) return; /* not complete yet: read it again */
  char *end = NULL;
  double d = strtod(line, &end);
  if (end == line || (*end != '\n' && *end != 0) || !(d >= 1 && d <= 10000)) {
    fprintf(stderr, "memsim: ignoring %s: not a dilation factor in 1..10000\n", dilate_path);
    dilate_rejected = 1;
    return;
  }
  for (int i = 0; i < nnodes; i++) {
    miss_charge_ns[i] = (int64_t)(d * (double)lat_ns[i] + 0.5);
    stream_charge_ns[i] = bw_mbps[i] > 0 ? (int64_t)(d * (double)line_bytes * 1000.0 / (double)bw_mbps[i] + 0.5) : 0;
  }
  dilate_factor = d;
  __atomic_store_n(&dilated, 1, __ATOMIC_RELEASE);
}

/* pmu=: writes one record into ring C (or counts it lost when the ring is full); true when written. */
static bool pmu_record(struct pmu_shm_cpu *c, unsigned counter, uint64_t ip, uint64_t vaddr, uint64_t gpa, int node,
                       bool hit, uint8_t op, uint32_t latency) {
  if (c->head - c->tail >= PMU_SHM_RING) {
    c->lost++;
    return false;
  }
  volatile struct pmu_shm_record *r = &c->ring[c->head % PMU_SHM_RING];
  r->ip = ip;
  r->addr = vaddr;
  r->phys = gpa;
  r->latency = latency;
  r->counter = (uint8_t)counter;
  r->source = (uint8_t)(op == PMU_OP_NONE ? PMU_SOURCE_CACHE : hit ? PMU_SOURCE_CACHE : PMU_SOURCE_NODE0 + node);
  r->op = op;
  r->user = ip < USER_TOP;
  __atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELEASE);
  return true;
}

/* pmu_ns= (cost mode): a written record charges vCPU V what the hardware spends on the sample
 * outside the guest's code (the PEBS assist and the interrupt's entry: the guest's handler runs in
 * the guest and is slowed by TCG already), dilated by D once dilate= has it, as a miss is. */
static void pmu_charge(struct vcpu *v) {
  if (!mode_cost || pmu_record_ns <= 0) return;
  int64_t c = pmu_record_ns;
  if (__atomic_load_n(&dilated, __ATOMIC_ACQUIRE)) c = (int64_t)(dilate_factor * (double)pmu_record_ns + 0.5);
  v->debt_ns += c;
  v->charged_ns += (uint64_t)c;
  v->pmu_charged_ns += (uint64_t)c;
  if (v->debt_ns >= QUANTUM_NS) pay(v);
}

/* pmu=: counts the access for slot C's armed counters; a counter that reaches zero writes a
 * record into ring C. An IBS op tagged at the start of its block (on_tb_exec) takes this access's
 * address if it is the tagged instruction's. Runs on vCPU C's thread, the only writer of ring C's
 * head. */
static void pmu_access(struct vcpu *v, struct pmu_shm_cpu *c, uint64_t ip, uint64_t vaddr, uint64_t gpa, int node,
                       bool hit, bool store) {
  uint32_t latency = hit ? PMU_HIT_CYCLES : (uint32_t)(lat_ns[node] * PMU_CYCLES_PER_NS);
  uint32_t priv = ip < USER_TOP ? PMU_PRIV_USER : PMU_PRIV_KERNEL;
  if (v->ibs_ip && v->ibs_ip == ip) {
    if (pmu_record(c, v->ibs_counter, ip, vaddr, gpa, node, hit, store ? PMU_OP_STORE : PMU_OP_LOAD, latency))
      pmu_charge(v);
    v->ibs_ip = 0;
  }
  for (unsigned i = 0; i < PMU_SHM_COUNTERS; i++) {
    if (!(c->armed & (1ull << i))) continue;
    volatile struct pmu_shm_counter *k = &c->counter[i];
    if (!(k->priv & priv)) continue;
    bool counts;
    switch (k->kind) {
      case PMU_KIND_LOAD_LATENCY: counts = !store && latency >= k->ldlat; break;
      case PMU_KIND_ALL_STORES: counts = store; break;
      case PMU_KIND_L3_MISS: counts = !store && !hit; break;
      default: counts = false; break; /* PMU_KIND_IBS_OP counts in on_tb_exec */
    }
    if (!counts) continue;
    k->count++;
    if (k->left > 1) {
      k->left--;
      continue;
    }
    k->left = k->period ? k->period : 1;
    if (pmu_record(c, i, ip, vaddr, gpa, node, hit, store ? PMU_OP_STORE : PMU_OP_LOAD, latency)) pmu_charge(v);
  }
}

/* The instructions of a translated block (pmu=: IBS op sampling tags one of them). */
struct tb_insns {
  size_t n;
  uint64_t vaddr[];
};

/* pmu= IBS op sampling, at the start of every block vCPU C executes: an op tagged in the previous
 * block that made no memory access is recorded without an address (as IBS reports a non-memory
 * op), then the block's instructions count down each armed IBS counter; the one at which a counter reaches zero
 * is tagged, and its memory access (pmu_access) completes the record. */
static void on_tb_exec(unsigned int vcpu_index, void *udata) {
  if (vcpu_index >= PMU_SHM_MAX_CPUS) return;
  struct pmu_shm_cpu *c = &pmu->cpu[vcpu_index];
  struct vcpu *v = &vcpus[vcpu_index];
  if (v->ibs_ip) {
    if (pmu_record(c, v->ibs_counter, v->ibs_ip, 0, 0, 0, true, PMU_OP_NONE, 0)) pmu_charge(v);
    v->ibs_ip = 0;
  }
  if (!c->armed) return;
  const struct tb_insns *t = udata;
  for (unsigned i = 0; i < PMU_SHM_COUNTERS; i++) {
    if (!(c->armed & (1ull << i))) continue;
    volatile struct pmu_shm_counter *k = &c->counter[i];
    if (k->kind != PMU_KIND_IBS_OP) continue;
    k->count += t->n;
    if (k->left > t->n) {
      k->left -= t->n;
      continue;
    }
    v->ibs_ip = t->vaddr[k->left - 1];
    v->ibs_counter = i;
    k->left = k->period ? k->period : 1;
  }
}

static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  if (!__atomic_load_n(&counting, __ATOMIC_RELAXED)) return;
  struct vcpu *v = &vcpus[vcpu_index];
  struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
  if (!hw) return;
  if (qemu_plugin_hwaddr_is_io(hw)) {
    v->io++;
    return;
  }
  uint64_t a = qemu_plugin_hwaddr_phys_addr(hw);
  const struct seg *s = NULL;
  for (int i = 0; i < nsegs; i++) {
    if (a - segs[i].hw < segs[i].len) {
      s = &segs[i];
      break;
    }
  }
  v->accesses++;
  if (!s) {
    v->other++;
    return;
  }
  uint64_t gpa = s->gpa + (a - s->hw);
  uint64_t frame = gpa >> FRAME_SHIFT;
  bool store = qemu_plugin_mem_is_store(info);
  if (frame < nframes) v->frame_acc[frame]++;
  bool hit = llc_access(gpa >> line_shift);
  if (pmu && vcpu_index < PMU_SHM_MAX_CPUS && pmu->cpu[vcpu_index].armed)
    pmu_access(v, &pmu->cpu[vcpu_index], (uint64_t)(uintptr_t)udata, vaddr, gpa, s->node, hit, store);
  if (hit) return;
  v->misses++;
  if (frame < nframes) v->frame_miss[frame]++;
  v->miss[s->node][vaddr >= USER_TOP][store]++;
  if (!mode_cost) return;
  int64_t c = charge_ns[s->node];
  if (__atomic_load_n(&dilated, __ATOMIC_ACQUIRE)) c = dilated_charge(v, gpa >> line_shift, s->node);
  if (c > 0) {
    v->debt_ns += c;
    v->charged_ns += (uint64_t)c;
    if (v->debt_ns >= QUANTUM_NS) pay(v);
  }
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  if (pmu && n) {
    /* kept for the block's lifetime; QEMU 7.2 tells a plugin nothing when a block is freed */
    struct tb_insns *t = malloc(sizeof(*t) + n * sizeof(uint64_t));
    if (t) {
      t->n = n;
      for (size_t i = 0; i < n; i++) t->vaddr[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
    }
  }
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    /* the instruction's address rides along as the callback's data: a PMU record's IP */
    qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                     (void *)(uintptr_t)qemu_plugin_insn_vaddr(insn));
  }
}

static void on_exit_cb(qemu_plugin_id_t id, void *p);

/* start=FILE: runs in QEMU's exclusive context after the code flush of the reset, which also
 * removed every callback of ours: install the per-access ones. */
static void on_activate(qemu_plugin_id_t id) {
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
  __atomic_store_n(&window_start_ns, now_ns(), __ATOMIC_RELAXED);
  __atomic_store_n(&windows, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
}

/* start=FILE, on a vCPU thread: once the file was seen, ask for the reset (once). */
static void maybe_activate(void) {
  if (!__atomic_load_n(&start_seen, __ATOMIC_ACQUIRE)) return;
  if (__atomic_exchange_n(&activating, 1, __ATOMIC_ACQ_REL)) return;
  qemu_plugin_reset(plugin_id, on_activate);
}

static void on_trigger_tb(unsigned int vcpu_index, void *udata) {
  (void)vcpu_index;
  (void)udata;
  maybe_activate();
}

static void on_idle(qemu_plugin_id_t id, unsigned int vcpu_index) {
  (void)id;
  (void)vcpu_index;
  maybe_activate();
}

/* start=FILE, before it exists: no per-access callbacks; one kernel block in 16 (by a hash of
 * its address) gets a callback that can ask for the activation. */
static void on_tb_trans_armed(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  uint64_t pc = qemu_plugin_tb_vaddr(tb);
  if (pc >= USER_TOP && ((pc * 0x9e3779b97f4a7c15ull) >> 60) == 0)
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_trigger_tb, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void publish(int final) {
  pthread_mutex_lock(&write_lock);
  FILE *f = fopen(tmp_path, "w");
  if (!f) {
    fprintf(stderr, "memsim: cannot write %s: %s\n", tmp_path, strerror(errno));
    pthread_mutex_unlock(&write_lock);
    return;
  }
  uint64_t miss[MAX_NODES][2][2] = {{{0}}}, acc = 0, misses = 0, other = 0, io = 0, delay = 0, charged = 0, waits = 0;
  for (int c = 0; c < nvcpus; c++) {
    struct vcpu *v = &vcpus[c];
    /* charged_ns first and delay_ns last: a vCPU's delay never trails its charge by more than
     * its debt (under QUANTUM_NS plus one charge), and a delay read after the charge keeps that
     * true of the publication however long this thread is preempted between the two reads
     * (memsim-calibrate checks it) */
    charged += __atomic_load_n(&v->charged_ns, __ATOMIC_ACQUIRE);
    for (int n = 0; n < nnodes; n++)
      for (int k = 0; k < 2; k++)
        for (int w = 0; w < 2; w++) miss[n][k][w] += ld(&v->miss[n][k][w]);
    acc += ld(&v->accesses);
    misses += ld(&v->misses);
    other += ld(&v->other);
    io += ld(&v->io);
    waits += ld(&v->waits);
    delay += __atomic_load_n(&v->delay_ns, __ATOMIC_ACQUIRE);
  }
  fprintf(f, "memsim 1\nmode %s\nseq %" PRIu64 "\nfinal %d\ntime_ns %" PRIu64 "\n", mode_cost ? "cost" : "count",
          ++seq, final, now_ns());
  fprintf(f, "llc %" PRIu64 " line %" PRIu64 " ways %" PRIu64 "\n", llc_bytes, line_bytes, ways);
  if (start_path) fprintf(f, "active %d\n", __atomic_load_n(&active, __ATOMIC_ACQUIRE));
  if (sample_period_ns) {
    /* counting time so far: the ended windows plus the running one */
    uint64_t sampled = __atomic_load_n(&sampled_ns, __ATOMIC_RELAXED);
    if (__atomic_load_n(&active, __ATOMIC_ACQUIRE) && __atomic_load_n(&counting, __ATOMIC_RELAXED)) {
      uint64_t t = now_ns(), w = __atomic_load_n(&window_start_ns, __ATOMIC_RELAXED);
      if (t > w) sampled += t - w;
    }
    fprintf(f, "sample %" PRIu64 " %" PRIu64 "\nsampled_ns %" PRIu64 "\nwindows %" PRIu64 "\n", sample_on_ns,
            sample_period_ns, sampled, __atomic_load_n(&windows, __ATOMIC_RELAXED));
  }
  for (int i = 0; i < nsegs; i++)
    fprintf(f, "range %d 0x%" PRIx64 " 0x%" PRIx64 "\n", segs[i].node, segs[i].gpa, segs[i].gpa + segs[i].len);
  int dil = __atomic_load_n(&dilated, __ATOMIC_ACQUIRE);
  for (int n = 0; n < nnodes; n++) fprintf(f, "charge %d %" PRId64 "\n", n, dil ? miss_charge_ns[n] : charge_ns[n]);
  if (dilate_path || dil) {
    fprintf(f, "dilate %.3f%s\n", dil ? dilate_factor : 0.0, dilate_rejected ? " rejected" : "");
    for (int n = 0; n < nnodes; n++) {
      uint64_t st = 0;
      for (int c = 0; c < nvcpus; c++) st += ld(&vcpus[c].stream_misses[n]);
      fprintf(f, "stream %d %" PRId64 " %" PRIu64 "\n", n, dil ? stream_charge_ns[n] : 0, st);
    }
  }
  fprintf(f, "# node N user_reads user_writes kernel_reads kernel_writes (misses of the LLC model)\n");
  for (int n = 0; n < nnodes; n++)
    fprintf(f, "node %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", n, miss[n][0][0], miss[n][0][1],
            miss[n][1][0], miss[n][1][1]);
  fprintf(f,
          "accesses %" PRIu64 "\nmisses %" PRIu64 "\nother_ram %" PRIu64 "\nio %" PRIu64 "\ncharged_ns %" PRIu64
          "\ndelay_ns %" PRIu64 "\nwaits %" PRIu64 "\n",
          acc, misses, other, io, charged, delay, waits);
  if (pmu) {
    uint64_t records = 0, lost = 0, pcharged = 0;
    for (unsigned c = 0; c < pmu->ncpus; c++) {
      records += __atomic_load_n(&pmu->cpu[c].head, __ATOMIC_RELAXED);
      lost += __atomic_load_n(&pmu->cpu[c].lost, __ATOMIC_RELAXED);
    }
    for (int c = 0; c < nvcpus; c++) pcharged += __atomic_load_n(&vcpus[c].pmu_charged_ns, __ATOMIC_RELAXED);
    fprintf(f, "pmu_records %" PRIu64 "\npmu_lost %" PRIu64 "\npmu_charged_ns %" PRIu64 "\n", records, lost,
            pcharged);
  }
  fprintf(f, "# frame INDEX accesses misses (2 MiB guest-physical frames; INDEX = gpa >> 21; nonzero only)\n");
  for (uint64_t fr = 0; fr < nframes; fr++) {
    uint64_t a = 0, m = 0;
    for (int c = 0; c < nvcpus; c++) {
      a += ld(&vcpus[c].frame_acc[fr]);
      m += ld(&vcpus[c].frame_miss[fr]);
    }
    if (a) fprintf(f, "frame %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", fr, a, m);
  }
  fprintf(f, "end\n");
  if (fclose(f) != 0 || rename(tmp_path, out_path) != 0)
    fprintf(stderr, "memsim: cannot publish %s: %s\n", out_path, strerror(errno));
  pthread_mutex_unlock(&write_lock);
}

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* Publishes every interval_ms and, with sampling, opens and closes the counting windows. */
static void *publisher_main(void *arg) {
  (void)arg;
  uint64_t next_publish = now_ns() + interval_ms * 1000000ull;
  int was_active = __atomic_load_n(&active, __ATOMIC_ACQUIRE);
  uint64_t next_switch = sample_period_ns && was_active ? window_start_ns + sample_on_ns : UINT64_MAX;
  while (!stopping) {
    sleep_until(next_publish < next_switch ? next_publish : next_switch);
    if (stopping) break;
    uint64_t t = now_ns();
    maybe_dilate();
    if (!was_active) {
      if (!__atomic_load_n(&start_seen, __ATOMIC_RELAXED) && access(start_path, F_OK) == 0)
        __atomic_store_n(&start_seen, 1, __ATOMIC_RELEASE);
      if (__atomic_load_n(&active, __ATOMIC_ACQUIRE)) { /* on_activate ran: the first window is open */
        was_active = 1;
        next_switch = sample_period_ns ? __atomic_load_n(&window_start_ns, __ATOMIC_RELAXED) + sample_on_ns
                                       : UINT64_MAX;
      }
    }
    if (t >= next_switch) {
      if (__atomic_load_n(&counting, __ATOMIC_RELAXED)) {
        __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sampled_ns, sampled_ns + (t - window_start_ns), __ATOMIC_RELAXED);
        next_switch = window_start_ns + sample_period_ns;
      } else {
        __atomic_store_n(&window_start_ns, t, __ATOMIC_RELAXED);
        __atomic_store_n(&windows, windows + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
        next_switch = t + sample_on_ns;
      }
    }
    if (t >= next_publish) {
      publish(0);
      next_publish += interval_ms * 1000000ull;
      if (next_publish < t) next_publish = t + interval_ms * 1000000ull;
    }
  }
  return NULL;
}

static void on_exit_cb(qemu_plugin_id_t id, void *p) {
  (void)id;
  (void)p;
  stopping = 1;
  publish(1);
}

static int bad(const char *what, const char *arg) {
  fprintf(stderr, "memsim: ERROR: %s: '%s'\n", what, arg);
  return -1;
}

/* pmu=FILE: maps the shared region (run.sh creates FILE at PMU_SHM_SIZE before QEMU starts) and
 * marks it ready for the guest driver. */
static int pmu_map(int ncpus) {
  int fd = open(pmu_path, O_RDWR);
  if (fd < 0) return bad(strerror(errno), pmu_path);
  struct stat st;
  if (fstat(fd, &st) || (uint64_t)st.st_size < PMU_SHM_SIZE) {
    close(fd);
    return bad("pmu file must exist and hold PMU_SHM_SIZE bytes", pmu_path);
  }
  void *m = mmap(NULL, PMU_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return bad(strerror(errno), pmu_path);
  memset(m, 0, sizeof(struct pmu_shm));
  pmu = m;
  pmu->version = PMU_SHM_VERSION;
  pmu->ncpus = (uint32_t)(ncpus < PMU_SHM_MAX_CPUS ? ncpus : PMU_SHM_MAX_CPUS);
  pmu->cycles_per_us = PMU_CYCLES_PER_NS * 1000;
  __atomic_store_n(&pmu->magic, PMU_SHM_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || end == s) return -1;
  switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end) return -1;
  *out = v;
  return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  /* The API version this plugin was compiled against must be one the running QEMU offers. */
  if (QEMU_PLUGIN_VERSION < info->version.min || QEMU_PLUGIN_VERSION > info->version.cur) {
    fprintf(stderr,
            "memsim: ERROR: built against plugin API version %d, the running QEMU supports %d..%d: rebuild "
            "against the qemu-plugin.h of the installed QEMU (tests/vm/memsim/build.sh)\n",
            QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
    return -1;
  }
  if (!info->system_emulation) {
    fprintf(stderr, "memsim: ERROR: needs full system emulation (physical addresses)\n");
    return -1;
  }
  uint64_t max_gpa = 0;
  for (int i = 0; i < argc; i++) {
    char *a = argv[i], *eq = strchr(a, '=');
    if (!eq) return bad("argument without '='", a);
    *eq = '\0';
    const char *k = a, *val = eq + 1;
    uint64_t u;
    if (!strcmp(k, "mode")) {
      if (!strcmp(val, "cost")) mode_cost = 1;
      else if (strcmp(val, "count")) return bad("mode must be count or cost", val);
    } else if (!strcmp(k, "out")) {
      out_path = val;
    } else if (!strcmp(k, "llc")) {
      if (parse_u64(val, &llc_bytes)) return bad("bad llc size", val);
    } else if (!strcmp(k, "line")) {
      if (parse_u64(val, &line_bytes)) return bad("bad line size", val);
    } else if (!strcmp(k, "ways")) {
      if (parse_u64(val, &ways) || ways == 0 || ways > 64) return bad("bad ways", val);
    } else if (!strcmp(k, "interval_ms")) {
      if (parse_u64(val, &u) || u == 0 || u > 1000) return bad("bad interval_ms (1..1000)", val);
      interval_ms = (unsigned)u;
    } else if (!strcmp(k, "seg")) {
      int node;
      unsigned long long hw, gpa, len;
      if (nsegs == MAX_SEGS) return bad("too many segments", val);
      if (sscanf(val, "%d:%lli:%lli:%lli", &node, &hw, &gpa, &len) != 4 || node < 0 || node >= MAX_NODES || !len)
        return bad("seg must be NODE:HW:GPA:LEN", val);
      segs[nsegs++] = (struct seg){hw, gpa, len, node};
      if (node + 1 > nnodes) nnodes = node + 1;
      if (gpa + len > max_gpa) max_gpa = gpa + len;
    } else if (!strcmp(k, "sample")) {
      unsigned long long on, period;
      char tail;
      if (sscanf(val, "%llu:%llu%c", &on, &period, &tail) != 2 || on == 0 || period <= on || period > 60000)
        return bad("sample must be ON_MS:PERIOD_MS with 0 < ON_MS < PERIOD_MS <= 60000", val);
      sample_on_ns = on * 1000000ull;
      sample_period_ns = period * 1000000ull;
    } else if (!strcmp(k, "start")) {
      start_path = val;
    } else if (!strcmp(k, "pmu")) {
      pmu_path = val;
    } else if (!strcmp(k, "pmu_ns")) {
      if (parse_u64(val, &u) || u > 100000) return bad("bad pmu_ns (0..100000 ns per record)", val);
      pmu_record_ns = (int64_t)u;
    } else if (!strcmp(k, "dilate")) {
      dilate_path = val;
    } else if (!strcmp(k, "lat") || !strcmp(k, "bw")) {
      int node;
      long long v;
      if (sscanf(val, "%d:%lld", &node, &v) != 2 || node < 0 || node >= MAX_NODES || v <= 0)
        return bad("lat and bw must be NODE:NS and NODE:MBPS (> 0)", val);
      if (k[0] == 'l') lat_ns[node] = v;
      else bw_mbps[node] = v;
    } else if (!strcmp(k, "charge")) {
      int node;
      long long ns;
      if (sscanf(val, "%d:%lld", &node, &ns) != 2 || node < 0 || node >= MAX_NODES || ns < 0)
        return bad("charge must be NODE:NS", val);
      charge_ns[node] = ns;
    } else {
      return bad("unknown argument", k);
    }
  }
  if (!out_path) return bad("missing argument", "out=FILE");
  if (start_path && !sample_period_ns) return bad("start=FILE needs sample=ON_MS:PERIOD_MS", start_path);
  if (sample_period_ns && mode_cost) return bad("sample is for count mode (a cost must be paid on every access)", "sample");
  if (!nsegs) return bad("missing argument", "seg=NODE:HW:GPA:LEN");
  if (dilate_path && !mode_cost) return bad("dilate is for cost mode", dilate_path);
  if (pmu_record_ns && (!mode_cost || !pmu_path)) return bad("pmu_ns is for cost mode with pmu=", "pmu_ns");
  _Static_assert(sizeof(struct pmu_shm) <= PMU_SHM_SIZE, "pmu_shm.h: the region outgrew PMU_SHM_SIZE");
  for (int n = 0; dilate_path && n < nnodes; n++)
    if (!lat_ns[n] || !bw_mbps[n]) return bad("dilate needs lat=NODE:NS and bw=NODE:MBPS for every node", dilate_path);
  for (int n = 0; pmu_path && n < nnodes; n++)
    if (!lat_ns[n]) return bad("pmu needs lat=NODE:NS for every node", pmu_path);
  if (pmu_path && sample_period_ns) return bad("pmu needs every access (count or cost mode, no sample=)", pmu_path);
  if (line_bytes < 8 || (line_bytes & (line_bytes - 1))) return bad("line must be a power of two >= 8", "line");
  sets = llc_bytes / line_bytes / ways;
  if (!sets || (sets & (sets - 1)) || sets * line_bytes * ways != llc_bytes)
    return bad("llc / (line * ways) must be a power of two", "llc");
  set_mask = sets - 1;
  line_shift = (unsigned)__builtin_ctzll(line_bytes);
  tags = calloc(sets * ways, sizeof(*tags));
  nvcpus = info->system.max_vcpus;
  nframes = (max_gpa + (1ull << FRAME_SHIFT) - 1) >> FRAME_SHIFT;
  vcpus = calloc((size_t)nvcpus, sizeof(*vcpus));
  tmp_path = malloc(strlen(out_path) + 5);
  if (!tags || !vcpus || !tmp_path) return bad("out of memory", "");
  sprintf(tmp_path, "%s.tmp", out_path);
  for (int c = 0; c < nvcpus; c++) {
    vcpus[c].frame_acc = calloc(nframes, sizeof(uint64_t));
    vcpus[c].frame_miss = calloc(nframes, sizeof(uint64_t));
    if (!vcpus[c].frame_acc || !vcpus[c].frame_miss) return bad("out of memory", "");
  }
  if (pmu_path && pmu_map(nvcpus)) return -1;
  plugin_id = id;
  window_start_ns = now_ns();
  windows = 1;
  if (dilate_path) unlink(dilate_path); /* as start=: a factor of an earlier boot must not apply */
  if (start_path) {
    unlink(start_path); /* a file left by an earlier boot must not start this one */
    active = 0;
    windows = 0;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans_armed);
    qemu_plugin_register_vcpu_idle_cb(id, on_idle);
  } else {
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  }
  qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
  publish(0);
  if (pthread_create(&publisher, NULL, publisher_main, NULL) != 0) return bad("cannot start the publisher", "");
  pthread_detach(publisher);
  fprintf(stderr,
          "memsim: mode=%s sample=%" PRIu64 "/%" PRIu64 "ms llc=%" PRIu64 " line=%" PRIu64 " ways=%" PRIu64
          " segments=%d nodes=%d vcpus=%d out=%s (plugin API %d, QEMU offers %d..%d)\n",
          mode_cost ? "cost" : "count", sample_on_ns / 1000000, sample_period_ns / 1000000, llc_bytes, line_bytes, ways, nsegs, nnodes, nvcpus, out_path,
          QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
  return 0;
}
