// The kernel log reader on lines shaped as the kernel, the NVIDIA driver,
// amdgpu and ROCr print them (the formats of arch/x86/mm/fault.c's
// show_signal_msg, arch/x86/kernel/traps.c, the MCE and memory-failure
// handlers, EDAC, NVRM's Xid reports, amdgpu's gmc fault handler and ROCr's
// VM fault handler): every field each line names is read, and nothing else.
#include <gtest/gtest.h>

#include <array>

#include "dataset/timestamps.h"
#include "epi/hardware_verdicts.h"
#include "epi/kernel_log.h"
#include "report/epi_words.h"

namespace coroner {
namespace {

KernelLog Parse(const std::string& text) { return ParseKernelLog(text, "dmesg-host", 2026); }

// The first piece of a verdict's evidence of kind T, or null.
template <class T>
const T* FactOf(const HostVerdict& h) {
  for (const auto& e : h.evidence)
    if (const T* t = std::get_if<T>(&e.fact)) return t;
  return nullptr;
}

TEST(KernelLogLines, SegfaultWithTheCpuItLikelyRanOn) {
  // Linux 6.1 and later add "likely on CPU"; %px prints 16 digits.
  KernelLog log = Parse(
      "2026-10-14T03:12:00+0000 phys-we-03 kernel: python3[48213]: segfault at 0 ip 00007f3a1b2c3d4e "
      "sp 00007ffd12345678 error 4 in libc.so.6[7f3a1b200000+195000] likely on CPU 17 (core 9, socket 1)\n"
      // A task name with a space, an older kernel (no CPU), no library.
      "Oct 14 03:13:00 phys-we-04 kernel: Web Content[7]: segfault at 10 ip 0000000000000000 sp 00007ffc00000010 "
      "error 14\n");
  ASSERT_EQ(log.events.size(), 2u);
  const HardwareEvent& a = log.events[0];
  EXPECT_EQ(EventKindName(a.kind), "segfault");
  EXPECT_EQ(a.host, "phys-we-03");
  EXPECT_EQ(a.comm, "python3");
  EXPECT_EQ(a.pid, 48213);
  EXPECT_EQ(a.address, 0u);
  EXPECT_EQ(a.library, "libc.so.6");
  EXPECT_EQ(a.cpu, 17);
  EXPECT_EQ(a.core, 9);
  EXPECT_EQ(a.socket, 1);
  EXPECT_EQ(a.detail, "segfault, error 4");
  EXPECT_FALSE(IsHardwareError(a));
  const HardwareEvent& b = log.events[1];
  EXPECT_EQ(b.comm, "Web Content");
  EXPECT_EQ(b.pid, 7);
  EXPECT_EQ(b.address, 0x10u);
  EXPECT_FALSE(b.cpu);
  EXPECT_EQ(b.library, "");
}

// The crashing file's name comes before the kernel's own suffix and may
// say anything: the CPU is the line's very end, in the kernel's form, or
// none (an older kernel printed no suffix after a name that forges one).
TEST(KernelLogLines, AFileNameCannotForgeTheCpu) {
  KernelLog log = Parse(
      "2026-10-14T03:12:00+0000 h1 kernel: x[10]: segfault at 0 ip 0000000000401000 sp 00007ffd12345678 error 4 "
      "in x likely on CPU 63 (core 31, socket 1) y[400000+1000] likely on CPU 2 (core 1, socket 0)\n"
      "2026-10-14T03:13:00+0000 h1 kernel: x[11]: segfault at 0 ip 0000000000401000 sp 00007ffd12345678 error 4 "
      "in x likely on CPU 63 (core 31, socket 1)[400000+1000]\n"
      "2026-10-14T03:14:00+0000 h1 kernel: x[12]: segfault at 0 ip 0000000000401000 sp 00007ffd12345678 error 4 "
      "in x[400000+1000] likely on CPU 63 (core 31, socket 1) trailing words\n"
      "2026-10-14T00:00:01+0000 h1 kernel: smp: Brought up 1 node, 4 CPUs\n");
  ASSERT_EQ(log.events.size(), 4u);
  EXPECT_EQ(log.events[0].cpu, 2);
  EXPECT_EQ(log.events[0].core, 1);
  EXPECT_EQ(log.events[0].socket, 0);
  EXPECT_EQ(log.events[0].library, "x likely on CPU 63 (core 31, socket 1) y");
  EXPECT_FALSE(log.events[1].cpu);
  EXPECT_EQ(log.events[1].library, "x likely on CPU 63 (core 31, socket 1)");
  EXPECT_FALSE(log.events[2].cpu);
  EXPECT_EQ(EventKindName(log.events[3].kind), "cpu-count");
  EXPECT_EQ(log.events[3].cpu, 4);
  EXPECT_FALSE(IsHardwareError(log.events[3]));
}

TEST(KernelLogLines, TrapsGeneralProtectionAndDivideError) {
  KernelLog log = Parse(
      "[Wed Oct 14 03:12:00 2026] traps: redis-server[901] general protection fault ip:55d0c0ffee12 "
      "sp:7ffe5a5a5a50 error:0 in redis-server[55d0c0f00000+1a0000]\n"
      "[ 8812.120000] traps: a.out[77] trap divide error ip:401136 sp:7ffd4c3c1e40 error:0 in a.out[401000+1000]\n");
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(EventKindName(log.events[0].kind), "trap");
  EXPECT_EQ(log.events[0].host, "dmesg-host");
  EXPECT_EQ(log.events[0].comm, "redis-server");
  EXPECT_EQ(log.events[0].pid, 901);
  EXPECT_EQ(log.events[0].detail, "general protection fault");
  EXPECT_EQ(log.events[0].address, 0x55d0c0ffee12u);
  EXPECT_EQ(log.events[0].library, "redis-server");
  EXPECT_EQ(log.events[1].comm, "a.out");
  EXPECT_EQ(log.events[1].detail, "trap divide error");
  EXPECT_FALSE(log.events[1].time);
}

TEST(KernelLogLines, MachineChecksMemoryFailureAndEdac) {
  KernelLog log = Parse(
      "2026-10-12T01:00:00+0000 phys-we-03 kernel: mce: [Hardware Error]: CPU 17: Machine Check: 0 Bank 4: "
      "b200000000070f0f\n"
      "2026-10-12T01:00:01+0000 phys-we-03 kernel: [Hardware Error]: CPU 5: Machine Check Exception: 5 Bank 6: "
      "be00000000800400\n"
      "2026-10-12T01:00:02+0000 phys-we-03 kernel: Memory failure: 0x3f2a1c: recovery action for dirty LRU page: "
      "Recovered\n"
      "2026-10-12T01:00:03+0000 phys-we-03 kernel: EDAC MC0: 1 CE memory read error on "
      "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x3f2a1c offset:0x0 grain:32)\n");
  ASSERT_EQ(log.events.size(), 4u);
  EXPECT_EQ(EventKindName(log.events[0].kind), "mce");
  EXPECT_EQ(log.events[0].cpu, 17);
  EXPECT_EQ(log.events[0].bank, 4);
  EXPECT_EQ(EventKindName(log.events[1].kind), "mce");
  EXPECT_EQ(log.events[1].cpu, 5);
  EXPECT_EQ(log.events[1].bank, 6);
  EXPECT_EQ(EventKindName(log.events[2].kind), "memory-failure");
  EXPECT_EQ(log.events[2].address, 0x3f2a1c000u);
  EXPECT_EQ(EventKindName(log.events[3].kind), "edac");
  for (const auto& e : log.events) EXPECT_TRUE(IsHardwareError(e));
}

TEST(KernelLogLines, NvidiaXidWithAndWithoutPid) {
  KernelLog log = Parse(
      "2026-10-14T03:11:58+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python3, GPU has "
      "fallen off the bus.\n"
      // Drivers before 470 print no pid.
      "2026-10-14T03:11:59+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error "
      "(DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.\n"
      "2026-10-14T03:12:00+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:86:00): 31, pid='<unknown>', name=<unknown>, "
      "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000.\n");
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_EQ(EventKindName(log.events[0].kind), "gpu-xid");
  EXPECT_EQ(log.events[0].gpu, "0000:3b:00");
  EXPECT_EQ(log.events[0].xid, 79);
  EXPECT_EQ(log.events[0].pid, 48213);
  EXPECT_EQ(log.events[0].comm, "python3");
  EXPECT_EQ(log.events[0].detail, "GPU has fallen off the bus.");
  EXPECT_EQ(log.events[1].xid, 48);
  EXPECT_FALSE(log.events[1].pid);
  EXPECT_EQ(log.events[1].comm, "");
  EXPECT_EQ(log.events[1].detail.substr(0, 40), "An uncorrectable double bit error (DBE) ");
  EXPECT_EQ(log.events[2].gpu, "0000:86:00");
  EXPECT_EQ(log.events[2].xid, 31);
  EXPECT_FALSE(log.events[2].pid);
  EXPECT_EQ(log.events[2].comm, "");
}

TEST(KernelLogLines, AmdgpuPageFaultsOnOneLineAndSplit) {
  KernelLog log = Parse(
      // Newer kernels: the process on the fault's line, the address after.
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: [gfxhub0] no-retry page fault "
      "(src_id:0 ring:24 vmid:8 pasid:32770, for process python3 pid 5120 thread python3 pid 5133)\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu:   in page starting at address "
      "0x00007f1234560000 from client 0x1b (UTCL2)\n"
      // Older kernels: the process on a line of its own.
      "2026-10-14T04:00:00+0000 mi-01 kernel: amdgpu 0000:83:00.0: [gfxhub] page fault (src_id:0 ring:24 vmid:3 "
      "pasid:32771)\n"
      "2026-10-14T04:00:00+0000 mi-01 kernel: amdgpu 0000:83:00.0:  Process python3 pid 6001 thread pt_main_thread "
      "pid 6009\n"
      "2026-10-14T04:00:00+0000 mi-01 kernel: amdgpu 0000:83:00.0:   in page starting at address 0x0000000000001000 "
      "from 27\n"
      "2026-10-14T04:00:05+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: GPU reset begin!\n"
      "2026-10-14T04:00:09+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: 1 uncorrectable hardware errors "
      "detected in umc block\n"
      // ROCr's own line, from the process's output in the journal.
      "2026-10-14T04:00:00+0000 mi-01 python3[6001]: Memory access fault by GPU node-2 (Agent handle: "
      "0x55d1c3a4e0b0) on address 0x1000. Reason: Page not present or supervisor privilege.\n");
  ASSERT_EQ(log.events.size(), 5u);
  const HardwareEvent& a = log.events[0];
  EXPECT_EQ(EventKindName(a.kind), "gpu-amdgpu");
  EXPECT_EQ(a.gpu, "0000:03:00.0");
  EXPECT_EQ(a.pid, 5120);
  EXPECT_EQ(a.comm, "python3");
  EXPECT_EQ(a.address, 0x7f1234560000u);
  const HardwareEvent& b = log.events[1];
  EXPECT_EQ(b.gpu, "0000:83:00.0");
  EXPECT_EQ(b.pid, 6001);
  EXPECT_EQ(b.comm, "python3");
  EXPECT_EQ(b.address, 0x1000u);
  EXPECT_EQ(EventKindName(log.events[2].kind), "gpu-reset");
  EXPECT_EQ(EventKindName(log.events[3].kind), "gpu-ras");
  const HardwareEvent& r = log.events[4];
  EXPECT_EQ(EventKindName(r.kind), "gpu-memory-fault");
  EXPECT_EQ(r.gpu, "node-2");
  EXPECT_EQ(r.pid, 6001);
  EXPECT_EQ(r.comm, "python3");
  EXPECT_EQ(r.address, 0x1000u);
  EXPECT_EQ(r.detail, "Page not present or supervisor privilege.");
  EXPECT_FALSE(IsHardwareError(r));
}

// amdgpu prints a page fault over several lines; the status lines under it
// (WALKER_ERROR, PERMISSION_FAULTS, MI300's die and XCD) describe that fault
// and point at the process, never at the hardware. Three driver
// generations: the process on the fault's line, on a " Process" line, and
// amdgpu-dkms's " for process ... )" line.
TEST(KernelLogLines, AmdgpuFaultStatusLinesBelongToTheirFault) {
  KernelLog log = Parse(
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 "
      "ring:0 vmid:8 pasid:32769, for process python3 pid 5120 thread python3 pid 5133)\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu:   in page starting at address "
      "0x00007f1234560000 from IH client 0x1b (UTCL2)\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00800932\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t Faulty UTCL2 client ID: CPC (0x9)\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t MORE_FAULTS: 0x0\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t WALKER_ERROR: 0x0\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t PERMISSION_FAULTS: 0x3\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t MAPPING_ERROR: 0x0\n"
      "2026-10-14T03:12:00+0000 mi-01 kernel: amdgpu 0000:03:00.0: amdgpu: \t RW: 0x0\n"
      // amdgpu-dkms: the process on a line of its own, " for process ... )".
      "2026-10-14T04:00:00+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:153 "
      "vmid:9 pasid:32776,\n"
      "2026-10-14T04:00:00+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu:  for process infer pid 7001 thread infer "
      "pid 7007)\n"
      "2026-10-14T04:00:00+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu:   in page starting at address "
      "0x0000000000002000 from IH client 0x1b (UTCL2)\n"
      // MI300: the die and XCD of the fault.
      "2026-10-14T04:00:00+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu: cookie node_id 2 fault from die AID0.XCD1\n"
      "2026-10-14T04:00:00+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu: \t WALKER_ERROR: 0x0\n"
      // Status lines whose fault the log does not hold: no event either.
      "2026-10-14T05:00:00+0000 mi-03 kernel: amdgpu 0000:03:00.0: amdgpu: \t PERMISSION_FAULTS: 0x3\n"
      "2026-10-14T05:00:00+0000 mi-03 kernel: amdgpu 0000:03:00.0: amdgpu: \t MAPPING_ERROR: 0x1\n");
  ASSERT_EQ(log.events.size(), 2u);
  const HardwareEvent& a = log.events[0];
  EXPECT_EQ(EventKindName(a.kind), "gpu-amdgpu");
  EXPECT_EQ(a.detail, "page fault");
  EXPECT_EQ(a.pid, 5120);
  EXPECT_EQ(a.address, 0x7f1234560000u);
  const HardwareEvent& b = log.events[1];
  EXPECT_EQ(b.gpu, "0000:c1:00.0");
  EXPECT_EQ(b.pid, 7001);
  EXPECT_EQ(b.comm, "infer");
  EXPECT_EQ(b.address, 0x2000u);
  for (const auto& e : log.events) EXPECT_FALSE(IsHardwareError(e)) << e.line;
}

// What amdgpu reports as the GPU's own errors, and what it only says.
TEST(KernelLogLines, AmdgpuErrorsByCatalogue) {
  KernelLog log = Parse(
      "2026-10-14T04:00:09+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: 1 uncorrectable hardware errors "
      "detected in umc block\n"
      "2026-10-14T04:00:10+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: 3 correctable hardware errors detected in "
      "total in gfx block\n"
      "2026-10-14T04:00:11+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: 2 bad pages retired after ECC errors\n"
      "2026-10-14T04:00:12+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: GPU reset begin!\n"
      // Not errors: start-up, RAS's own start, a hung kernel's ring timeout.
      "2026-10-14T00:00:01+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: RAS INFO: ras initialized successfully, "
      "hardware ability[0x7fff] ras_mask[0x7fff]\n"
      "2026-10-14T00:00:01+0000 mi-01 kernel: amdgpu 0000:83:00.0: amdgpu: SMU is initialized successfully!\n"
      "2026-10-14T04:10:00+0000 mi-01 kernel: [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, "
      "signaled seq=2211, emitted seq=2213\n");
  ASSERT_EQ(log.events.size(), 4u);
  EXPECT_EQ(EventKindName(log.events[0].kind), "gpu-ras");
  EXPECT_EQ(EventKindName(log.events[1].kind), "gpu-ras");
  EXPECT_EQ(EventKindName(log.events[2].kind), "gpu-ras");
  EXPECT_EQ(EventKindName(log.events[3].kind), "gpu-reset");
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(IsHardwareError(log.events[i])) << log.events[i].line;
}

// The mce and EDAC drivers print lines at every boot: not machine errors.
TEST(KernelLogLines, BootLinesAreNotMachineErrors) {
  KernelLog log = Parse(
      "2026-10-14T00:00:01+0000 h kernel: mce: CPU0: Thermal monitoring enabled (TM1)\n"
      "2026-10-14T00:00:01+0000 h kernel: mce: CPU supports 32 MCE banks\n"
      "2026-10-14T00:00:02+0000 h kernel: EDAC MC: Ver: 3.0.0\n"
      "2026-10-14T00:00:02+0000 h kernel: EDAC MC0: Giving out device to module skx_edac controller Skylake "
      "Socket#0 IMC#0: DEV 0000:3a:0a.0 (INTERRUPT)\n"
      "2026-10-14T00:00:03+0000 h kernel: EDAC skx: ECC is enabled on imc 0\n");
  EXPECT_EQ(log.events.size(), 0u);
  // One crash on the host: no machine evidence from its boot.
  CrashFacts c;
  c.host = "h";
  c.time = 1791947520;
  HardwareVerdicts v = JudgeHardware({c}, log.events, 1);
  for (const auto& h : v.hosts)
    for (const auto& e : h.evidence) EXPECT_FALSE(std::holds_alternative<verdict::MachineErrors>(e.fact)) << EvidenceWords(e.fact);
}

TEST(KernelLogLines, OrdinaryLinesAreNotEvents) {
  KernelLog log = Parse(
      "2026-10-14T03:12:00+0000 h kernel: eth0: Link is Up - 100Gbps/Full\n"
      "2026-10-14T03:12:00+0000 h kernel: amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!\n"
      "2026-10-14T03:12:00+0000 h kernel:  Process python3 pid 1 thread python3 pid 1\n"  // no fault before it
      "2026-10-14T03:12:00+0000 h systemd[1]: Started Session 4 of user root.\n");
  EXPECT_EQ(log.events.size(), 0u);
  EXPECT_EQ(log.lines, 4u);
}

TEST(KernelLogLines, CutAndHostileFieldsAreLeftEmpty) {
  KernelLog log = Parse(
      "x[]: segfault at zz ip sp error in [ likely on CPU \n"
      "traps: [99999999999] general protection fault ip:ffffffffffffffffff\n"
      "NVRM: Xid (PCI:): 999999999999, pid=, name=\n"
      "amdgpu : page fault (for process  pid 0 thread  pid 0)\n"
      "Memory failure: 0xfffffffffffffffff\n"
      "Memory access fault by GPU\n");
  ASSERT_EQ(log.events.size(), 6u);
  EXPECT_FALSE(log.events[0].pid);
  EXPECT_FALSE(log.events[0].address);
  EXPECT_FALSE(log.events[0].cpu);
  EXPECT_FALSE(log.events[1].pid);
  EXPECT_FALSE(log.events[1].address);
  EXPECT_FALSE(log.events[2].xid);
  EXPECT_FALSE(log.events[2].pid);
  EXPECT_EQ(log.events[2].gpu, "");
  EXPECT_FALSE(log.events[3].pid);
  EXPECT_FALSE(log.events[4].address);
  EXPECT_EQ(EventKindName(log.events[5].kind), "gpu-memory-fault");
  EXPECT_FALSE(log.events[5].address);
}

// A line joins the crash of its host and pid within 10 s (a GPU line with
// the pid from 60 s before); a GPU line without a pid joins its host's
// crash within 10 s; nothing else joins.
TEST(KernelLogJoin, ByHostPidAndTimeOnly) {
  KernelLog log = Parse(
      "2026-10-14T03:12:00+0000 h1 kernel: app[100]: segfault at 0 ip 0000000000401000 sp 00007ffc00000000 error 4 "
      "in app[400000+1000] likely on CPU 5 (core 5, socket 0)\n"
      "2026-10-14T03:12:30+0000 h1 kernel: app[100]: segfault at 0 ip 0000000000401000 sp 00007ffc00000000 error 4 "
      "in app[400000+1000] likely on CPU 6 (core 6, socket 0)\n"                                  // 30 s after
      "2026-10-14T03:12:00+0000 h1 kernel: app[101]: segfault at 0 ip 0 sp 0 error 4 likely on CPU 7 (core 7, socket 0)\n"
      "2026-10-14T03:12:00+0000 h2 kernel: app[100]: segfault at 0 ip 0 sp 0 error 4 likely on CPU 8 (core 8, socket 0)\n"
      "2026-10-14T03:11:55+0000 h1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      "2026-10-14T03:11:30+0000 h1 kernel: NVRM: Xid (PCI:0000:5e:00): 79, GPU has fallen off the bus.\n"  // 30 s before
      "2026-10-14T03:11:10+0000 h1 kernel: NVRM: Xid (PCI:0000:86:00): 48, pid=100, name=app, DBE.\n");  // 50 s before
  ASSERT_EQ(log.events.size(), 7u);
  CrashFacts crash;
  crash.host = "h1";
  crash.time = log.events[0].time;
  crash.pid = 100;
  crash.cluster = 0;
  HardwareVerdicts v = JudgeHardware({crash}, log.events, 1);
  EXPECT_EQ(v.joined_lines, 3u);
  ASSERT_EQ(v.clusters.size(), 1u);
  EXPECT_EQ(v.clusters[0].cpus, (std::map<std::string, uint64_t>{{"h1 CPU 5", 1}}));
  EXPECT_EQ(v.clusters[0].gpus, (std::map<std::pair<std::string, std::string>, uint64_t>{{{"h1", "0000:3b:00"}, 1},
                                                                                        {{"h1", "0000:86:00"}, 1}}));
  EXPECT_EQ(v.clusters[0].cores, 1u);
  // A crash without a pid joins only its host's GPU lines without one.
  crash.pid.reset();
  EXPECT_EQ(JudgeHardware({crash}, log.events, 1).joined_lines, 1u);
}

// A program whose file name forges "likely on CPU 63" six times, and one
// routine machine-check line: the host is not called bad hardware, and no
// CPU 63 is counted on a host that has 4.
TEST(KernelLogJoin, AForgedCpuDoesNotDrainAHost) {
  std::string text = "2026-10-14T00:00:01+0000 h1 kernel: smp: Brought up 1 node, 4 CPUs\n"
                     "2026-10-14T00:00:02+0000 h1 kernel: mce: [Hardware Error]: Machine check events logged\n";
  std::vector<CrashFacts> crashes;
  for (int i = 0; i < 6; ++i) {
    std::string t = "2026-10-14T0" + std::to_string(i + 1) + ":00:00+0000";
    text += t + " h1 kernel: x[" + std::to_string(100 + i) +
            "]: segfault at 0 ip 0000000000401000 sp 00007ffc00000000 error 4 in x likely on CPU 63 (core 31, socket 1)"
            "[400000+1000]\n";
    text += t + " h1 kernel: x[" + std::to_string(200 + i) +
            "]: segfault at 0 ip 0000000000401000 sp 00007ffc00000000 error 4 in x[400000+1000] likely on CPU 99 "
            "(core 1, socket 0)\n";  // a CPU the host does not have
  }
  KernelLog log = Parse(text);
  for (const auto& e : log.events) {
    if (e.kind != EventKind::kSegfault) continue;
    CrashFacts c;
    c.host = "h1";
    c.time = e.time;
    c.pid = e.pid;
    crashes.push_back(c);
  }
  ASSERT_EQ(crashes.size(), 12u);
  HardwareVerdicts v = JudgeHardware(crashes, log.events, 1);
  for (const auto& h : v.hosts) {
    SCOPED_TRACE(h.host);
    EXPECT_FALSE(h.suspect);
    EXPECT_EQ(h.cpus.count(63), 0u);
    EXPECT_EQ(h.cpus.count(99), 0u);
    for (const auto& e : h.evidence) EXPECT_FALSE(std::holds_alternative<verdict::CrashLinesOnOneCpu>(e.fact)) << EvidenceWords(e.fact);
  }
}

// A CI VM: three crashes in three clusters within half an hour of boot
// score 4, but crashes alone on one afternoon are chance: no verdict. The
// same evidence over 2 days and 6 crashes, or with a machine check in the
// host's log, is one.
TEST(HostVerdicts, CrashesAloneNeedMinimumSupport) {
  auto crashes_on = [](int n, int days) {
    std::vector<CrashFacts> out;
    for (int i = 0; i < n; ++i) {
      CrashFacts c;
      c.host = "ci-vm-7";
      c.time = 1791947520 + (i % days) * 86400 + i * 60;
      c.uptime = 600 + i * 60;
      c.cluster = static_cast<size_t>(i);
      out.push_back(c);
    }
    return out;
  };
  HardwareVerdicts ci = JudgeHardware(crashes_on(3, 1), {}, 3);
  ASSERT_EQ(ci.hosts.size(), 1u);
  EXPECT_GE(ci.hosts[0].score, kSuspectScore);
  EXPECT_FALSE(ci.hosts[0].suspect);
  const auto* too_few = std::get_if<verdict::TooFewCrashes>(&ci.hosts[0].evidence.back().fact);
  ASSERT_NE(too_few, nullptr);
  EXPECT_EQ(too_few->crashes, 3u);
  const auto* own = FactOf<verdict::OwnClusters>(ci.hosts[0]);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->clusters, 3u);
  EXPECT_EQ(own->own, 3u);
  const auto* fresh = FactOf<verdict::FreshFromBoot>(ci.hosts[0]);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->fresh, 3u);
  EXPECT_EQ(fresh->with_uptime, 3u);
  EXPECT_EQ(VerdictWords(ci.hosts[0]), "");
  EXPECT_EQ(EvidenceWords(ci.hosts[0].evidence.back().fact),
            "no verdict: 3 crashes and no error record of the machine's own; a verdict on crashes alone needs 5 on 2 "
            "days or more");

  HardwareVerdicts spread = JudgeHardware(crashes_on(6, 2), {}, 6);
  ASSERT_EQ(spread.hosts.size(), 1u);
  EXPECT_TRUE(spread.hosts[0].suspect);
  EXPECT_EQ(VerdictWords(spread.hosts[0]), "ci-vm-7: 6 crashes in 6 clusters, 6 unrelated — suspect hardware; drain it");

  KernelLog log = Parse("2026-10-14T03:00:00+0000 ci-vm-7 kernel: mce: [Hardware Error]: CPU 1: Machine Check: 0 "
                        "Bank 4: b200000000070f0f\n");
  HardwareVerdicts with_record = JudgeHardware(crashes_on(3, 1), log.events, 3);
  ASSERT_EQ(with_record.hosts.size(), 1u);
  EXPECT_TRUE(with_record.hosts[0].suspect);
  const auto* mce = FactOf<verdict::MachineErrors>(with_record.hosts[0]);
  ASSERT_NE(mce, nullptr);
  EXPECT_EQ(mce->count, 1u);
  ASSERT_EQ(mce->first.size(), 1u);
  EXPECT_EQ(mce->first[0].bank, 4);
  EXPECT_EQ(mce->first[0].cpu, 1);
  EXPECT_EQ(EvidenceWords(*mce), "1 machine error in the kernel log: MCE bank 4 on CPU 1 on 2026-10-14");
}

// Hangs begun on one host: the odd rank of six hung jobs over two days ran
// there, and their other ranks elsewhere. The host's verdict rests on the
// hangs, which are no crashes of its; a host that began one hang, or ran
// a hang's waiting ranks, has no evidence.
TEST(HostVerdicts, HangsBegunOnOneHostAreHangsNotCrashes) {
  std::vector<CrashFacts> facts;
  for (int i = 0; i < 6; ++i) {
    CrashFacts root;
    root.host = "gpu-a-03";
    root.time = 1791947520 + (i % 2) * 86400 + i * 600;
    root.counted = false;
    root.hang_root = true;
    facts.push_back(root);
    CrashFacts waiting = root;
    waiting.host = "gpu-a-04";
    waiting.hang_root = false;
    facts.push_back(waiting);
  }
  CrashFacts once;
  once.host = "gpu-b-01";
  once.time = 1791947520;
  once.counted = false;
  once.hang_root = true;
  facts.push_back(once);
  HardwareVerdicts v = JudgeHardware(facts, {}, 1);
  ASSERT_EQ(v.hosts.size(), 1u);
  EXPECT_EQ(v.hosts[0].host, "gpu-a-03");
  EXPECT_EQ(v.hosts[0].crashes, 0u);
  EXPECT_TRUE(v.hosts[0].suspect);
  const auto* hangs = FactOf<verdict::HangRoots>(v.hosts[0]);
  ASSERT_NE(hangs, nullptr);
  EXPECT_EQ(hangs->hangs, 6u);
  EXPECT_EQ(hangs->days, 2u);
  EXPECT_EQ(VerdictWords(v.hosts[0]), "gpu-a-03: 6 hangs begun here — suspect hardware; drain it");
}

// A GPU's own errors before a host's aborts: Xid 79 60 s before each of 13
// runtime aborts (syndrome abort, not gpu-fault), over three days, on a host
// without an inventory. The cluster says "same GPU repeatedly" and the host
// has the verdict naming the GPU (it once had score 2 and none).
TEST(HostVerdicts, AGpuFallenOffTheBusBeforeItsAbortsIsNamedWithItsHost) {
  std::string text;
  std::vector<CrashFacts> crashes;
  const int64_t start = 1791947520;  // 2026-10-14T03:12:00Z
  for (int i = 0; i < 13; ++i) {
    int64_t t = start + (i % 3) * 86400 + i * 600;
    std::string pid = std::to_string(4000 + i);
    text += FormatIso8601(t - 30).substr(0, 19) + "+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=" + pid +
            ", name=python3, GPU has fallen off the bus.\n";
    CrashFacts c;
    c.host = "gpu-07";
    c.time = t;
    c.pid = 4000 + i;
    crashes.push_back(c);
  }
  // Another host's crashes of the same cluster, without GPU lines.
  std::array<std::string, 5> others;  // the facts view their hosts' names
  for (int i = 0; i < 5; ++i) {
    CrashFacts c;
    others[i] = "gpu-0" + std::to_string(i);
    c.host = others[i];
    c.time = start + i * 3600;
    crashes.push_back(c);
  }
  KernelLog log = Parse(text);
  ASSERT_EQ(log.events.size(), 13u);
  HardwareVerdicts v = JudgeHardware(crashes, log.events, 1);
  EXPECT_EQ(v.joined_lines, 13u);
  ASSERT_TRUE(v.clusters[0].reading);
  const auto* same = std::get_if<gpu_reading::SameGpu>(&*v.clusters[0].reading);
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->owner, "gpu-07");
  EXPECT_EQ(same->gpu, "0000:3b:00");
  EXPECT_EQ(same->crashes, 13u);
  EXPECT_EQ(same->cores, 13u);
  EXPECT_EQ(GpuWords(v.clusters[0]), "13 of 13 on GPU gpu-07 0000:3b:00: same GPU repeatedly — suspect the GPU");
  ASSERT_FALSE(v.hosts.empty());
  EXPECT_EQ(v.hosts[0].host, "gpu-07");
  EXPECT_TRUE(v.hosts[0].suspect);
  const auto* errors = FactOf<verdict::GpuErrors>(v.hosts[0]);
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->gpu, "0000:3b:00");
  EXPECT_EQ(errors->lines, (std::map<verdict::GpuErrorKind, uint64_t>{{{79}, 13}}));
  EXPECT_EQ(errors->followed, 13u);
  EXPECT_EQ(VerdictWords(v.hosts[0]).rfind("gpu-07: GPU 0000:3b:00 Xid 79 ×13 before 13 crashes", 0), 0u)
      << VerdictWords(v.hosts[0]);
  for (size_t i = 1; i < v.hosts.size(); ++i) EXPECT_FALSE(v.hosts[i].suspect) << v.hosts[i].host;
}

// An AMD GPU whose page faults (no error of its own: the catalogue says a
// page fault is the program's) precede 9 ROCr aborts over 3 days, while
// the application's other crashes fault elsewhere: one GPU again and again
// is the cluster's reading, and its host's verdict.
TEST(HostVerdicts, OneAmdGpuAgainAndAgainIsItsHostsVerdict) {
  std::string text;
  std::vector<CrashFacts> crashes;
  const int64_t start = 1791947520;
  for (int i = 0; i < 9; ++i) {
    int64_t t = start + (i % 3) * 86400 + i * 900;
    std::string pid = std::to_string(7000 + i);
    text += FormatIso8601(t - 1).substr(0, 19) + "+0000 mi-02 kernel: amdgpu 0000:c1:00.0: amdgpu: [gfxhub0] retry "
            "page fault (src_id:0 ring:0 vmid:8 pasid:32769, for process infer pid " + pid + " thread infer pid " +
            pid + ")\n";
    CrashFacts c;
    c.host = "mi-02";
    c.time = t;
    c.pid = 7000 + i;
    crashes.push_back(c);
  }
  KernelLog log = Parse(text);
  ASSERT_EQ(log.events.size(), 9u);
  for (const auto& e : log.events) EXPECT_FALSE(IsHardwareError(e));
  HardwareVerdicts v = JudgeHardware(crashes, log.events, 1);
  ASSERT_TRUE(v.clusters[0].reading);
  const auto* same = std::get_if<gpu_reading::SameGpu>(&*v.clusters[0].reading);
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->owner, "mi-02");
  EXPECT_EQ(same->gpu, "0000:c1:00.0");
  EXPECT_EQ(same->crashes, 9u);
  ASSERT_EQ(v.hosts.size(), 1u);
  EXPECT_TRUE(v.hosts[0].suspect);
  const auto* repeated = FactOf<verdict::GpuRepeatedly>(v.hosts[0]);
  ASSERT_NE(repeated, nullptr);
  EXPECT_EQ(repeated->cluster, 0u);
  EXPECT_EQ(repeated->gpu, "0000:c1:00.0");
  EXPECT_EQ(repeated->crashes, 9u);
  EXPECT_EQ(repeated->cores, 9u);
  EXPECT_NE(VerdictWords(v.hosts[0]).find("GPU 0000:c1:00.0 under 9 crashes of cluster c1"), std::string::npos)
      << VerdictWords(v.hosts[0]);
}

}  // namespace
}  // namespace coroner
