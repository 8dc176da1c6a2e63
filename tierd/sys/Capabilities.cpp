#include "tierd/sys/Capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace tierd::sys {
namespace {

constexpr CapMask bit(int cap) {
  return CapMask{1} << cap;
}

CapMask known(int lastCap) {
  return lastCap >= 63 ? ~CapMask{0} : bit(lastCap + 1) - 1;
}

}  // namespace

CapMask daemonCapabilities() {
  return bit(CAP_SYS_NICE) | bit(CAP_SYS_PTRACE) | bit(CAP_PERFMON);
}

CapMask exporterSpawnCapabilities() {
  return bit(CAP_SETUID) | bit(CAP_SETGID);
}

CapabilityPlan planCapabilityDrop(const CapabilitySets& current, CapMask keep) {
  const CapMask k = keep & known(current.lastCap);
  CapabilityPlan p;
  p.dropBounding = current.bounding & ~k & known(current.lastCap);
  p.permitted = current.permitted & k;
  p.effective = p.permitted;
  p.clearAmbient = current.ambient != 0;
  p.setSets = p.permitted != current.permitted || p.effective != current.effective ||
              current.inheritable != 0;
  p.missing = k & ~current.permitted;
  return p;
}

Result<CapabilitySets> readCapabilities() {
  CapabilitySets s;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0)
    return Error::fromErrno("cannot read the capability sets", "capget");
  auto join = [](uint32_t lo, uint32_t hi) { return CapMask{lo} | (CapMask{hi} << 32); };
  s.permitted = join(data[0].permitted, data[1].permitted);
  s.effective = join(data[0].effective, data[1].effective);
  s.inheritable = join(data[0].inheritable, data[1].inheritable);
  s.lastCap = -1;
  for (int c = 0; c < 64; ++c) {
    int r = ::prctl(PR_CAPBSET_READ, c, 0, 0, 0);
    if (r < 0) break;  // EINVAL: the kernel knows no capability c
    s.lastCap = c;
    if (r == 1) s.bounding |= bit(c);
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) s.ambient |= bit(c);
  }
  return s;
}

Status applyCapabilityPlan(const CapabilityPlan& plan) {
  for (int c = 0; c < 64; ++c)
    if ((plan.dropBounding & bit(c)) && ::prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0)
      return Error::fromErrno("cannot drop " + capabilityNames(bit(c)) + " from the bounding set",
                              "prctl(PR_CAPBSET_DROP)");
  if (plan.clearAmbient && ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    return Error::fromErrno("cannot clear the ambient capabilities", "prctl(PR_CAP_AMBIENT)");
  if (plan.setSets) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    for (int i = 0; i < 2; ++i) {
      data[i].permitted = static_cast<uint32_t>(plan.permitted >> (32 * i));
      data[i].effective = static_cast<uint32_t>(plan.effective >> (32 * i));
      data[i].inheritable = 0;
    }
    if (::syscall(SYS_capset, &hdr, data) != 0)
      return Error::fromErrno("cannot reduce the permitted and effective capabilities", "capset");
  }
  return Ok{};
}

Status dropPermitted(CapMask drop) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0)
    return Error::fromErrno("cannot read the capabilities", "capget");
  bool held = false;
  for (int i = 0; i < 2; ++i) {
    const auto mask = static_cast<uint32_t>(drop >> (32 * i));
    held = held || (data[i].permitted & mask) != 0 || (data[i].inheritable & mask) != 0;
    data[i].permitted &= ~mask;
    data[i].effective &= ~mask;
    data[i].inheritable &= ~mask;
  }
  if (!held) return Ok{};
  if (::syscall(SYS_capset, &hdr, data) != 0)
    return Error::fromErrno("cannot drop " + capabilityNames(drop), "capset");
  return Ok{};
}

std::string capabilityNames(CapMask mask) {
  static const char* const kNames[] = {"CAP_CHOWN",
                                       "CAP_DAC_OVERRIDE",
                                       "CAP_DAC_READ_SEARCH",
                                       "CAP_FOWNER",
                                       "CAP_FSETID",
                                       "CAP_KILL",
                                       "CAP_SETGID",
                                       "CAP_SETUID",
                                       "CAP_SETPCAP",
                                       "CAP_LINUX_IMMUTABLE",
                                       "CAP_NET_BIND_SERVICE",
                                       "CAP_NET_BROADCAST",
                                       "CAP_NET_ADMIN",
                                       "CAP_NET_RAW",
                                       "CAP_IPC_LOCK",
                                       "CAP_IPC_OWNER",
                                       "CAP_SYS_MODULE",
                                       "CAP_SYS_RAWIO",
                                       "CAP_SYS_CHROOT",
                                       "CAP_SYS_PTRACE",
                                       "CAP_SYS_PACCT",
                                       "CAP_SYS_ADMIN",
                                       "CAP_SYS_BOOT",
                                       "CAP_SYS_NICE",
                                       "CAP_SYS_RESOURCE",
                                       "CAP_SYS_TIME",
                                       "CAP_SYS_TTY_CONFIG",
                                       "CAP_MKNOD",
                                       "CAP_LEASE",
                                       "CAP_AUDIT_WRITE",
                                       "CAP_AUDIT_CONTROL",
                                       "CAP_SETFCAP",
                                       "CAP_MAC_OVERRIDE",
                                       "CAP_MAC_ADMIN",
                                       "CAP_SYSLOG",
                                       "CAP_WAKE_ALARM",
                                       "CAP_BLOCK_SUSPEND",
                                       "CAP_AUDIT_READ",
                                       "CAP_PERFMON",
                                       "CAP_BPF",
                                       "CAP_CHECKPOINT_RESTORE"};
  constexpr int kKnown = static_cast<int>(sizeof kNames / sizeof kNames[0]);
  std::string out;
  for (int c = 0; c < 64; ++c) {
    if (!(mask & bit(c))) continue;
    if (!out.empty()) out += ' ';
    out += c < kKnown ? kNames[c] : "cap_" + std::to_string(c);
  }
  return out;
}

}  // namespace tierd::sys
