package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUUse is what a measured window cost in CPU: the whole machine's busy
// time (every process and the kernel: the platform, this load process,
// Postgres, softirqs), the platform's and this process's. A rate alone
// cannot say whether a scenario is short of its goal because the platform
// does too much per request or because the machine's cores were already
// full; CPU per operation, set against the baseline's, says which, and
// what rate the cores could give at that cost (see Row).
type CPUUse struct {
	Machine time.Duration // busy time of all cores, from /proc/stat
	Idle    time.Duration // idle and I/O wait of all cores
	// Steal is time the hypervisor gave the cores to other machines while
	// this one had work: neither this machine's work nor idle, so it is in
	// neither (on a shared host it made the CPU per operation of two runs
	// minutes apart differ by a third when counted as busy).
	Steal    time.Duration
	Platform time.Duration // the platform process (0: -platform-pid not given)
	Load     time.Duration // this process
	Cores    int
}

// Busy is the share of all cores' time that was busy in the window.
func (u CPUUse) Busy() float64 { return u.share(u.Machine) }

// StealShare is the share of all cores' time the hypervisor took.
func (u CPUUse) StealShare() float64 { return u.share(u.Steal) }

func (u CPUUse) share(d time.Duration) float64 {
	if all := u.Machine + u.Idle + u.Steal; all > 0 {
		return float64(d) / float64(all)
	}
	return 0
}

// cpuSample is the cumulative counters CPUUse is the difference of.
type cpuSample struct {
	busy, idle, steal, platform, load time.Duration
	cores                             int
}

func (s cpuSample) since(from cpuSample) CPUUse {
	return CPUUse{Machine: s.busy - from.busy, Idle: s.idle - from.idle, Steal: s.steal - from.steal,
		Platform: s.platform - from.platform, Load: s.load - from.load, Cores: s.cores}
}

// sampleCPU reads the counters now; ok is false where /proc does not tell
// (not Linux), and the rows then carry no CPU columns.
func (b *Bench) sampleCPU() (cpuSample, bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}, false
	}
	busy, idle, steal, cores, err := parseProcStat(string(raw))
	if err != nil {
		return cpuSample{}, false
	}
	s := cpuSample{busy: busy, idle: idle, steal: steal, cores: cores}
	if self, err := os.ReadFile("/proc/self/stat"); err == nil {
		s.load, _ = parseStatCPU(string(self))
	}
	if b.Opt.PlatformPID > 0 {
		s.platform, _ = b.platformCPU()
	}
	return s, true
}

// cpuProbe is the sampler a Phase takes, nil where /proc does not tell.
func (b *Bench) cpuProbe() func() cpuSample {
	if _, ok := b.sampleCPU(); !ok {
		return nil
	}
	return func() cpuSample { s, _ := b.sampleCPU(); return s }
}

// parseProcStat reads the machine's busy, idle and stolen time (all
// cores) from /proc/stat's "cpu" line (user nice system idle iowait irq
// softirq steal, in clock ticks; guest time is already inside user) and
// counts the "cpuN" lines.
func parseProcStat(text string) (busy, idle, steal time.Duration, cores int, err error) {
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cores++
			continue
		}
		if len(f) < 9 {
			return 0, 0, 0, 0, fmt.Errorf("/proc/stat: %d fields on the cpu line", len(f))
		}
		var v [8]int64
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return 0, 0, 0, 0, fmt.Errorf("/proc/stat: %w", err)
			}
		}
		busy = time.Duration(v[0]+v[1]+v[2]+v[5]+v[6]) * clockTick
		idle = time.Duration(v[3]+v[4]) * clockTick
		steal = time.Duration(v[7]) * clockTick
		found = true
	}
	if !found || cores == 0 {
		return 0, 0, 0, 0, fmt.Errorf("/proc/stat: no cpu lines")
	}
	return busy, idle, steal, cores, nil
}
