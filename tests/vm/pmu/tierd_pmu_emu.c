// SPDX-License-Identifier: GPL-2.0
/*
 * tierd_pmu_emu: an emulated Intel core PMU for tierd's QEMU TCG rig (tests/vm).
 *
 * Registers the "cpu" event source with type PERF_TYPE_RAW, as the x86 driver does, with the
 * sysfs format/, events/ and caps/ of a Skylake-SP (Linux 7.3, arch/x86/events/intel/core.c,
 * intel_pmu_init(), case INTEL_SKYLAKE_X: intel_arch3_formats_attr + hsw_format_attr +
 * skl_format_attr, hsw_mem_events_attrs). event_init() refuses what that driver refuses, with
 * its errno, for the attributes tierd sets.
 *
 * Counting and sampling come from the memsim TCG plugin (tests/vm/memsim), which sees every
 * memory access the guest makes. The two talk through an ivshmem-plain device's BAR 2 (layout:
 * pmu_shm.h). start() arms one of the CPU's four counters there (what it counts: load latency
 * 0x01cd with config1 as ldlat, all stores 0x82d0, L3-miss loads 0x20d1; any other event counts
 * nothing), stop() drains the CPU's ring and disarms it. Records are drained into the perf core
 * as a PEBS assist's records are (perf_event_overflow() with IP, ADDR, PHYS_ADDR, WEIGHT and
 * DATA_SRC), so throttling, period changes and the ring buffer behave as the core makes them.
 * A CPU's ring is drained on that CPU only: every millisecond from a pinned hrtimer while a
 * counter is armed, at every context switch (the sched_switch tracepoint, before the perf core
 * switches events, so a sample is delivered while `current` is still the task that made the
 * access) and when an event stops. Without the device the module loads and its events count
 * nothing.
 *
 * On Sapphire Rapids' model number (143, QEMU's Icelake-Server with model=143: QEMU 7.2 has no
 * SPR model) it shows what that driver adds for Golden Cove (intel_pmu_init_glc(),
 * glc_events_attrs, mem_is_visible()): events/mem-loads-aux (0x8203) and mem-stores as
 * MEM_TRANS_RETIRED.STORE_SAMPLE (0x02cd), and it refuses load latency with a data source
 * unless mem-loads-aux is in its group (intel_pmu_hw_config(), ENODATA). Its extra registers and
 * formats stay Skylake-SP's.
 *
 * Under TCG the x86 driver finds no PMU (no CPUID leaf 0xa counters, no perfctr MSRs), so the
 * type is free. On a machine with a PMU the module refuses to load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/io.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/pci.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/sysfs.h>
#include <linux/topology.h>
#include <linux/tracepoint.h>
#include <asm/cpufeature.h>
#include <asm/cpuid/api.h>
#include <asm/perf_event.h>
#include <asm/processor.h>
#include <asm/segment.h>

#include "pmu_shm.h"

/* Skylake-SP: legacy PEBS with LBR fixup and PREC_DIST (x86_pmu_max_precise()). */
#define EMU_MAX_PRECISE 3

/* MEM_TRANS_RETIRED.LOAD_LATENCY: event 0xcd, umask 0x01 (INTEL_UEVENT_PEBS_LDLAT_EXTRA_REG) */
#define EMU_EVENT_LDLAT 0x01cd
#define EMU_UEVENT_MASK (ARCH_PERFMON_EVENTSEL_EVENT | ARCH_PERFMON_EVENTSEL_UMASK)
/* MEM_INST_RETIRED.ALL_STORES and MEM_LOAD_RETIRED.L3_MISS (Skylake-SP) */
#define EMU_EVENT_ALL_STORES 0x82d0
#define EMU_EVENT_L3_MISS 0x20d1
/* Golden Cove (Sapphire Rapids): MEM_TRANS_RETIRED.STORE_SAMPLE and the mem-loads-aux event */
#define EMU_EVENT_STORE_SAMPLE 0x02cd
#define EMU_EVENT_LOADS_AUX 0x8203
#define EMU_MODEL_SPR 0x8f
/* IBS op control bits (arch/x86/include/asm/perf_event.h: IBS_OP_MAX_CNT, _CNT_CTL) */
#define EMU_IBS_OP_MAX_CNT 0xffffULL
#define EMU_IBS_OP_CNT_CTL (1ULL << 19)

/* ivshmem-plain (hw/misc/ivshmem.c): Red Hat/Qumranet vendor, device 0x1110; BAR 2 is the memory */
#define EMU_IVSHMEM_VENDOR 0x1af4
#define EMU_IVSHMEM_DEVICE 0x1110
#define EMU_DRAIN_NS (1000 * 1000)

static struct pci_dev *emu_pdev;
static bool emu_spr; /* Sapphire Rapids' model: PMU_FL_MEM_LOADS_AUX */
static struct pmu_shm *emu_shm; /* NULL: no device, nothing is counted */

/* Per CPU: the events on the four counters, and the drain timer. Touched only on that CPU with
 * interrupts off (the perf core's add/del/start/stop, the hrtimer, the sched_switch probe). */
struct emu_cpu {
	struct perf_event *events[PMU_SHM_COUNTERS];
	struct hrtimer timer;
	unsigned int armed;
	u64 dropped; /* records whose counter had no running event */
};
static DEFINE_PER_CPU(struct emu_cpu, emu_cpus);

/*
 * perf_event_overflow() (kernel/events/core.c), the entry point of a PMU interrupt's samples,
 * is not exported to modules: every x86 PMU driver is built in. Its address is found through a
 * kprobe registered and removed at load (the rig's kernels have CONFIG_KPROBES; QEMU's TCG
 * offers no IBT, so the indirect call needs no ENDBR).
 */
typedef int (*emu_overflow_fn)(struct perf_event *event, struct perf_sample_data *data,
			       struct pt_regs *regs);
static emu_overflow_fn emu_overflow;

static int emu_resolve_overflow(void)
{
	struct kprobe kp = { .symbol_name = "perf_event_overflow" };
	int ret = register_kprobe(&kp);

	if (ret)
		return ret;
	emu_overflow = (emu_overflow_fn)kp.addr;
	unregister_kprobe(&kp);
	return emu_overflow ? 0 : -ENOENT;
}

/*
 * intel_skl_extra_regs (arch/x86/events/intel/core.c): an event that uses config1 and the bits
 * of config1 it may set. x86_pmu_extra_regs() (arch/x86/events/core.c) returns -EINVAL for a
 * bit outside valid_mask.
 */
static const struct {
	u64 event;
	u64 valid_mask;
} emu_extra_regs[] = {
	{ 0x01b7, 0x3fffff8fffULL },	/* OFFCORE_RESPONSE_0 */
	{ 0x01bb, 0x3fffff8fffULL },	/* OFFCORE_RESPONSE_1 */
	{ EMU_EVENT_LDLAT, 0xffff },	/* ldlat: MSR_PEBS_LD_LAT_THRESHOLD */
	{ 0x01c6, 0x7fff17 },		/* frontend: MSR_PEBS_FRONTEND */
};

PMU_FORMAT_ATTR(event, "config:0-7");
PMU_FORMAT_ATTR(umask, "config:8-15");
PMU_FORMAT_ATTR(edge, "config:18");
PMU_FORMAT_ATTR(pc, "config:19");
PMU_FORMAT_ATTR(any, "config:21");
PMU_FORMAT_ATTR(inv, "config:23");
PMU_FORMAT_ATTR(cmask, "config:24-31");
PMU_FORMAT_ATTR(in_tx, "config:32");
PMU_FORMAT_ATTR(in_tx_cp, "config:33");
PMU_FORMAT_ATTR(offcore_rsp, "config1:0-63");
PMU_FORMAT_ATTR(ldlat, "config1:0-15");
PMU_FORMAT_ATTR(frontend, "config1:0-23");

static struct attribute *emu_format_attrs[] = {
	&format_attr_event.attr,
	&format_attr_umask.attr,
	&format_attr_edge.attr,
	&format_attr_pc.attr,
	&format_attr_any.attr,
	&format_attr_inv.attr,
	&format_attr_cmask.attr,
	&format_attr_in_tx.attr,
	&format_attr_in_tx_cp.attr,
	&format_attr_offcore_rsp.attr,
	&format_attr_ldlat.attr,
	&format_attr_frontend.attr,
	NULL,
};

static const struct attribute_group emu_format_group = {
	.name = "format",
	.attrs = emu_format_attrs,
};

/* hsw_mem_events_attrs: what `perf mem` opens; on Sapphire Rapids glc_events_attrs */
PMU_EVENT_ATTR_STRING(mem-loads, emu_mem_ld, "event=0xcd,umask=0x1,ldlat=3");
PMU_EVENT_ATTR_STRING(mem-stores, emu_mem_st, "event=0xd0,umask=0x82");
PMU_EVENT_ATTR_STRING(mem-stores, emu_mem_st_spr, "event=0xcd,umask=0x2");
PMU_EVENT_ATTR_STRING(mem-loads-aux, emu_mem_ld_aux, "event=0x03,umask=0x82");

static struct attribute *emu_events_attrs[] = {
	&emu_mem_ld.attr.attr,
	&emu_mem_st.attr.attr,
	&emu_mem_st_spr.attr.attr,
	&emu_mem_ld_aux.attr.attr,
	NULL,
};

/* mem_is_visible(): mem-loads-aux only with PMU_FL_MEM_LOADS_AUX; one mem-stores per model */
static umode_t emu_events_visible(struct kobject *kobj, struct attribute *attr, int i)
{
	if (attr == &emu_mem_ld_aux.attr.attr || attr == &emu_mem_st_spr.attr.attr)
		return emu_spr ? attr->mode : 0;
	if (attr == &emu_mem_st.attr.attr)
		return emu_spr ? 0 : attr->mode;
	return attr->mode;
}

static const struct attribute_group emu_events_group = {
	.name = "events",
	.attrs = emu_events_attrs,
	.is_visible = emu_events_visible,
};

static ssize_t max_precise_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", EMU_MAX_PRECISE);
}
static DEVICE_ATTR_RO(max_precise);

static struct attribute *emu_caps_attrs[] = {
	&dev_attr_max_precise.attr,
	NULL,
};

static const struct attribute_group emu_caps_group = {
	.name = "caps",
	.attrs = emu_caps_attrs,
};

static const struct attribute_group *emu_attr_groups[] = {
	&emu_format_group,
	&emu_events_group,
	&emu_caps_group,
	NULL,
};

static int emu_check_extra_regs(struct perf_event *event)
{
	u64 ev = event->attr.config & EMU_UEVENT_MASK;
	int i;

	for (i = 0; i < ARRAY_SIZE(emu_extra_regs); i++) {
		if (emu_extra_regs[i].event != ev)
			continue;
		if (event->attr.config1 & ~emu_extra_regs[i].valid_mask)
			return -EINVAL;
		return 0;
	}
	return 0;
}

static int emu_event_init(struct perf_event *event)
{
	struct perf_event_attr *attr = &event->attr;

	/*
	 * x86_pmu_event_init() (arch/x86/events/core.c) also takes PERF_TYPE_HARDWARE and
	 * PERF_TYPE_HW_CACHE through its event map; this PMU has none yet, so the core tries the
	 * next PMU and the open fails with ENOENT.
	 */
	if (attr->type != event->pmu->type)
		return -ENOENT;

	/* x86_pmu_hw_config() (arch/x86/events/core.c) */
	if (attr->precise_ip) {
		if (attr->precise_ip > EMU_MAX_PRECISE)
			return -EOPNOTSUPP;
		/* "There's no sense in having PEBS for non sampling events" */
		if (!is_sampling_event(event))
			return -EINVAL;
	}
	/*
	 * x86_pmu_hw_config(): no XMM registers in sample_regs_user, nor in sample_regs_intr
	 * without PERF_PMU_CAP_EXTENDED_REGS (PEBS baseline, Icelake on)
	 */
	if (attr->sample_regs_user & PERF_REG_EXTENDED_MASK)
		return -EINVAL;
	if (attr->sample_regs_intr & PERF_REG_EXTENDED_MASK)
		return -EINVAL;
	/* intel_pmu_hw_config() (arch/x86/events/intel/core.c): no PEBS on the LBR event */
	if (attr->precise_ip && (attr->config & INTEL_ARCH_EVENT_MASK) == INTEL_FIXED_VLBR_EVENT)
		return -EINVAL;
	/*
	 * intel_pmu_hw_config() with PMU_FL_MEM_LOADS_AUX (Sapphire Rapids): load latency with a
	 * data source needs mem-loads-aux as its group leader or a sibling of it.
	 */
	if (emu_spr && (attr->sample_type & PERF_SAMPLE_DATA_SRC) &&
	    (attr->config & INTEL_ARCH_EVENT_MASK) == EMU_EVENT_LDLAT) {
		struct perf_event *leader = event->group_leader;
		struct perf_event *sibling = NULL;

		if (leader == event)
			return -ENODATA;
		if ((leader->attr.config & INTEL_ARCH_EVENT_MASK) != EMU_EVENT_LOADS_AUX) {
			for_each_sibling_event(sibling, leader) {
				if ((sibling->attr.config & INTEL_ARCH_EVENT_MASK) == EMU_EVENT_LOADS_AUX)
					break;
			}
			if (list_entry_is_head(sibling, &leader->sibling_list, sibling_list))
				return -ENODATA;
		}
	}
	event->hw.idx = -1;
	/* x86_setup_perfctr() -> x86_pmu_extra_regs() (arch/x86/events/core.c) */
	return emu_check_extra_regs(event);
}

static struct pmu_shm_cpu *emu_slot(void)
{
	int cpu = smp_processor_id();

	if (!emu_shm || cpu >= READ_ONCE(emu_shm->ncpus))
		return NULL;
	return &emu_shm->cpu[cpu];
}

static struct pmu emu_ibs_pmu;

static u32 emu_kind(const struct perf_event *event)
{
	if (event->pmu == &emu_ibs_pmu)
		return PMU_KIND_IBS_OP;
	switch (event->attr.config & EMU_UEVENT_MASK) {
	case EMU_EVENT_LDLAT:
		return PMU_KIND_LOAD_LATENCY;
	case EMU_EVENT_ALL_STORES:
		return PMU_KIND_ALL_STORES;
	case EMU_EVENT_STORE_SAMPLE:
		return emu_spr ? PMU_KIND_ALL_STORES : PMU_KIND_OFF;
	case EMU_EVENT_L3_MISS:
		return PMU_KIND_L3_MISS;
	default:
		return PMU_KIND_OFF;
	}
}

/* perf_mem_data_src of a record: the LLC model's hit, the CPU's own node's DRAM, another
 * node's DRAM, or a CPU-less node (CXL memory, PERF_MEM_LVLNUM_CXL). */
static u64 emu_data_src(const struct pmu_shm_record *r)
{
	union perf_mem_data_src src = { .val = 0 };
	int node = r->source - PMU_SOURCE_NODE0;

	if (r->op == PMU_OP_NONE)
		return PERF_MEM_NA;
	src.mem_op = r->op == PMU_OP_STORE ? PERF_MEM_OP_STORE : PERF_MEM_OP_LOAD;
	src.mem_snoop = PERF_MEM_SNOOP_NONE;
	src.mem_dtlb = PERF_MEM_TLB_NA;
	src.mem_lock = PERF_MEM_LOCK_NA;
	if (r->source == PMU_SOURCE_CACHE) {
		src.mem_lvl = PERF_MEM_LVL_L3 | PERF_MEM_LVL_HIT;
		src.mem_lvl_num = PERF_MEM_LVLNUM_L3;
	} else if (node >= 0 && node < MAX_NUMNODES && !node_state(node, N_CPU)) {
		src.mem_lvl = PERF_MEM_LVL_NA;
		src.mem_lvl_num = PERF_MEM_LVLNUM_CXL;
		src.mem_remote = node != numa_node_id();
	} else if (node == numa_node_id()) {
		src.mem_lvl = PERF_MEM_LVL_LOC_RAM | PERF_MEM_LVL_HIT;
		src.mem_lvl_num = PERF_MEM_LVLNUM_RAM;
	} else {
		src.mem_lvl = PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_HIT;
		src.mem_lvl_num = PERF_MEM_LVLNUM_RAM;
		src.mem_remote = 1;
	}
	return src.val;
}

static void emu_stop(struct perf_event *event, int flags);

/* One record into the perf core, as intel/ds.c's PEBS drain hands it a record. */
static void emu_deliver(struct perf_event *event, const struct pmu_shm_record *r)
{
	struct perf_sample_data data;
	struct pt_regs regs;

	if (r->user ? event->attr.exclude_user : event->attr.exclude_kernel)
		return;
	memset(&regs, 0, sizeof(regs));
	regs.ip = r->ip;
	regs.cs = r->user ? __USER_CS : __KERNEL_CS;
	regs.ss = r->user ? __USER_DS : __KERNEL_DS;
	regs.flags = X86_EFLAGS_IF | (event->attr.precise_ip ? PERF_EFLAGS_EXACT : 0);
	perf_sample_data_init(&data, r->op == PMU_OP_NONE ? 0 : r->addr, event->hw.last_period);
	if (r->op != PMU_OP_NONE) {
		data.phys_addr = r->phys;
		data.sample_flags |= PERF_SAMPLE_PHYS_ADDR;
	}
	/* load latency (PEBS) or the load's miss latency (IBS DcMissLat); none for a store */
	data.weight.full = r->op == PMU_OP_LOAD ? r->latency : 0;
	data.sample_flags |= PERF_SAMPLE_WEIGHT_TYPE;
	data.data_src.val = emu_data_src(r);
	data.sample_flags |= PERF_SAMPLE_DATA_SRC;
	if (emu_overflow(event, &data, &regs))
		emu_stop(event, 0);
}

/* Drains this CPU's ring. The tail moves before each delivery: a delivery that throttles the
 * event stops it, and stop() drains again from where this left off. */
static void emu_drain(void)
{
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);
	struct pmu_shm_cpu *c = emu_slot();
	u64 head, tail;

	if (!c)
		return;
	head = smp_load_acquire(&c->head);
	tail = READ_ONCE(c->tail);
	while (tail != head) {
		struct pmu_shm_record r = c->ring[tail % PMU_SHM_RING];
		struct perf_event *event = r.counter < PMU_SHM_COUNTERS ? ec->events[r.counter] : NULL;

		WRITE_ONCE(c->tail, ++tail);
		if (!event || (event->hw.state & PERF_HES_STOPPED)) {
			ec->dropped++;
			continue;
		}
		emu_deliver(event, &r);
	}
}

static enum hrtimer_restart emu_timer_fn(struct hrtimer *timer)
{
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);

	if (!ec->armed)
		return HRTIMER_NORESTART;
	emu_drain();
	hrtimer_forward_now(timer, ns_to_ktime(EMU_DRAIN_NS));
	return HRTIMER_RESTART;
}

static void emu_update(struct perf_event *event)
{
	struct pmu_shm_cpu *c = emu_slot();
	u64 now, prev;

	if (!c || event->hw.idx < 0)
		return;
	now = READ_ONCE(c->counter[event->hw.idx].count);
	prev = local64_xchg(&event->hw.prev_count, now);
	local64_add(now - prev, &event->count);
}

static void emu_start(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);
	struct pmu_shm_cpu *c = emu_slot();
	u64 period = hwc->sample_period ? hwc->sample_period : 1;
	s64 left = local64_read(&hwc->period_left);

	hwc->state = 0;
	if (!c || hwc->idx < 0)
		return;
	/*
	 * As x86_perf_event_set_period(): continue from period_left (what stop() saved, so a
	 * task's count carries over its context switches); the core zeroes it when it changes
	 * the period (perf_event_period()), and then the whole period starts.
	 */
	if (left <= 0 || left > period)
		left = period;
	hwc->last_period = period;
	c->counter[hwc->idx].kind = emu_kind(event);
	c->counter[hwc->idx].ldlat = event->attr.config1 & 0xffff;
	c->counter[hwc->idx].priv = (event->attr.exclude_user ? 0 : PMU_PRIV_USER) |
				    (event->attr.exclude_kernel ? 0 : PMU_PRIV_KERNEL);
	c->counter[hwc->idx].period = is_sampling_event(event) ? period : U64_MAX;
	c->counter[hwc->idx].left = is_sampling_event(event) ? left : U64_MAX;
	local64_set(&hwc->prev_count, READ_ONCE(c->counter[hwc->idx].count));
	WRITE_ONCE(c->armed, c->armed | BIT_ULL(hwc->idx));
	if (!ec->armed++)
		hrtimer_start(&ec->timer, ns_to_ktime(EMU_DRAIN_NS), HRTIMER_MODE_REL_PINNED_HARD);
}

static void emu_stop(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);
	struct pmu_shm_cpu *c = emu_slot();

	if (!(hwc->state & PERF_HES_STOPPED)) {
		if (c && hwc->idx >= 0) {
			emu_drain();
			WRITE_ONCE(c->armed, c->armed & ~BIT_ULL(hwc->idx));
			c->counter[hwc->idx].kind = PMU_KIND_OFF;
			local64_set(&hwc->period_left, c->counter[hwc->idx].left);
			if (ec->armed)
				ec->armed--;
		}
		hwc->state |= PERF_HES_STOPPED;
	}
	if ((flags & PERF_EF_UPDATE) && !(hwc->state & PERF_HES_UPTODATE)) {
		emu_update(event);
		hwc->state |= PERF_HES_UPTODATE;
	}
}

static int emu_add(struct perf_event *event, int flags)
{
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);
	int i;

	if (event->pmu == &emu_ibs_pmu) {
		/* perf_ibs_add() (arch/x86/events/amd/ibs.c): one op event per CPU */
		for (i = 0; i < PMU_SHM_COUNTERS; i++)
			if (ec->events[i] && ec->events[i]->pmu == &emu_ibs_pmu)
				return -ENOSPC;
	}
	for (i = 0; i < PMU_SHM_COUNTERS; i++)
		if (!ec->events[i])
			break;
	if (i == PMU_SHM_COUNTERS)
		return -EAGAIN; /* as x86_pmu_add() when the counters are taken */
	ec->events[i] = event;
	event->hw.idx = i;
	event->hw.state = PERF_HES_STOPPED | PERF_HES_UPTODATE;
	if (flags & PERF_EF_START)
		emu_start(event, PERF_EF_RELOAD);
	perf_event_update_userpage(event);
	return 0;
}

static void emu_del(struct perf_event *event, int flags)
{
	struct emu_cpu *ec = this_cpu_ptr(&emu_cpus);

	emu_stop(event, PERF_EF_UPDATE);
	if (event->hw.idx >= 0 && ec->events[event->hw.idx] == event)
		ec->events[event->hw.idx] = NULL;
	event->hw.idx = -1;
	perf_event_update_userpage(event);
}

static void emu_read(struct perf_event *event)
{
	if (!(event->hw.state & PERF_HES_STOPPED))
		emu_update(event);
}

/* sched_switch: runs in __schedule() before the perf core switches events out, with the
 * outgoing task still `current`: its samples are delivered as its own. */
static void emu_sched_switch(void *data, bool preempt, struct task_struct *prev,
			     struct task_struct *next, unsigned int prev_state)
{
	if (this_cpu_read(emu_cpus.armed))
		emu_drain();
}

static struct tracepoint *emu_tp_switch;

static void emu_find_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		emu_tp_switch = tp;
}

static struct pmu emu_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_hw_context,
	.attr_groups = emu_attr_groups,
	.event_init = emu_event_init,
	.add = emu_add,
	.del = emu_del,
	.start = emu_start,
	.stop = emu_stop,
	.read = emu_read,
};

/*
 * AMD IBS op sampling, as arch/x86/events/amd/ibs.c registers it ("ibs_op", a dynamic type) on a
 * Zen 3 part (QEMU's EPYC-Milan), without the Zen 4 extensions: format/ swfilt (config2:0) and
 * cnt_ctl (config:19), an empty caps/. The op counter counts dispatched ops (instructions under
 * TCG) whatever cnt_ctl says. Zen 4's l3missonly is not offered: with it, GUPS under TCG gave
 * too few samples.
 */
#define EMU_IBS_MIN_PERIOD 0x90
#define EMU_IBS_SW_FILTER 1ULL

PMU_FORMAT_ATTR(swfilt, "config2:0");
PMU_FORMAT_ATTR(cnt_ctl, "config:19");

static struct attribute *emu_ibs_format_attrs[] = {
	&format_attr_swfilt.attr,
	&format_attr_cnt_ctl.attr,
	NULL,
};

static const struct attribute_group emu_ibs_format_group = {
	.name = "format",
	.attrs = emu_ibs_format_attrs,
};

static struct attribute *emu_ibs_caps_attrs[] = {
	NULL,
};

static const struct attribute_group emu_ibs_caps_group = {
	.name = "caps",
	.attrs = emu_ibs_caps_attrs,
};

static const struct attribute_group *emu_ibs_attr_groups[] = {
	&emu_ibs_format_group,
	&emu_ibs_caps_group,
	NULL,
};

/* perf_ibs_init() (arch/x86/events/amd/ibs.c), for a CPU without IBS_CAPS_BIT63_FILTER */
static int emu_ibs_event_init(struct perf_event *event)
{
	struct perf_event_attr *attr = &event->attr;
	struct hw_perf_event *hwc = &event->hw;
	u64 config = attr->config;

	if (attr->type != event->pmu->type)
		return -ENOENT;
	if (config & ~(EMU_IBS_OP_MAX_CNT | EMU_IBS_OP_CNT_CTL))
		return -EINVAL;
	if (has_branch_stack(event))
		return -EOPNOTSUPP;
	if (attr->exclude_host || attr->exclude_guest || attr->exclude_idle)
		return -EINVAL;
	if (!(attr->config2 & EMU_IBS_SW_FILTER) &&
	    (attr->exclude_kernel || attr->exclude_user || attr->exclude_hv))
		return -EINVAL;
	if (hwc->sample_period) {
		if (config & EMU_IBS_OP_MAX_CNT)
			return -EINVAL; /* raw max_cnt may not be set */
		if (attr->freq) {
			hwc->sample_period = EMU_IBS_MIN_PERIOD;
		} else {
			/* "Silently mask off lower nibble. IBS hw mandates it." */
			hwc->sample_period &= ~0x0FULL;
			if (hwc->sample_period < EMU_IBS_MIN_PERIOD)
				return -EINVAL;
		}
	} else {
		if (attr->freq)
			return -EINVAL;
		hwc->sample_period = (config & EMU_IBS_OP_MAX_CNT) << 4;
		attr->sample_period = hwc->sample_period;
		if (hwc->sample_period < EMU_IBS_MIN_PERIOD)
			return -EINVAL;
	}
	hwc->last_period = hwc->sample_period;
	local64_set(&hwc->period_left, hwc->sample_period);
	hwc->idx = -1;
	return 0;
}

/* perf_ibs_check_period(): PERF_EVENT_IOC_PERIOD's value keeps IBS's rules */
static int emu_ibs_check_period(struct perf_event *event, u64 value)
{
	if ((value & 0x0FULL) || value < EMU_IBS_MIN_PERIOD)
		return -EINVAL;
	return 0;
}

static struct pmu emu_ibs_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_hw_context,
	.attr_groups = emu_ibs_attr_groups,
	.event_init = emu_ibs_event_init,
	.add = emu_add,
	.del = emu_del,
	.start = emu_start,
	.stop = emu_stop,
	.read = emu_read,
	.check_period = emu_ibs_check_period,
};

/* The PMU this module emulates: IBS op for AMD models, the core PMU for Intel ones. */
static struct pmu *emu_registered;

/*
 * A real PMU, or a hypervisor's virtual one: Intel's architectural perfmon leaf (CPUID 0xa)
 * with a version and general-purpose counters, or AMD's core counter extension or IBS. This is
 * what the x86 driver itself probes (intel_pmu_init(), amd_pmu_init()); x86_pmu is not
 * exported, and perf_get_x86_pmu_capability() is exported for KVM only. perf_pmu_register()
 * below is the second guard: it fails when the x86 driver already holds PERF_TYPE_RAW.
 */
static bool emu_real_pmu(void)
{
	if (boot_cpu_data.x86_vendor == X86_VENDOR_INTEL && boot_cpu_data.cpuid_level >= 0xa) {
		union cpuid10_eax eax;
		unsigned int ebx, ecx, edx;

		cpuid(0xa, &eax.full, &ebx, &ecx, &edx);
		if (eax.split.version_id && eax.split.num_counters)
			return true;
	}
	return boot_cpu_has(X86_FEATURE_PERFCTR_CORE) || boot_cpu_has(X86_FEATURE_IBS);
}

/* The shared region: ivshmem-plain's BAR 2, mapped write-back (it is RAM on the host side). */
static void emu_map_shm(void)
{
	struct pmu_shm *shm;

	emu_pdev = pci_get_device(EMU_IVSHMEM_VENDOR, EMU_IVSHMEM_DEVICE, NULL);
	if (!emu_pdev) {
		pr_info("no ivshmem device: events count nothing\n");
		return;
	}
	if (pci_enable_device_mem(emu_pdev) ||
	    pci_resource_len(emu_pdev, 2) < sizeof(struct pmu_shm)) {
		pr_err("ivshmem BAR 2 unusable: events count nothing\n");
		goto put;
	}
	shm = memremap(pci_resource_start(emu_pdev, 2), sizeof(struct pmu_shm), MEMREMAP_WB);
	if (!shm) {
		pr_err("cannot map ivshmem BAR 2\n");
		goto disable;
	}
	if (READ_ONCE(shm->magic) != PMU_SHM_MAGIC || shm->version != PMU_SHM_VERSION) {
		pr_err("ivshmem BAR 2 holds no memsim PMU region (magic %llx version %u)\n",
		       shm->magic, shm->version);
		memunmap(shm);
		goto disable;
	}
	emu_shm = shm;
	pr_info("memsim PMU region at %pa: %u CPUs, %llu cycles/us\n",
		&emu_pdev->resource[2].start, shm->ncpus, shm->cycles_per_us);
	return;
disable:
	pci_disable_device(emu_pdev);
put:
	pci_dev_put(emu_pdev);
	emu_pdev = NULL;
}

static void emu_unmap_shm(void)
{
	if (emu_shm)
		memunmap(emu_shm);
	emu_shm = NULL;
	if (emu_pdev) {
		pci_disable_device(emu_pdev);
		pci_dev_put(emu_pdev);
	}
	emu_pdev = NULL;
}

static int __init emu_init(void)
{
	int ret, cpu;

	if (emu_real_pmu()) {
		pr_err("this CPU has a PMU: refusing to emulate one\n");
		return -ENODEV;
	}
	emu_spr = boot_cpu_data.x86_vendor == X86_VENDOR_INTEL && boot_cpu_data.x86 == 6 &&
		  boot_cpu_data.x86_model == EMU_MODEL_SPR;
	for_each_possible_cpu(cpu)
		hrtimer_setup(&per_cpu(emu_cpus, cpu).timer, emu_timer_fn, CLOCK_MONOTONIC,
			      HRTIMER_MODE_REL_PINNED_HARD);
	ret = emu_resolve_overflow();
	if (ret) {
		pr_err("cannot find perf_event_overflow: %d\n", ret);
		return ret;
	}
	emu_map_shm();
	for_each_kernel_tracepoint(emu_find_tp, NULL);
	if (!emu_tp_switch) {
		pr_err("no sched_switch tracepoint\n");
		emu_unmap_shm();
		return -ENOENT;
	}
	ret = tracepoint_probe_register(emu_tp_switch, emu_sched_switch, NULL);
	if (ret) {
		pr_err("cannot attach to sched_switch: %d\n", ret);
		emu_unmap_shm();
		return ret;
	}
	if (boot_cpu_data.x86_vendor == X86_VENDOR_AMD) {
		emu_registered = &emu_ibs_pmu;
		ret = perf_pmu_register(&emu_ibs_pmu, "ibs_op", -1);
	} else {
		emu_registered = &emu_pmu;
		ret = perf_pmu_register(&emu_pmu, "cpu", PERF_TYPE_RAW);
	}
	if (ret) {
		pr_err("perf_pmu_register(%s) failed: %d\n",
		       emu_registered == &emu_pmu ? "cpu, PERF_TYPE_RAW" : "ibs_op", ret);
		tracepoint_probe_unregister(emu_tp_switch, emu_sched_switch, NULL);
		tracepoint_synchronize_unregister();
		emu_unmap_shm();
		return ret;
	}
	pr_info("emulated PMU \"%s\" registered, type %d%s\n",
		emu_registered == &emu_pmu ? "cpu" : "ibs_op", emu_registered->type,
		emu_spr ? " (Sapphire Rapids: mem-loads-aux)" : "");
	return 0;
}

static void __exit emu_exit(void)
{
	int cpu;
	u64 dropped = 0;

	perf_pmu_unregister(emu_registered);
	tracepoint_probe_unregister(emu_tp_switch, emu_sched_switch, NULL);
	tracepoint_synchronize_unregister();
	for_each_possible_cpu(cpu) {
		hrtimer_cancel(&per_cpu(emu_cpus, cpu).timer);
		dropped += per_cpu(emu_cpus, cpu).dropped;
	}
	emu_unmap_shm();
	pr_info("unloaded; %llu records had no running event\n", dropped);
}

module_init(emu_init);
module_exit(emu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Emulated Intel core PMU for tierd's QEMU TCG test rig");
