// SPDX-License-Identifier: GPL-2.0
/*
 * tierd_pmu_emu: an emulated Intel core PMU for tierd's QEMU TCG rig (tests/vm).
 *
 * Registers the "cpu" event source with type PERF_TYPE_RAW, as the x86 driver does, with the
 * sysfs format/, events/ and caps/ of a Skylake-SP (Linux 7.3, arch/x86/events/intel/core.c,
 * intel_pmu_init(), case INTEL_SKYLAKE_X: intel_arch3_formats_attr + hsw_format_attr +
 * skl_format_attr, hsw_mem_events_attrs). event_init() refuses what that driver refuses, with
 * its errno, for the attributes tierd sets. No counting or sampling yet: add/del/start/stop
 * only keep hw.state right.
 *
 * Under TCG the x86 driver finds no PMU (no CPUID leaf 0xa counters, no perfctr MSRs), so the
 * type is free. On a machine with a PMU the module refuses to load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/sysfs.h>
#include <asm/cpufeature.h>
#include <asm/cpuid/api.h>
#include <asm/perf_event.h>
#include <asm/processor.h>

/* Skylake-SP: legacy PEBS with LBR fixup and PREC_DIST (x86_pmu_max_precise()). */
#define EMU_MAX_PRECISE 3

/* MEM_TRANS_RETIRED.LOAD_LATENCY: event 0xcd, umask 0x01 (INTEL_UEVENT_PEBS_LDLAT_EXTRA_REG) */
#define EMU_EVENT_LDLAT 0x01cd
#define EMU_UEVENT_MASK (ARCH_PERFMON_EVENTSEL_EVENT | ARCH_PERFMON_EVENTSEL_UMASK)

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

/* hsw_mem_events_attrs: what `perf mem` opens */
PMU_EVENT_ATTR_STRING(mem-loads, emu_mem_ld, "event=0xcd,umask=0x1,ldlat=3");
PMU_EVENT_ATTR_STRING(mem-stores, emu_mem_st, "event=0xd0,umask=0x82");

static struct attribute *emu_events_attrs[] = {
	&emu_mem_ld.attr.attr,
	&emu_mem_st.attr.attr,
	NULL,
};

static const struct attribute_group emu_events_group = {
	.name = "events",
	.attrs = emu_events_attrs,
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
	/* x86_setup_perfctr() -> x86_pmu_extra_regs() (arch/x86/events/core.c) */
	return emu_check_extra_regs(event);
}

static void emu_start(struct perf_event *event, int flags)
{
	event->hw.state = 0;
}

static void emu_stop(struct perf_event *event, int flags)
{
	event->hw.state |= PERF_HES_STOPPED | PERF_HES_UPTODATE;
}

static int emu_add(struct perf_event *event, int flags)
{
	event->hw.state = PERF_HES_STOPPED | PERF_HES_UPTODATE;
	if (flags & PERF_EF_START)
		emu_start(event, PERF_EF_RELOAD);
	return 0;
}

static void emu_del(struct perf_event *event, int flags)
{
	emu_stop(event, PERF_EF_UPDATE);
}

static void emu_read(struct perf_event *event)
{
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

static int __init emu_init(void)
{
	int ret;

	if (emu_real_pmu()) {
		pr_err("this CPU has a PMU: refusing to emulate one\n");
		return -ENODEV;
	}
	ret = perf_pmu_register(&emu_pmu, "cpu", PERF_TYPE_RAW);
	if (ret) {
		pr_err("perf_pmu_register(cpu, PERF_TYPE_RAW) failed: %d\n", ret);
		return ret;
	}
	pr_info("emulated PMU \"cpu\" registered, type %d\n", emu_pmu.type);
	return 0;
}

static void __exit emu_exit(void)
{
	perf_pmu_unregister(&emu_pmu);
}

module_init(emu_init);
module_exit(emu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Emulated Intel core PMU for tierd's QEMU TCG test rig");
