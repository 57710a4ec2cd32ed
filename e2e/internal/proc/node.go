package proc

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Node is one platform process of a cluster; it can be SIGKILLed and
// restarted on the same address and data directory.
type Node struct {
	Idx     int
	bin     []string // the program and its arguments
	addr    string
	Base    string
	dir     string
	env     []string
	LogPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	logf    *os.File
	done    chan struct{}
	killing bool
	starts  int
	// died lists exits the harness did not cause (crashes), with their time.
	died []string
	// drained takes the node out of the client's rotation, as a load
	// balancer does with a terminating instance.
	Drained atomic.Bool
}

// NewNode is node i of a run: it runs bin with env on a free loopback
// address and a data directory of its own, logging to node<i>.log in logs.
func NewNode(t testing.TB, i int, bin, env []string, logs string) *Node {
	addr := FreeAddr(t)
	return &Node{Idx: i, bin: bin, addr: addr, Base: "http://" + addr, dir: t.TempDir(), env: env,
		LogPath: filepath.Join(logs, fmt.Sprintf("node%d.log", i))}
}

// Start launches the process; it does not wait for readiness.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d already running", n.Idx)
	}
	f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(f, "\n==== harness: start #%d of node %d at %s ====\n", n.starts, n.Idx, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.bin[0], n.bin[1:]...)
	cmd.Env = append(os.Environ(), "PLATFORM_ADDR="+n.addr, "PLATFORM_DATA_DIR="+n.dir, "PLATFORM_ESDB_URL=")
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	n.cmd, n.logf, n.done, n.killing = cmd, f, done, false
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		if !n.killing {
			n.died = append(n.died, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
			n.cmd = nil
		}
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// release takes the running process out of the node, marking its exit as
// the harness's doing: its command (nil when none runs), the channel closed
// when it has exited, and its log file.
func (n *Node) release() (*exec.Cmd, chan struct{}, *os.File) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cmd, done, f := n.cmd, n.done, n.logf
	n.killing = true
	n.cmd = nil
	return cmd, done, f
}

// Kill SIGKILLs the process (no shutdown code runs) and waits for it.
func (n *Node) Kill() {
	cmd, done, f := n.release()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	fmt.Fprintf(f, "\n==== harness: SIGKILL of node %d at %s ====\n", n.Idx, time.Now().Format(time.RFC3339Nano))
	f.Close()
}

// Stop sends SIGINT and waits for the process to exit (the platform drains
// its HTTP server and stops its followers), SIGKILLing it after timeout; it
// reports whether the process stopped by itself in time.
func (n *Node) Stop(timeout time.Duration) bool {
	cmd, done, f := n.release()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(os.Interrupt)
	stopped := true
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		stopped = false
	}
	fmt.Fprintf(f, "\n==== harness: node %d stopped (SIGINT) at %s ====\n", n.Idx, time.Now().Format(time.RFC3339Nano))
	f.Close()
	return stopped
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// WaitReady polls /readyz until it answers 200, the process dies, or timeout.
func (n *Node) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		if !n.Running() {
			return fmt.Errorf("node %d exited before it was ready", n.Idx)
		}
		res, err := client.Get(n.Base + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", res.StatusCode, b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %d not ready after %v (last /readyz: %s)", n.Idx, timeout, last)
}

// Exits lists the exits the harness did not cause (crashes), with their time.
func (n *Node) Exits() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.died...)
}

// LogTail returns the end of the node's log (all its runs), for failures.
func (n *Node) LogTail(max int) string {
	b, err := os.ReadFile(n.LogPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
