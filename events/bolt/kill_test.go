package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// killChildDir, when set, makes TestKill9KeepsEveryStream the child: it
// appends to the log in that directory until killed, printing each
// acknowledged append.
const killChildDir = "BOLT_KILL_CHILD_DIR"

// A kill -9 while streams are created and appended to (new streams write
// their name and number, existing ones only revisions) loses no
// acknowledged append: after the reopen every stream reads back each
// acknowledged event at its revision, and expectations see the count.
func TestKill9KeepsEveryStream(t *testing.T) {
	if dir := os.Getenv(killChildDir); dir != "" {
		killChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKill9KeepsEveryStream$")
	cmd.Env = append(os.Environ(), killChildDir+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int{} // stream -> revisions acknowledged
	lines := bufio.NewScanner(out)
	for n := 0; n < 600 && lines.Scan(); n++ {
		stream, rev, ok := strings.Cut(lines.Text(), " ")
		r, err := strconv.Atoi(rev)
		if !ok || err != nil {
			t.Fatalf("child said %q", lines.Text())
		}
		acked[stream] = max(acked[stream], r+1)
	}
	_ = cmd.Process.Kill() // SIGKILL, mid-append
	_ = cmd.Wait()
	if len(acked) < 50 {
		t.Fatalf("the child acknowledged appends to %d streams", len(acked))
	}
	ctx := context.Background()
	s := openT(t, filepath.Join(dir, "events.db"))
	for stream, n := range acked {
		recs, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil || len(recs) < n {
			t.Fatalf("%s: %d events after the kill (%v), %d acknowledged", stream, len(recs), err, n)
		}
		for i, r := range recs {
			if r.Revision != uint64(i) || r.Stream != stream || r.Type != fmt.Sprintf("kill.%d", i) {
				t.Fatalf("%s revision %d: %+v", stream, i, r)
			}
		}
		res, err := s.Append(ctx, stream, events.AfterVersion(uint64(len(recs))), ev("kill.after", 0))
		if err != nil || res.Revision != uint64(len(recs)) {
			t.Fatalf("%s: append after %d events: %+v, %v", stream, len(recs), res, err)
		}
	}
}

// killChild appends, from 8 writers, one event at a time to streams it
// creates and to streams it created before, until it is killed.
func killChild(dir string) {
	s, err := bolt.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	acks := make(chan string, 64)
	for w := range 8 {
		go func() {
			revs := map[string]int{}
			for i := 0; ; i++ {
				stream := fmt.Sprintf("delivery-%d-%d", w, i)
				if i%3 != 0 {
					stream = fmt.Sprintf("delivery-%d-%d", w, i/2) // one that exists
				}
				rev := revs[stream]
				p := events.Proposed{ID: fmt.Sprintf("%d-%d-%d", w, i, time.Now().UnixNano()), Type: fmt.Sprintf("kill.%d", rev)}
				if _, err := s.Append(context.Background(), stream, events.AfterVersion(uint64(rev)), p); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				revs[stream] = rev + 1
				acks <- fmt.Sprintf("%s %d", stream, rev)
			}
		}()
	}
	for a := range acks {
		fmt.Println(a)
	}
}
