package node

import (
	"crypto/rand"
	"fmt"
	"os"
)

// processID names this process for the operator looking at who holds a
// claim or lease: host and pid, plus a random suffix because two nodes in
// one test process (or containers with equal pids) must differ.
func processID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}
